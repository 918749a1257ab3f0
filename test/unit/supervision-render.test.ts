// `liftoff status`'s supervision lines: a running watch (supervise.reportEvery) is shown beside the last probe,
// so a last probe minutes old reads as the worker watching, not as a stalled supervisor.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renderSupervision, type SupervisionReport } from '../../src/commands/supervise/common.js';
import { initialState, recordRound } from '../../src/workflows/supervise-state.js';

const t0 = Date.parse('2026-12-07T21:00:00Z');

function report(watch?: SupervisionReport['watch']): SupervisionReport {
  const state = initialState(
    'c',
    { launchId: 'l1', servingSinceMs: t0, endpoint: 'http://10.0.0.1:8000' },
    t0,
  );
  recordRound(state, {
    atMs: t0 + 60_000,
    durationMs: 40,
    verdict: 'passed',
    checks: [{ name: 'health', host: 'a', ok: true, latencyMs: 4 }],
    failures: [],
    unreachable: {},
  });
  return {
    workflowId: 'liftoff-c-supervise',
    runId: 'r',
    runStatus: 'RUNNING',
    state,
    ...(watch ? { watch } : {}),
  };
}

describe('liftoff status: supervision', () => {
  it('shows the running watch with its start and last heartbeat', () => {
    const text = renderSupervision(
      report({ sinceMs: t0 + 61_000, lastHeartbeatMs: t0 + 300_000 }),
      t0 + 330_000,
    );
    assert.match(text, /^ {2}last probe: passed at 2026-12-07T21:01:00\.000Z \(health 4ms\)$/m);
    assert.match(
      text,
      /^ {2}watching: the worker runs the healthy rounds since 2026-12-07T21:01:01\.000Z and reports them every supervise\.reportEvery, or at once when one fails, last heard 30s ago$/m,
    );
  });

  it('has no watching line when no watch runs', () => {
    assert.doesNotMatch(renderSupervision(report(), t0 + 90_000), /watching/);
  });
});
