// A cluster's life, pure: the record's rules (hold, deploy end, supervision, handover, down), the machine ids
// preflight reads, and what `down` decides from its look at the cluster.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  deployEnded,
  handedOver,
  hold,
  newRecord,
  recordRevision,
  released,
  supervisionChanged,
} from '../../src/workflows/cluster-record.js';
import type { HoldInput, RevisionToRecord } from '../../src/shared/cluster-api.js';
import { machineIdsOf } from '../../src/preflight/machine-ids.js';
import { parseHostFacts } from '../../src/parsers/agreement-facts.js';
import { whatToDo } from '../../src/workflows/down.js';
import type { ClusterLook } from '../../src/activities/cluster-look.js';

const idA = 'a'.repeat(32);
const idB = 'b'.repeat(32);
const holdInput = (workflowId: string): HoldInput => ({
  hosts: [
    { name: 'spark1', address: '10.0.0.1', machineId: idA },
    { name: 'spark2', address: '10.0.0.2', machineId: idB },
  ],
  spec: { cluster: 'qwen' },
  model: 'Qwen/Qwen3',
  containers: { spark1: ['ray-qwen'], spark2: ['ray-qwen'] },
  deploy: { workflowId, trigger: 'cli', startedAtMs: 1000 },
});

describe('cluster record', () => {
  it('holds the hosts from the first deploy, serves once it succeeds, and keeps the hosts when a deploy fails', () => {
    const r = newRecord('qwen', 0);
    hold(r, holdInput('liftoff-qwen'), 1000);
    assert.equal(r.state, 'deploying');
    assert.deepEqual(
      r.hosts.map((h) => h.machineId),
      [idA, idB],
    );
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'succeeded', endpoint: 'http://x/v1' }, 5000);
    assert.deepEqual(
      [r.state, r.endpoint, r.servingSinceMs, r.lastDeploy?.outcome],
      ['serving', 'http://x/v1', 5000, 'succeeded'],
    );
    // A second deploy of the same tenure: held since the first, failed when it fails, hosts kept.
    hold(r, holdInput('liftoff-qwen'), 9000);
    assert.equal(r.heldSinceMs, 1000);
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'failed', error: 'LoadTimeout' }, 10_000);
    assert.deepEqual([r.state, r.reason, r.hosts.length], ['failed', 'LoadTimeout', 2]);
    // An end that is not the running deploy's (a late signal) changes nothing.
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'succeeded' }, 11_000);
    assert.equal(r.state, 'failed');
  });

  it('follows the supervisor, and ends handed over or down with the reason', () => {
    const r = newRecord('qwen', 0);
    hold(r, holdInput('liftoff-qwen'), 1000);
    supervisionChanged(r, { state: 'lost', reason: 'health refused', nextBackoffMs: 60_000 });
    assert.deepEqual([r.state, r.reason, r.nextBackoffMs], ['lost', 'health refused', 60_000]);
    supervisionChanged(r, { state: 'serving', servingSinceMs: 7000, nextBackoffMs: 0 });
    assert.deepEqual([r.state, r.reason, r.servingSinceMs], ['serving', undefined, 7000]);
    const handed = structuredClone(r);
    handedOver(handed, 'glm', 'liftoff-glm (trigger cli)', 9000);
    assert.equal(handed.state, 'handed over');
    assert.equal(handed.reason, 'handed over to glm by liftoff-glm (trigger cli)');
    released(r, 'liftoff-down:qwen', 9000);
    assert.deepEqual([r.state, r.endedAtMs], ['down', 9000]);
  });

  it('records a run’s revision once: the same recording retried (its worker died) gets the number it got', () => {
    const revision = (launchId: string, bad?: string): RevisionToRecord => ({
      atMs: 0,
      launchId,
      trigger: 'cli',
      spec: { cluster: 'qwen' },
      model: 'Qwen/Qwen3',
      image: 'vllm:1',
      hosts: [],
      argv: [],
      envNames: [],
      ...(bad === undefined ? { evidence: { loadSeconds: 1, tokensPerSecond: 1 } } : { bad }),
    });
    const r = newRecord('qwen', 0);
    assert.equal(recordRevision(r, revision('liftoff-qwen:run1'), 1000), 1);
    assert.equal(recordRevision(r, revision('liftoff-qwen:run1'), 1100), 1, 'the good one, retried');
    assert.equal(recordRevision(r, revision('liftoff-qwen:run2', 'load failed'), 2000), 2);
    assert.equal(
      recordRevision(r, revision('liftoff-qwen:run2', 'load failed'), 2100),
      2,
      'the bad one, retried',
    );
    assert.equal(recordRevision(r, { ...revision('liftoff-qwen:run3'), restores: 1 }, 3000), 3);
    assert.equal(recordRevision(r, { ...revision('liftoff-qwen:run3'), restores: 1 }, 3100), 3);
    // A run whose good revision was recorded and whose record step failed after it is recorded bad besides.
    assert.equal(recordRevision(r, revision('liftoff-qwen:run3', 'supervision failed'), 3200), 4);
    assert.deepEqual(
      r.revisions?.map((v) => [v.number, v.status]),
      [
        [1, 'replaced'],
        [2, 'bad'],
        [3, 'serving'],
        [4, 'bad'],
      ],
    );
    assert.equal(r.revision, 3);
  });
});

describe('machine ids', () => {
  const facts = (host: string, line: string) => parseHostFacts(host, new Map([['machine', [line]]]), 0);

  it('reads 32 hex digits only', () => {
    assert.equal(facts('h', idA).machineId, idA);
    for (const bad of ['', 'A'.repeat(32), `${idA}0`, 'uninitialized', `${idA.slice(1)}\u0000`])
      assert.equal(facts('h', bad).machineId, undefined, JSON.stringify(bad));
  });

  it('warns of a host without one and of two hosts that are one machine, and lists the rest', () => {
    const ids = machineIdsOf([facts('spark1', idA), facts('spark2', ''), facts('spark3', idA)]);
    assert.deepEqual(ids.ids, { spark1: idA, spark3: idA });
    assert.equal(ids.warnings.length, 2);
    assert.match(ids.warnings[0] ?? '', /spark2 reports no machine id .*systemd-machine-id-setup/);
    assert.match(ids.warnings[1] ?? '', /spark1 and spark3 report the same machine id/);
  });
});

describe('down decides', () => {
  const look = (l: Partial<ClusterLook>): ClusterLook => ({
    deployRunning: false,
    superviseRunning: false,
    ...l,
  });
  const spec = { cluster: 'qwen' };

  it('takes down a cluster that holds hosts or runs, or whose last deploy came after its last down', () => {
    assert.deepEqual(whatToDo(look({ held: { record: newRecord('qwen', 0), spec } })), {
      kind: 'down',
      spec,
    });
    assert.deepEqual(whatToDo(look({ superviseRunning: true, lastDeploy: { spec, startedAtMs: 5 } })), {
      kind: 'down',
      spec,
    });
    // Deployed before clusters held hosts: no record, its last deploy's spec.
    assert.deepEqual(whatToDo(look({ lastDeploy: { spec, startedAtMs: 5 }, lastDownAtMs: 4 })), {
      kind: 'down',
      spec,
    });
  });

  it('has nothing to do for a cluster already down or handed over, or never deployed', () => {
    const ended = { ...newRecord('qwen', 0), state: 'down' as const, endedAtMs: 10 };
    assert.deepEqual(whatToDo(look({ lastRecord: ended, lastDeploy: { spec, startedAtMs: 5 } })), {
      kind: 'nothing',
      known: true,
    });
    assert.deepEqual(whatToDo(look({ lastDeploy: { spec, startedAtMs: 5 }, lastDownAtMs: 6 })), {
      kind: 'nothing',
      known: true,
    });
    assert.deepEqual(whatToDo(look({})), { kind: 'nothing', known: false });
  });
});
