// Metrics recorded from workflow code do not repeat on replay: every recorded history (test/histories: deploys
// that succeeded, failed, rolled back, supervisors that relaunched) replayed in a process whose Runtime exports
// Prometheus metrics as `liftoff worker --metrics` does, and /metrics then holds no liftoff series but the
// control the process recorded outside any workflow. (A worker that restarts replays its running workflows: were
// the meter not replay-aware, each restart would count their steps and outcomes again.)
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freeLoopbackPort } from '../../scripts/lib/free-port.js';

const child = fileURLToPath(new URL('./replay-metrics-child.ts', import.meta.url));

describe('replay and the metrics', () => {
  it('a replay of every recorded history records no liftoff series', async () => {
    const port = await freeLoopbackPort();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', child, `127.0.0.1:${port}`],
      { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const { replayed, names } = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as {
      replayed: number;
      names: string[];
    };
    assert.ok(replayed >= 9, `replayed ${replayed} histories`);
    assert.ok(names.includes('liftoff_replay_control'), `the control is served: ${names.join(', ')}`);
    const liftoff = names.filter((n) => n.startsWith('liftoff_') && n !== 'liftoff_replay_control');
    assert.deepEqual(liftoff, [], 'no liftoff series from workflow code during replay');
  });
});
