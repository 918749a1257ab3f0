// `liftoff worker --metrics-targets FILE`: the worker's poll of the fleet, against a stand-in for Temporal's client
// (its visibility list and the cluster query): the file follows the records, is rewritten only when they change, is
// kept as it was when Temporal fails, and a cluster's spec is asked for once per deploy, not once per round.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { keepTargetsFile, metricsTargetsFileFrom } from '../../src/commands/metrics-targets-file.js';
import { UsageError } from '../../src/cli/run-command.js';
import type { ClusterRecord } from '../../src/shared/cluster-api.js';

const dir = mkdtempSync(join(tmpdir(), 'liftoff-targets-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Fleet {
  records: Partial<ClusterRecord>[];
  /** What a list call throws, when set (Temporal unreachable). */
  failure?: Error;
  specQueries: number;
}

/** The two calls fleetTargets makes of a client: the visibility list and, per cluster, its query. */
function fakeClient(fleet: Fleet): Client {
  const fake = {
    workflow: {
      list: () => {
        if (fleet.failure) throw fleet.failure;
        const runs = fleet.records.map((record) => ({
          memo: { record },
          workflowId: `cluster-${record.cluster}`,
          startTime: new Date(0),
        }));
        return {
          [Symbol.asyncIterator]: () => {
            const it = runs[Symbol.iterator]();
            return { next: () => Promise.resolve(it.next()) };
          },
        };
      },
      getHandle: () => ({
        query: () => {
          fleet.specQueries += 1;
          return Promise.resolve({
            spec: { hosts: [{ name: 'spark1', role: 'head', clusterIp: '10.0.0.1' }], companions: [] },
          });
        },
      }),
    },
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
  };
  return fake as unknown as Client;
}

const serving = (endpoint: string, state = 'serving'): Partial<ClusterRecord> => ({
  cluster: 'spark',
  state: state as ClusterRecord['state'],
  endpoint,
  hosts: [{ name: 'spark1', address: '192.168.1.11' } as ClusterRecord['hosts'][number]],
  lastDeploy: { workflowId: 'deploy-1' } as ClusterRecord['lastDeploy'],
});

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('keepTargetsFile', () => {
  it('follows the fleet, rewrites only on change, keeps the file when Temporal fails', async () => {
    const file = join(dir, 'targets.json');
    const fleet: Fleet = { records: [], specQueries: 0 };
    const warnings: string[] = [];
    const keeper = keepTargetsFile(fakeClient(fleet), file, {
      intervalMs: 20,
      warn: (l) => warnings.push(l),
    });
    const read = (): string => {
      try {
        return readFileSync(file, 'utf8');
      } catch {
        return '';
      }
    };
    try {
      await until('the empty file', () => read() === '[]\n');

      fleet.records = [serving('http://10.0.0.1:8000/v1')];
      await until('the serving endpoint', () => read().includes('10.0.0.1:8000'));
      assert.deepEqual(JSON.parse(read()), [
        { targets: ['10.0.0.1:8000'], labels: { cluster: 'spark', host: 'spark1' } },
      ]);
      const writtenAt = statSync(file).mtimeMs;
      const inode = statSync(file).ino;
      await new Promise((r) => setTimeout(r, 150));
      assert.equal(statSync(file).ino, inode, 'not rewritten while nothing changed');
      assert.equal(statSync(file).mtimeMs, writtenAt);
      assert.equal(fleet.specQueries, 1, 'the spec asked for once while the deploy is the same');

      // A relaunch keeps the endpoint in the file (lost, relaunching: `up` says it is down).
      fleet.records = [serving('http://10.0.0.1:8000/v1', 'relaunching')];
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(statSync(file).ino, inode, 'a relaunch on the same endpoint leaves the file as it was');

      fleet.failure = new Error('Temporal unreachable');
      await until('a warning', () => warnings.length > 0);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(warnings.length, 1, `said once: ${warnings.join(' | ')}`);
      assert.match(warnings[0]!, /not updated \(kept as it was\): Temporal unreachable/);
      assert.ok(read().includes('10.0.0.1:8000'), 'the last targets kept');

      fleet.failure = undefined;
      fleet.records = [serving('http://10.0.0.9:8000/v1')];
      await until('the moved endpoint', () => read().includes('10.0.0.9:8000'));
      assert.match(warnings.at(-1)!, /is current again/);

      unlinkSync(file);
      await until('the file written again after it was removed', () => read() !== '');

      fleet.records = [serving('http://10.0.0.9:8000/v1', 'down')];
      await until('no targets once down', () => read() === '[]\n');
    } finally {
      await keeper.stop();
    }
    const stoppedAt = statSync(file).mtimeMs;
    fleet.records = [serving('http://10.0.0.1:8000/v1')];
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(statSync(file).mtimeMs, stoppedAt, 'nothing written after stop');
  });
});

describe('metricsTargetsFileFrom', () => {
  it('takes the option, else the environment, as an absolute path whose folder exists', () => {
    assert.equal(metricsTargetsFileFrom(undefined, {}), undefined);
    assert.equal(metricsTargetsFileFrom(undefined, { LIFTOFF_METRICS_TARGETS_FILE: ' ' }), undefined);
    assert.equal(metricsTargetsFileFrom(join(dir, 'a.json'), {}), join(dir, 'a.json'));
    assert.equal(
      metricsTargetsFileFrom(undefined, { LIFTOFF_METRICS_TARGETS_FILE: join(dir, 'b.json') }),
      join(dir, 'b.json'),
    );
    assert.throws(() => metricsTargetsFileFrom(join(dir, 'missing', 'a.json'), {}), UsageError);
    mkdirSync(join(dir, 'folder'));
    assert.throws(() => metricsTargetsFileFrom(join(dir, 'folder'), {}), /a folder/);
  });
});
