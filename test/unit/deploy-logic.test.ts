// Pure pieces of the deploy: durations, retry budgets, and the follow renderer's lines.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDuration } from '../../src/config/duration.js';
import { budgeted } from '../../src/workflows/activity-options.js';
import { loadLine, progressBar } from '../../src/cli/follow.js';

describe('durations', () => {
  it('parses the forms a spec uses', () => {
    assert.equal(parseDuration('25m'), 25 * 60_000);
    assert.equal(parseDuration('10s'), 10_000);
    assert.equal(parseDuration('1h30m'), 90 * 60_000);
    assert.equal(parseDuration('500ms'), 500);
    for (const bad of ['', '10', '25 minutes', 'm', '-5s', '0s'])
      assert.equal(parseDuration(bad), undefined, bad);
  });
  it('formats for people', () => {
    assert.equal(formatDuration(671), '671ms');
    assert.equal(formatDuration(3600), '3.6s');
    assert.equal(formatDuration(35_000), '35s');
    assert.equal(formatDuration(14 * 60_000 + 5000), '14m5s');
  });
});

describe('budgeted', () => {
  const retry = { initialInterval: '2s', backoffCoefficient: 1.5, maximumInterval: '10s' };
  const attemptsWithin = (budget: string): number | undefined =>
    budgeted(budget, '1s', { startToCloseTimeout: '30s', retry }).retry?.maximumAttempts;
  it('fits attempts and backoff into the budget', () => {
    // 1 + (2+1) + (3+1) + (4.5+1) + (6.75+1) = 21.25 s for 5 attempts; a 6th needs 10+1 more.
    assert.equal(attemptsWithin('21250ms'), 5);
    assert.equal(attemptsWithin('21s'), 4);
    assert.equal(attemptsWithin('500ms'), 1, 'always at least one attempt');
  });
  it('grows linearly once the interval is capped', () => {
    const a = attemptsWithin('2m') ?? 0;
    const b = attemptsWithin('4m') ?? 0;
    assert.ok(b - a >= 10 && b - a <= 11, `${a} → ${b}`);
  });
});

describe('follow renderer', () => {
  const load = {
    phase: 'loading_weights',
    shardsDone: 20,
    shardsTotal: 39,
    etaS: 342,
    elapsedS: 360,
    health: 'refused' as const,
    lastLogAtMs: 0,
  };
  it('shows shard n/N, ETA and elapsed', () => {
    assert.equal(loadLine(load), 'loading_weights, shard 20/39, ETA 5m42s, elapsed 6m');
  });
  it('draws a bar proportional to the shards', () => {
    assert.equal(progressBar(load, 10), '[█████░░░░░] 51%');
    assert.equal(progressBar({ ...load, shardsDone: 39 }, 10), '[██████████] 100%');
  });
});
