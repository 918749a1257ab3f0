// Revisions and rollback (issue 30), pure: which revision is known-good and which a rollback deploys, the spec it
// deploys (its image pinned to the recorded ID), what preflight finds missing against a revision, the bad revision
// a schedule refuses; the cluster record's numbering, statuses and the last rollback's outcome; and the diff of two
// revisions. The same rules run in the deploy workflow, the supervisor and the CLI.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  badRevisionWithSpec,
  knownGoodOf,
  missingFromHosts,
  pinnedImageOf,
  pinnedSpec,
  rollbackRequest,
  rollbackTarget,
} from '../../src/shared/rollback.js';
import { shortImageId } from '../../src/shared/revisions.js';
import { diffRevisions } from '../../src/shared/revision-diff.js';
import { revisionsKept, type HostIdentity, type Revision } from '../../src/shared/revisions.js';
import {
  deployEnded,
  hold,
  markRevisionBad,
  newRecord,
  recordRevision,
} from '../../src/workflows/cluster-record.js';
import type { HoldInput, RevisionToRecord } from '../../src/shared/cluster-api.js';

const oldId = `sha256:${'a'.repeat(64)}`;
const newId = `sha256:${'b'.repeat(64)}`;
const evidence = { loadSeconds: 12, tokensPerSecond: 40 };

const hostsWith = (imageId: string | undefined, extra: Partial<HostIdentity> = {}): HostIdentity[] =>
  ['spark1', 'spark2'].map((host) => ({ host, ...(imageId ? { imageId } : {}), ...extra }));

const specOf = (maxModelLen: number, image = 'org/vllm:latest') => ({
  cluster: 'qwen',
  ray: { image, container: 'vllm_qwen' },
  serve: { model: 'Qwen/Qwen3', args: ['--max-model-len', String(maxModelLen)] },
});

/** A revision as the cluster records it; `status` and `evidence` say whether it served. */
function revision(number: number, status: Revision['status'], more: Partial<Revision> = {}): Revision {
  return {
    number,
    atMs: number * 1000,
    launchId: `liftoff-qwen:run-${number}`,
    trigger: 'cli',
    spec: specOf(1000 + number),
    model: 'Qwen/Qwen3',
    image: 'org/vllm:latest',
    hosts: hostsWith(oldId),
    argv: ['vllm', 'serve', 'Qwen/Qwen3'],
    envNames: ['NCCL_SOCKET_IFNAME'],
    ...(status === 'bad' ? {} : { evidence }),
    status,
    ...more,
  };
}

describe('knownGoodOf', () => {
  it('is the latest revision that served and is not bad', () => {
    const revs = [revision(1, 'replaced'), revision(2, 'serving'), revision(3, 'bad')];
    assert.equal(knownGoodOf(revs)?.number, 2);
  });

  it('skips a revision without evidence (it never served) and has none when nothing served', () => {
    const neverServed = revision(3, 'replaced', { evidence: undefined });
    assert.equal(knownGoodOf([revision(1, 'replaced'), neverServed])?.number, 1);
    assert.equal(knownGoodOf([revision(1, 'bad'), revision(2, 'bad')]), undefined);
    assert.equal(knownGoodOf([]), undefined);
  });

  it('a revision that served and went bad later (its bake window) is not known-good', () => {
    const bakedBad = revision(2, 'bad', { evidence, badReason: 'lost within its bake window' });
    assert.equal(knownGoodOf([revision(1, 'replaced'), bakedBad])?.number, 1);
  });
});

describe('rollbackTarget', () => {
  const revs = [
    revision(1, 'replaced'),
    revision(2, 'bad'),
    revision(3, 'replaced', { restores: 1 }),
    revision(4, 'serving'),
  ];

  it('--to N: that revision, whatever its status', () => {
    assert.deepEqual(rollbackTarget(revs, 4, 2), { revision: revs[1] });
    assert.deepEqual(rollbackTarget(revs, 4, 4), { revision: revs[3] });
  });

  it('--to a revision no longer kept: a problem listing the kept ones', () => {
    const r = rollbackTarget(revs, 4, 9);
    assert.ok('problem' in r);
    assert.match(r.problem, /^revision 9 is not kept \(kept: 1, 2, 3, 4\); see liftoff revisions$/);
    const none = rollbackTarget([], undefined, 1);
    assert.ok('problem' in none);
    assert.match(none.problem, /\(kept: none\)/);
  });

  it('without --to while a revision serves: the known-good before it (going back means going back)', () => {
    const r = rollbackTarget(revs, 4);
    assert.ok('revision' in r);
    assert.equal(r.revision.number, 3);
  });

  it('without --to while nothing serves: the latest known-good', () => {
    const failed = [revision(1, 'replaced'), revision(2, 'replaced'), revision(3, 'bad')];
    const r = rollbackTarget(failed, 2);
    assert.ok('revision' in r);
    assert.equal(r.revision.number, 2);
    const r2 = rollbackTarget(failed, undefined);
    assert.ok('revision' in r2);
    assert.equal(r2.revision.number, 2);
  });

  it('without --to and no known-good: says which case', () => {
    const only = rollbackTarget([revision(1, 'serving')], 1);
    assert.ok('problem' in only);
    assert.equal(only.problem, 'no known-good revision before the serving revision 1');
    const none = rollbackTarget([revision(1, 'bad')], undefined);
    assert.ok('problem' in none);
    assert.equal(none.problem, 'the cluster has no known-good revision');
  });
});

describe('pinnedSpec', () => {
  it('pins ray.image to the one image ID every host recorded, leaving the revision as it was', () => {
    const rev = revision(1, 'serving');
    const pinned = pinnedSpec(rev) as ReturnType<typeof specOf>;
    assert.equal(pinned.ray.image, oldId);
    assert.equal(pinned.ray.container, 'vllm_qwen');
    assert.deepEqual(pinned.serve, specOf(1001).serve);
    assert.equal((rev.spec as ReturnType<typeof specOf>).ray.image, 'org/vllm:latest', 'a copy is pinned');
    assert.equal(pinnedImageOf(rev), oldId);
  });

  it('leaves the tag when the hosts recorded different IDs, or none', () => {
    const differ = revision(1, 'serving', {
      hosts: [
        { host: 'spark1', imageId: oldId },
        { host: 'spark2', imageId: newId },
      ],
    });
    assert.equal(pinnedImageOf(differ), undefined);
    assert.equal((pinnedSpec(differ) as ReturnType<typeof specOf>).ray.image, 'org/vllm:latest');
    const partly = revision(1, 'serving', {
      hosts: [{ host: 'spark1', imageId: oldId }, { host: 'spark2' }],
    });
    assert.equal(pinnedImageOf(partly), undefined);
    const none = revision(1, 'serving', { hosts: hostsWith(undefined) });
    assert.equal((pinnedSpec(none) as ReturnType<typeof specOf>).ray.image, 'org/vllm:latest');
  });

  it('a spec without a ray section comes back as it was', () => {
    const rev = revision(1, 'serving', { spec: { cluster: 'qwen' } });
    assert.deepEqual(pinnedSpec(rev), { cluster: 'qwen' });
  });
});

describe('missingFromHosts', () => {
  const weights = { snapshot: 'c'.repeat(40), indexSha256: 'd'.repeat(64) };
  const request = rollbackRequest(revision(3, 'replaced', { hosts: hostsWith(oldId, { weights }) }), 'asked');

  it('nothing when every host has what the revision recorded', () => {
    assert.deepEqual(missingFromHosts(request, hostsWith(oldId, { weights })), []);
  });

  it('an image ID gone from a host names that host, both IDs short, and the fix', () => {
    const found = [
      { host: 'spark1', imageId: oldId, weights },
      { host: 'spark2', imageId: newId, weights },
    ];
    assert.deepEqual(missingFromHosts(request, found), [
      `spark2: image ${shortImageId(oldId)} of revision 3 is gone (the host has ${shortImageId(newId)}); load it again (docker load) or roll back to another revision`,
    ]);
    const gone = missingFromHosts(request, [
      { host: 'spark1', imageId: oldId, weights },
      { host: 'spark2', weights },
    ]);
    assert.match(gone[0] ?? '', /^spark2: image a{12} of revision 3 is gone \(the host has no such image\)/);
  });

  it('weights: a snapshot gone, else an index that differs', () => {
    const otherSnapshot = hostsWith(oldId, { weights: { ...weights, snapshot: 'e'.repeat(40) } });
    const problems = missingFromHosts(request, otherSnapshot);
    assert.equal(problems.length, 2);
    assert.match(problems[0] ?? '', /^spark1: weights snapshot c{12} of revision 3 is gone \(found e{12}\)/);
    const otherIndex = hostsWith(oldId, { weights: { ...weights, indexSha256: 'f'.repeat(64) } });
    assert.match(
      missingFromHosts(request, otherIndex)[1] ?? '',
      /^spark2: the weights' index differs from revision 3's \(sha256 d{12}, now f{12}\)/,
    );
  });

  it('compares nothing the revision did not record, and skips a host preflight did not read', () => {
    const bare = rollbackRequest(revision(1, 'replaced', { hosts: hostsWith(undefined) }), 'asked');
    assert.deepEqual(missingFromHosts(bare, hostsWith(newId)), []);
    assert.deepEqual(missingFromHosts(request, [{ host: 'spark1', imageId: oldId, weights }]), []);
  });
});

describe('rollbackRequest', () => {
  it('carries the revision, its hosts and why; from and the failed run only when given', () => {
    const rev = revision(2, 'replaced');
    assert.deepEqual(rollbackRequest(rev, 'asked'), { to: 2, cause: 'asked', hosts: rev.hosts });
    assert.deepEqual(rollbackRequest(rev, 'load failed', 5, 'liftoff-qwen:r5'), {
      to: 2,
      cause: 'load failed',
      hosts: rev.hosts,
      from: 5,
      failedRun: 'liftoff-qwen:r5',
    });
  });
});

describe('badRevisionWithSpec', () => {
  it('finds the latest bad revision whose spec is this one, whatever the key order', () => {
    const spec = specOf(2000);
    const reordered = {
      serve: spec.serve,
      ray: { container: 'vllm_qwen', image: spec.ray.image },
      cluster: 'qwen',
    };
    const revs = [
      revision(1, 'serving', { spec }),
      revision(2, 'bad', { spec }),
      revision(3, 'bad', { spec }),
    ];
    assert.equal(badRevisionWithSpec(revs, reordered)?.number, 3);
  });

  it('a spec that only served, or differs in a value, is not refused', () => {
    const spec = specOf(2000);
    assert.equal(badRevisionWithSpec([revision(1, 'replaced', { spec })], spec), undefined);
    assert.equal(badRevisionWithSpec([revision(1, 'bad', { spec })], specOf(2001)), undefined);
    assert.equal(badRevisionWithSpec([], spec), undefined);
  });
});

describe('the cluster record’s revisions', () => {
  const toRecord = (n: number, more: Partial<RevisionToRecord> = {}): RevisionToRecord => {
    const { number: _n, status: _s, ...fields } = revision(n, 'serving');
    return { ...fields, ...more };
  };
  const holdInput = (rollback?: HoldInput['rollback']): HoldInput => ({
    hosts: [{ name: 'spark1', address: '10.0.0.1', machineId: 'a'.repeat(32) }],
    spec: { cluster: 'qwen' },
    model: 'Qwen/Qwen3',
    containers: { spark1: ['vllm_qwen'] },
    deploy: { workflowId: 'liftoff-qwen', trigger: rollback ? 'rollback' : 'cli', startedAtMs: 0 },
    ...(rollback ? { rollback } : {}),
  });

  it('numbers from 1; a good one serves and replaces the one before; a bad one leaves the serving one', () => {
    const r = newRecord('qwen', 0);
    assert.equal(recordRevision(r, toRecord(1), 100), 1);
    assert.equal(r.revision, 1);
    assert.equal(recordRevision(r, toRecord(2), 200), 2);
    assert.equal(recordRevision(r, toRecord(3, { bad: 'load failed' }), 300), 3);
    assert.deepEqual(
      r.revisions?.map((v) => [v.number, v.status, v.badReason, v.atMs]),
      [
        [1, 'replaced', undefined, 100],
        [2, 'serving', undefined, 200],
        [3, 'bad', 'load failed', 300],
      ],
    );
    assert.equal(r.revision, 2, 'the serving revision stays current');
    assert.ok(!('bad' in (r.revisions?.[2] ?? {})), 'the input’s bad becomes badReason');
  });

  it(`keeps the last ${revisionsKept}, and never reuses a number`, () => {
    const r = newRecord('qwen', 0);
    for (let i = 1; i <= revisionsKept + 5; i++) recordRevision(r, toRecord(i), i);
    assert.equal(r.revisions?.length, revisionsKept);
    assert.equal(r.revisions?.[0]?.number, 6);
    assert.equal(r.revisions?.at(-1)?.number, revisionsKept + 5);
    assert.equal(recordRevision(r, toRecord(99, { bad: 'x' }), 1000), revisionsKept + 6);
    assert.equal(r.revisions?.filter((v) => v.status === 'serving').length, 1);
  });

  it('markRevisionBad: bad with why, whatever it was; an unknown number changes nothing', () => {
    const r = newRecord('qwen', 0);
    recordRevision(r, toRecord(1), 1);
    recordRevision(r, toRecord(2), 2);
    markRevisionBad(r, 2, 'lost within its bake window (10m): health refused');
    assert.deepEqual(
      r.revisions?.map((v) => [v.status, v.badReason]),
      [
        ['replaced', undefined],
        ['bad', 'lost within its bake window (10m): health refused'],
      ],
    );
    const before = JSON.stringify(r);
    markRevisionBad(r, 7, 'nothing');
    assert.equal(JSON.stringify(r), before);
    // The rollback's revision then serves, and the bad one stays bad.
    recordRevision(r, toRecord(3, { restores: 1 }), 3);
    assert.deepEqual(
      r.revisions?.map((v) => v.status),
      ['replaced', 'bad', 'serving'],
    );
  });

  it('a rollback that serves: lastRollback serving with the revision it recorded, the cluster serving', () => {
    const r = newRecord('qwen', 0);
    hold(r, holdInput(), 1);
    recordRevision(r, toRecord(1), 2);
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'succeeded', endpoint: 'http://x/v1' }, 3);
    hold(r, holdInput(), 4);
    recordRevision(r, toRecord(2, { bad: 'load failed' }), 5);
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'failed', error: 'load failed' }, 6);
    assert.equal(r.state, 'failed');
    hold(r, holdInput({ restores: 1, bad: 2, cause: 'load failed' }), 7);
    assert.deepEqual(r.lastRollback, {
      restores: 1,
      bad: 2,
      cause: 'load failed',
      atMs: 7,
      outcome: 'running',
    });
    recordRevision(r, toRecord(3, { restores: 1 }), 8);
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'succeeded', endpoint: 'http://x/v1' }, 9);
    assert.equal(r.state, 'serving');
    assert.equal(r.reason, undefined);
    assert.deepEqual([r.lastRollback?.outcome, r.lastRollback?.revision], ['serving', 3]);
  });

  it('a rollback that fails too: lastRollback failed, the cluster degraded with both stories', () => {
    const r = newRecord('qwen', 0);
    hold(r, holdInput({ restores: 1, bad: 2, cause: 'load failed' }), 1);
    const error = 'rollback to revision 1 failed too: crash\nrevision 2 had failed: load failed';
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'failed', error }, 2);
    assert.equal(r.state, 'degraded');
    assert.equal(r.reason, `rollback to revision 1 failed too: ${error}`);
    assert.deepEqual([r.lastRollback?.outcome, r.lastRollback?.error], ['failed', error]);
    // A late end changes nothing: the deploy is no longer running.
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'succeeded' }, 3);
    assert.equal(r.state, 'degraded');
  });

  it('a failed deploy that was not a rollback leaves lastRollback as it was', () => {
    const r = newRecord('qwen', 0);
    hold(r, holdInput({ restores: 1, cause: 'asked' }), 1);
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'succeeded' }, 2);
    hold(r, holdInput(), 3);
    deployEnded(r, { workflowId: 'liftoff-qwen', outcome: 'failed', error: 'smoke' }, 4);
    assert.deepEqual([r.state, r.lastRollback?.outcome], ['failed', 'serving']);
  });
});

describe('diffRevisions', () => {
  it('the same revision twice: no change', () => {
    assert.deepEqual(diffRevisions(revision(1, 'serving'), revision(1, 'serving')), []);
  });

  it('the spec as dotted paths (arrays by index), argv and env names, then each host’s identity outside the spec', () => {
    const a = revision(1, 'replaced', { envNames: ['A', 'B'] });
    const b = revision(2, 'serving', {
      spec: { ...specOf(1001), serve: { ...specOf(1001).serve, args: ['--max-model-len', '2048', '--x'] } },
      argv: ['vllm', 'serve', 'Qwen/Qwen3', '--x'],
      envNames: ['A'],
      hosts: [
        { host: 'spark1', imageId: newId, kernel: '6.8.0' },
        { host: 'spark2', imageId: oldId },
      ],
    });
    assert.deepEqual(diffRevisions(a, b), [
      { field: 'spec.serve.args.1', from: '1001', to: '2048', outsideSpec: false },
      { field: 'spec.serve.args.2', from: '(none)', to: '--x', outsideSpec: false },
      { field: 'argv', from: 'vllm serve Qwen/Qwen3', to: 'vllm serve Qwen/Qwen3 --x', outsideSpec: false },
      { field: 'envNames', from: 'A B', to: 'A', outsideSpec: false },
      { field: 'spark1.imageId', from: oldId, to: newId, outsideSpec: true },
      { field: 'spark1.kernel', from: '(none)', to: '6.8.0', outsideSpec: true },
    ]);
  });

  it('a host only one revision has, weights and versions, empty objects and non-string leaves', () => {
    const a = revision(1, 'replaced', {
      spec: { cluster: 'qwen', env: {}, gpu: { perHost: 1 } },
      hosts: [{ host: 'spark1', weights: { snapshot: 's1' }, versions: { vllm: '0.10.1' } }],
    });
    const b = revision(2, 'serving', {
      spec: { cluster: 'qwen', env: { A: 'x' }, gpu: { perHost: 2 } },
      hosts: [
        { host: 'spark1', weights: { snapshot: 's2' }, versions: { vllm: '0.10.2' } },
        { host: 'spark3', driver: '580.1' },
      ],
    });
    assert.deepEqual(
      diffRevisions(a, b).map((c) => `${c.field}: ${c.from} → ${c.to}${c.outsideSpec ? ' (outside)' : ''}`),
      [
        'spec.env: {} → (none)',
        'spec.env.A: (none) → x',
        'spec.gpu.perHost: 1 → 2',
        'spark1.weights.snapshot: s1 → s2 (outside)',
        'spark1.vllm: 0.10.1 → 0.10.2 (outside)',
        'spark3.driver: (none) → 580.1 (outside)',
      ],
    );
  });
});
