// The benchmark's own arithmetic (bench/measure.ts): what it reads off histories and processes must be right
// for its figures to mean anything.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { activityRuns, median, processUsage, timeProcess } from '../../bench/measure.js';

describe('bench measurements', () => {
  it('median of odd and even counts', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.ok(Number.isNaN(median([])));
  });

  it('attributes each activity of a recorded deploy to the host it works on, with its attempts', () => {
    const runs = activityRuns(JSON.parse(readFileSync('test/histories/deploy-succeeded.json', 'utf8')));
    const types = new Set(runs.map((r) => r.type));
    for (const t of ['preflightHost', 'stopServices', 'startRayHead', 'launchServe', 'checkServeHealth']) {
      assert.ok(types.has(t), `${t} is among the activities`);
    }
    const hosts = new Set(runs.flatMap((r) => (r.host ? [r.host] : [])));
    assert.deepEqual([...hosts].sort(), ['spark1', 'spark2']);
    // Only the activities about no one host have none: the worker's policy and the hosts' agreement.
    const hostless = new Set(runs.filter((r) => r.host === undefined).map((r) => r.type));
    assert.deepEqual([...hostless].sort(), ['checkHostsAgree', 'checkWorkerPolicy']);
    // The head runs the server: every serve activity is spark1's.
    assert.ok(runs.filter((r) => r.type === 'launchServe').every((r) => r.host === 'spark1'));
    assert.ok(runs.every((r) => r.attempts >= 1));
    // A successful deploy completed every activity it scheduled.
    assert.ok(runs.every((r) => Number.isFinite(r.completedAtMs)));
  });

  it('times a process and counts the CPU its children used', async () => {
    const run = await timeProcess('bash', [
      '-c',
      'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo done',
    ]);
    assert.equal(run.code, 0);
    assert.equal(run.stdout.trim(), 'done');
    assert.equal(run.stderr, '', 'the CPU report is taken out of stderr');
    assert.ok(run.cpuSeconds > 0, `some CPU was counted: ${run.cpuSeconds}`);
    assert.ok(run.cpuSeconds <= run.ms / 1000 + 0.05, 'a single-threaded loop uses at most its wall time');
  });

  it('reads this process’s peak RSS and CPU time from /proc', () => {
    const usage = processUsage(process.pid);
    assert.ok(usage.peakRssMiB >= usage.rssMiB && usage.rssMiB > 10, JSON.stringify(usage));
    assert.ok(usage.cpuSeconds > 0);
  });
});
