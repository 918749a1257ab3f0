// The supervisor's pure rules for companions: failed rounds counted only while the main model passes, a restart
// at the threshold, each companion's own restart budget per window, and degraded past it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CompanionRoundProbe } from '../../src/activities/cluster-probe.js';
import {
  beginRestart,
  companionAction,
  endRestart,
  initialCompanions,
  recordCompanionProbe,
  restartsInWindow,
  type CompanionBudget,
  type CompanionState,
} from '../../src/workflows/supervise-companion-state.js';
import { companionLine } from '../../src/commands/supervise/common.js';
import { renderStatus } from '../../src/commands/status.js';
import type { DeployProgress } from '../../src/workflows/steps.js';

const budget: CompanionBudget = { failureThreshold: 2, maxRestarts: 2, windowMs: 3_600_000 };
const fresh = (): Record<string, CompanionState> =>
  initialCompanions([
    { name: 'embeddings', host: 'spark1', endpoint: 'http://10.0.0.1:8001' },
    { name: 'reranker', host: 'spark2', endpoint: 'http://10.0.0.2:8002' },
  ]);
const passed: CompanionRoundProbe = {
  name: 'embeddings',
  host: 'spark1',
  ok: true,
  latencyMs: 12,
  detail: 'an embedding of 1024 dimensions',
};
const failed: CompanionRoundProbe = {
  name: 'embeddings',
  host: 'spark1',
  ok: false,
  running: false,
  error: 'its container liftoff-embeddings is gone',
};
const unreachable: CompanionRoundProbe = {
  name: 'embeddings',
  host: 'spark1',
  unreachable: true,
  error: 'connect ECONNREFUSED',
};

describe('companion supervision state', () => {
  it('starts every companion serving with nothing counted, endpoint as given', () => {
    const all = fresh();
    assert.deepEqual(Object.keys(all), ['embeddings', 'reranker']);
    assert.equal(all.embeddings?.status, 'serving');
    assert.equal(all.embeddings?.endpoint, 'http://10.0.0.1:8001');
    assert.deepEqual(all.reranker?.restarts, []);
  });

  it('counts failed rounds in a row while the main model passes, and restarts at the threshold', () => {
    const c = fresh().embeddings!;
    recordCompanionProbe(c, failed, true, 1000);
    assert.equal(c.status, 'failing');
    assert.equal(c.consecutiveFailures, 1);
    assert.deepEqual(companionAction(c, budget, 1000), { kind: 'none' });
    recordCompanionProbe(c, failed, true, 2000);
    assert.equal(c.consecutiveFailures, 2);
    assert.deepEqual(companionAction(c, budget, 2000), { kind: 'restart' });
    assert.deepEqual(c.lastProbe, { atMs: 2000, ok: false, error: failed.error });
  });

  it('a passing probe resets the count and records its latency', () => {
    const c = fresh().embeddings!;
    recordCompanionProbe(c, failed, true, 1000);
    recordCompanionProbe(c, passed, true, 2000);
    assert.equal(c.status, 'serving');
    assert.equal(c.consecutiveFailures, 0);
    assert.deepEqual(c.lastProbe, {
      atMs: 2000,
      ok: true,
      latencyMs: 12,
      detail: 'an embedding of 1024 dimensions',
    });
  });

  it('a failure while the main model fails, or an unreachable host, is not counted against the companion', () => {
    const c = fresh().embeddings!;
    recordCompanionProbe(c, failed, false, 1000);
    recordCompanionProbe(c, unreachable, true, 2000);
    recordCompanionProbe(c, failed, false, 3000);
    assert.equal(c.consecutiveFailures, 0);
    assert.equal(c.status, 'serving');
    assert.equal(c.lastProbe?.error, failed.error);
    assert.deepEqual(companionAction(c, budget, 3000), { kind: 'none' });
  });

  it('a companion being restarted is not judged by the rounds', () => {
    const c = fresh().embeddings!;
    recordCompanionProbe(c, failed, true, 1000);
    recordCompanionProbe(c, failed, true, 2000);
    beginRestart(c, 2000);
    assert.equal(c.status, 'restarting');
    recordCompanionProbe(c, failed, true, 3000);
    recordCompanionProbe(c, failed, true, 4000);
    assert.deepEqual(companionAction(c, budget, 4000), { kind: 'none' });
  });

  it("each companion has its own budget: past it, degraded; the other's is untouched", () => {
    const all = fresh();
    const c = all.embeddings!;
    const failTwice = (at: number) => {
      recordCompanionProbe(c, failed, true, at);
      recordCompanionProbe(c, failed, true, at + 1);
    };
    for (const at of [1000, 5000]) {
      failTwice(at);
      assert.deepEqual(companionAction(c, budget, at + 1), { kind: 'restart' });
      const r = beginRestart(c, at + 1);
      endRestart(c, r, at + 2, { ok: false, error: 'still down' });
      assert.equal(c.status, 'failing');
      assert.equal(c.consecutiveFailures, 0, 'the rounds count again from the restart');
    }
    assert.equal(restartsInWindow(c, budget, 9000), 2);
    failTwice(9000);
    const action = companionAction(c, budget, 9001);
    assert.equal(action.kind, 'degrade');
    assert.match(
      action.kind === 'degrade' ? action.reason : '',
      /^its restart budget is spent: 2 restarts within supervise.window 60m \(supervise.maxRelaunches 2\)$/,
    );
    assert.equal(restartsInWindow(all.reranker!, budget, 9001), 0);
    // Degraded: left failed, no more actions, until it passes by itself.
    c.status = 'degraded';
    recordCompanionProbe(c, failed, true, 10_000);
    assert.equal(c.status, 'degraded');
    assert.deepEqual(companionAction(c, budget, 10_000), { kind: 'none' });
    recordCompanionProbe(c, passed, true, 11_000);
    assert.equal(c.status, 'serving');
  });

  it('restarts older than the window give their budget back', () => {
    const c = fresh().embeddings!;
    beginRestart(c, 0);
    beginRestart(c, 10);
    c.status = 'failing';
    c.consecutiveFailures = 2;
    assert.equal(companionAction(c, budget, 1000).kind, 'degrade');
    assert.deepEqual(companionAction(c, budget, budget.windowMs + 11), { kind: 'restart' });
  });

  it('maxRelaunches 0 never restarts a companion', () => {
    const c = fresh().embeddings!;
    recordCompanionProbe(c, failed, true, 1);
    recordCompanionProbe(c, failed, true, 2);
    const action = companionAction(c, { ...budget, maxRestarts: 0 }, 3);
    assert.equal(action.kind, 'degrade');
  });

  it('a restart that serves again records it and its probe', () => {
    const c = fresh().embeddings!;
    const r = beginRestart(c, 100);
    endRestart(c, r, 900, { ok: true, latencyMs: 20, detail: 'an embedding of 1024 dimensions' });
    assert.equal(c.status, 'serving');
    assert.deepEqual(c.restarts, [{ atMs: 100, endedAtMs: 900, outcome: 'serving' }]);
    assert.equal(c.lastProbe?.ok, true);
  });
});

describe("a companion's line in `liftoff status`", () => {
  it('shows state, endpoint, the last probe (age, latency or error) and restarts', () => {
    const c = fresh().embeddings!;
    assert.equal(
      companionLine(c, 0),
      'embeddings on spark1: serving, http://10.0.0.1:8001, last probe not probed yet, no restarts',
    );
    const r = beginRestart(c, Date.UTC(2026, 0, 1));
    endRestart(c, r, Date.UTC(2026, 0, 1, 0, 0, 5), { ok: true, latencyMs: 20, detail: 'x' });
    assert.equal(
      companionLine(c, Date.UTC(2026, 0, 1, 0, 0, 8)),
      'embeddings on spark1: serving, http://10.0.0.1:8001, last probe 3.0s ago passed in 20ms, 1 restart(s), last 2026-01-01T00:00:00.000Z serving',
    );
    recordCompanionProbe(c, failed, true, Date.UTC(2026, 0, 1, 0, 0, 10));
    assert.equal(
      companionLine(c, Date.UTC(2026, 0, 1, 0, 0, 10)),
      'embeddings on spark1: failing, http://10.0.0.1:8001, last probe 0ms ago failed: its container liftoff-embeddings is gone, 1 restart(s), last 2026-01-01T00:00:00.000Z serving',
    );
  });
});

describe('`liftoff status` without a supervisor', () => {
  it('lists the companions as the deploy left them', () => {
    const text = renderStatus({
      cluster: 'lab',
      workflowId: 'liftoff-lab',
      runId: 'r',
      status: 'COMPLETED',
      startTime: '2026-01-01T00:00:00.000Z',
      progress: {
        steps: [],
        companions: [
          { name: 'embeddings', host: 'spark1', status: 'ready', detail: 'an embedding of 1024 dimensions' },
          { name: 'reranker', host: 'spark2', status: 'failed' },
        ],
      } as unknown as DeployProgress,
    });
    assert.match(text, /^companions \(as the deploy started them\):$/m);
    assert.match(text, /^ {2}embeddings on spark1: ready \(an embedding of 1024 dimensions\)$/m);
    assert.match(text, /^ {2}reranker on spark2: failed$/m);
  });
});
