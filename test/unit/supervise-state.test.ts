// The supervisor's pure rules: consecutive failed rounds, the relaunch budget per window, the doubling backoff,
// and the bounded relaunch log that continue-as-new carries.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffIfLostNow,
  initialState,
  nextRelaunch,
  recordRound,
  relaunchLogLimit,
  trimRelaunchLog,
  type Budget,
  type ProbeRound,
  type RelaunchEntry,
} from '../../src/workflows/supervise-state.js';

const budget: Budget = { maxRelaunches: 3, windowMs: 3_600_000, backoffMs: 60_000 };
const round = (verdict: ProbeRound['verdict']): ProbeRound => ({
  atMs: 0,
  durationMs: 10,
  verdict,
  checks: [{ name: 'health', host: 'h', ok: verdict !== 'failed' }],
  failures: verdict === 'failed' ? ['h health: refused'] : [],
  unreachable: {},
});
const relaunch = (n: number, startedAtMs: number, extra: Partial<RelaunchEntry> = {}): RelaunchEntry => ({
  n,
  lostAtMs: startedAtMs,
  cause: 'x',
  startedAtMs,
  endedAtMs: startedAtMs + 1000,
  deployWorkflowId: 'liftoff-c',
  outcome: 'failed',
  bundle: { collectedAtMs: startedAtMs, hosts: [] },
  ...extra,
});

describe('supervise state', () => {
  it('counts failed rounds in a row; a passed round resets, an unknown one neither counts nor resets', () => {
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    recordRound(s, round('failed'));
    recordRound(s, round('unknown'));
    recordRound(s, round('failed'));
    assert.equal(s.consecutiveFailures, 2);
    recordRound(s, round('passed'));
    assert.equal(s.consecutiveFailures, 0);
    assert.deepEqual([s.rounds, s.failedRounds, s.probes, s.roundsThisRun], [4, 2, 4, 4]);
    assert.equal(s.recentFailures.length, 2);
    assert.equal(s.lastProbe?.verdict, 'passed');
  });

  it('relaunches at once, then after the backoff doubling, and stops at maxRelaunches per window', () => {
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    assert.deepEqual(nextRelaunch(s, budget, 0), { relaunch: true, waitMs: 0 });
    s.relaunches.push(relaunch(1, 0));
    // Ended at 1 s: the second waits 1m from then.
    assert.deepEqual(nextRelaunch(s, budget, 1000), { relaunch: true, waitMs: 60_000 });
    s.relaunches.push(relaunch(2, 61_000));
    assert.deepEqual(nextRelaunch(s, budget, 62_000), { relaunch: true, waitMs: 120_000 });
    s.relaunches.push(relaunch(3, 182_000));
    const spent = nextRelaunch(s, budget, 183_000);
    assert.equal(spent.relaunch, false);
    assert.match(spent.relaunch ? '' : spent.reason, /3 relaunches within supervise\.window 60m/);
    // An hour after the first, it falls out of the window and one more is allowed.
    assert.equal(nextRelaunch(s, budget, 3_600_001).relaunch, true);
  });

  it('starts the backoff over after a relaunch that served for supervise.stableAfter, the budget still counting it', () => {
    const old: Budget = { maxRelaunches: 5, windowMs: 3 * 3_600_000, backoffMs: 600_000 };
    const stable: Budget = { ...old, stableAfterMs: 600_000 };
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    s.relaunches.push(relaunch(1, 0, { outcome: 'serving' }));
    s.relaunches.push(relaunch(2, 60_000, { outcome: 'serving', lostAtMs: 60_000 }));
    // A crash loop: relaunch 2 came a minute after relaunch 1 served, so a loss 1 s after it served waits 20 min.
    s.lostAtMs = 62_000;
    assert.deepEqual(nextRelaunch(s, stable, 62_000), { relaunch: true, waitMs: 1_200_000 - 1000 });
    // Independent faults: relaunch 2 then served 11 minutes; the next loss is relaunched at once...
    s.lostAtMs = 61_000 + 660_000;
    assert.deepEqual(nextRelaunch(s, stable, s.lostAtMs), { relaunch: true, waitMs: 0 });
    // ...where the doubling alone (a run recorded before the rule) would wait the rest of 20 minutes.
    assert.deepEqual(nextRelaunch(s, old, s.lostAtMs), { relaunch: true, waitMs: 1_200_000 - 660_000 });
    // The budget still counts every relaunch in the window: a sixth is refused however stable the others were.
    for (let n = 3; n <= 5; n++)
      s.relaunches.push(relaunch(n, n * 700_000, { outcome: 'serving', lostAtMs: n * 700_000 }));
    s.lostAtMs = 4_000_000;
    assert.equal(nextRelaunch(s, stable, 4_000_000).relaunch, false);
    assert.equal(backoffIfLostNow(s, stable, 4_000_000), undefined);
  });

  it('says the backoff a loss now would wait', () => {
    const stable: Budget = { ...budget, stableAfterMs: 600_000 };
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    assert.equal(backoffIfLostNow(s, stable, 0), 0);
    s.relaunches.push(relaunch(1, 0, { outcome: 'serving' }));
    // 10 s after relaunch 1 served: a loss now is a crash loop's second relaunch.
    assert.equal(backoffIfLostNow(s, stable, 11_000), 60_000 - 10_000);
    // Once it served 10 minutes, a loss starts over.
    assert.equal(backoffIfLostNow(s, stable, 601_000), 0);
  });

  it('does not count a refused relaunch (another deploy ran) against the budget', () => {
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    for (let i = 1; i <= 5; i++) s.relaunches.push(relaunch(i, i * 1000, { outcome: 'refused' }));
    assert.deepEqual(nextRelaunch(s, budget, 10_000), { relaunch: true, waitMs: 0 });
  });

  it('maxRelaunches 0 never relaunches', () => {
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    const next = nextRelaunch(s, { ...budget, maxRelaunches: 0 }, 0);
    assert.equal(next.relaunch, false);
  });

  it('bounds the relaunch log and keeps bundles only within the window', () => {
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    for (let i = 1; i <= relaunchLogLimit + 5; i++) s.relaunches.push(relaunch(i, i * 600_000));
    const now = (relaunchLogLimit + 5) * 600_000;
    trimRelaunchLog(s, budget, now);
    assert.equal(s.relaunches.length, relaunchLogLimit);
    assert.equal(s.relaunches[0]?.n, 6);
    const withBundle = s.relaunches.filter((r) => r.bundle).map((r) => r.n);
    assert.deepEqual(withBundle, [20, 21, 22, 23, 24, 25]);
  });

  it('never gives back spent budget: refused attempts after the spent relaunches do not push them out of the log', () => {
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    // Three relaunches spend the budget; then another deploy holds the cluster and every attempt is refused,
    // one an interval (30 s), more of them than the log keeps.
    for (let i = 1; i <= 3; i++) s.relaunches.push(relaunch(i, i * 60_000));
    for (let i = 4; i <= relaunchLogLimit + 10; i++)
      s.relaunches.push(relaunch(i, 180_000 + i * 30_000, { outcome: 'refused', bundle: undefined }));
    const now = 180_000 + (relaunchLogLimit + 11) * 30_000;
    assert.equal(nextRelaunch(s, budget, now).relaunch, false, 'spent before the trim');
    trimRelaunchLog(s, budget, now);
    assert.equal(s.relaunches.length, relaunchLogLimit);
    assert.deepEqual(
      s.relaunches.filter((r) => r.outcome !== 'refused').map((r) => r.n),
      [1, 2, 3],
      'the relaunches the budget counts are kept',
    );
    assert.equal(s.relaunches.at(-1)?.n, relaunchLogLimit + 10, 'the newest refused attempts fill the rest');
    const next = nextRelaunch(s, budget, now);
    assert.equal(next.relaunch, false, 'still spent after the trim');
    assert.match(next.relaunch ? '' : next.reason, /3 relaunches within supervise\.window/);
    // Trimmed again (the next continue-as-new): the same log.
    const again = structuredClone(s.relaunches);
    trimRelaunchLog(s, budget, now);
    assert.deepEqual(s.relaunches, again);
  });

  it('drops spent relaunches once they leave the window, as before', () => {
    const s = initialState('c', { launchId: 'l', servingSinceMs: 0 }, 0);
    for (let i = 1; i <= 3; i++) s.relaunches.push(relaunch(i, i * 60_000));
    for (let i = 4; i <= relaunchLogLimit + 10; i++)
      s.relaunches.push(relaunch(i, 180_000 + i * 30_000, { outcome: 'refused', bundle: undefined }));
    const now = 2 * budget.windowMs;
    trimRelaunchLog(s, budget, now);
    assert.equal(s.relaunches.length, relaunchLogLimit);
    assert.equal(s.relaunches[0]?.n, 11);
    assert.ok(s.relaunches.every((r) => r.bundle === undefined));
  });
});
