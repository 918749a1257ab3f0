// `liftoff revisions --history FILE`: the revisions read offline from an export of a cluster's workflow, by the
// same rules the workflow applies. The events are built in the export's JSON shape (payloads base64 JSON), and
// read from a real export (test/histories/cluster-held.json).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readHistoryEvents } from '../../src/report/events.js';
import { NotAClusterHistoryError, revisionsFromHistory } from '../../src/report/revisions.js';
import type { RevisionToRecord } from '../../src/shared/cluster-api.js';

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const payloads = (...values: unknown[]) => ({
  payloads: values.map((v) => ({ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(v)) })),
});

let eventId = 0;
function event(key: string, attrs: Record<string, unknown>, atMs: number) {
  eventId += 1;
  return {
    eventId: String(eventId),
    eventTime: new Date(atMs).toISOString(),
    [`${key}EventAttributes`]: attrs,
  };
}

const update = (name: string, arg: unknown, atMs: number) =>
  event(
    'workflowExecutionUpdateAccepted',
    { acceptedRequest: { input: { name, args: payloads(arg) } } },
    atMs,
  );

let launches = 0;
function revision(image: string, imageId: string): RevisionToRecord {
  launches += 1;
  return {
    atMs: 0,
    launchId: `liftoff-c:run-${launches}`,
    trigger: 'cli',
    spec: { cluster: 'c', ray: { image } },
    model: 'm',
    image,
    hosts: [{ host: 'spark1', imageId }],
    argv: ['vllm', 'serve', 'm'],
    envNames: [],
    evidence: { loadSeconds: 1, tokensPerSecond: 2 },
  };
}

function history(events: unknown[]) {
  return readHistoryEvents({ events });
}

describe('revisions read from an exported cluster history', () => {
  it('applies recordRevision and markRevisionBad in order: numbers, replaced, bad', () => {
    const started = event(
      'workflowExecutionStarted',
      { workflowType: { name: 'cluster' }, input: payloads({ cluster: 'c' }) },
      1000,
    );
    const { cluster, revisions } = revisionsFromHistory(
      history([
        started,
        update('recordRevision', revision('img:1', 'sha256:aa'), 2000),
        update('recordRevision', { ...revision('img:2', 'sha256:bb'), bad: 'ServerFatal' }, 3000),
        update('recordRevision', { ...revision('img:1', 'sha256:aa'), restores: 1 }, 4000),
        update('markRevisionBad', { number: 3, reason: 'lost in its bake window' }, 5000),
      ]),
    );
    assert.equal(cluster, 'c');
    assert.deepEqual(
      revisions.map((r) => [r.number, r.status, r.restores, r.atMs]),
      [
        [1, 'replaced', undefined, 2000],
        [2, 'bad', undefined, 3000],
        [3, 'bad', 1, 4000],
      ],
    );
    assert.equal(revisions[1]?.badReason, 'ServerFatal');
  });

  it('starts from the revisions a new tenure carried, and takes the record the run ended with as final', () => {
    const carried = [{ ...revision('img:1', 'sha256:aa'), number: 7, status: 'replaced' }];
    const ended = [...carried, { ...revision('img:3', 'sha256:cc'), number: 8, status: 'replaced' }];
    const { revisions } = revisionsFromHistory(
      history([
        event(
          'workflowExecutionStarted',
          { workflowType: { name: 'cluster' }, input: payloads({ cluster: 'c', revisions: carried }) },
          1000,
        ),
        event('workflowExecutionCompleted', { result: payloads({ cluster: 'c', revisions: ended }) }, 9000),
      ]),
    );
    assert.deepEqual(
      revisions.map((r) => r.number),
      [7, 8],
    );
  });

  it("refuses another workflow's history, naming its type", () => {
    assert.throws(
      () =>
        revisionsFromHistory(
          history([
            event('workflowExecutionStarted', { workflowType: { name: 'deploy' }, input: payloads({}) }, 1),
          ]),
        ),
      (err: unknown) => err instanceof NotAClusterHistoryError && /a deploy workflow/.test(err.message),
    );
  });
});

describe('revisions read from the recorded cluster history (test/histories/cluster-held.json)', () => {
  const dir = join(import.meta.dirname, '..', 'histories');
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
    histories: { file: string; revisions?: { knownGood: number; bad: number; rollback: number } }[];
  };
  const recorded = manifest.histories.find((h) => h.file === 'cluster-held.json')?.revisions;

  it('reads the rolled-back upgrade: the known-good replaced, the upgrade bad, the rollback serving and restoring', () => {
    // As committed (record-histories.ts --only rollback, a cluster of its own): 1 replaced, 2 bad, 3 serving
    // restores 1. A full recording runs the other deploys first on the same cluster: theirs come before, replaced.
    assert.ok(recorded, 'the manifest names the revisions of the rolled-back upgrade');
    const { knownGood, bad: badNumber, rollback } = recorded;
    assert.deepEqual([badNumber, rollback], [knownGood + 1, knownGood + 2]);
    const { cluster, revisions } = revisionsFromHistory(
      readHistoryEvents(JSON.parse(readFileSync(join(dir, 'cluster-held.json'), 'utf8'))),
    );
    assert.equal(cluster, 'replay');
    assert.deepEqual(
      revisions.map((r) => [r.number, r.status, r.restores, r.trigger]),
      [
        ...Array.from({ length: knownGood - 1 }, (_, i) => [i + 1, 'replaced', undefined, 'cli']),
        [knownGood, 'replaced', undefined, 'cli'],
        [badNumber, 'bad', undefined, 'cli'],
        [rollback, 'serving', knownGood, 'rollback'],
      ],
    );
    const [good, bad, restored] = revisions.slice(-3);
    assert.match(bad?.badReason ?? '', /waitHealthy failed: .*shard 3\/8/);
    // The rollback ran the known-good's spec with the image pinned to the ID the known-good recorded.
    const imageId = good?.hosts[0]?.imageId;
    assert.match(imageId ?? '', /^sha256:[0-9a-f]{64}$/);
    assert.equal(restored?.image, imageId);
    assert.deepEqual(restored?.argv, good?.argv);
    assert.notDeepEqual(bad?.argv, good?.argv, 'the upgrade changed the serve args');
  });
});
