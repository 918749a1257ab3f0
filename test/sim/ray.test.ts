// The simulated `ray`: a head and a worker joined over real TCP on two loopback IPs, `ray status` in the
// fixture format, the GCS connection failure, the rayCannotReachHead fault, daemon mode and `ray stop`.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, readJson, writeFaults } from '../../sim/host-state.js';
import { eventually, killRayProcs, noRunningRay, useRaySimTools } from '../helpers/sim-host.js';

const fixture = readFileSync('/work/shared/fixtures/ray-status/two-nodes.txt', 'utf8');

const port = 16379 + Math.floor(Math.random() * 1000);

const vllmPace = { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.2, memoryMiB: 2048 };
const { run, background, makeHost } = useRaySimTools('liftoff-ray-test-', vllmPace);

/** Makes variable parts (ids, numbers, timestamps) comparable, keeping the text around them. */
function shape(text: string): string[] {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => line.replace(/node_[0-9a-f]{56}/, 'node_ID').replace(/\d+(\.\d+)?/g, 'N'));
}

function activeNodes(status: string): string[] {
  return status.split('\n').filter((l) => /^ 1 node_[0-9a-f]{56}$/.test(l));
}

describe('simulated ray', () => {
  const head = makeHost('head', '127.0.1.1');
  const worker = makeHost('worker', '127.0.1.2');
  const spare = makeHost('spare', '127.0.1.3');

  after(() => {
    // Daemonized heads are not our children: find them through the records they left.
    killRayProcs([head, worker, spare]);
  });

  it('joins a worker to the head over TCP; status shows both nodes and their GPUs, then drops a killed worker', async () => {
    const headProc = background(head, 'ray', [
      'start',
      '--head',
      '--block',
      '--port',
      String(port),
      '--node-ip-address',
      '127.0.1.1',
      '--disable-usage-stats',
    ]);
    await headProc.waitFor(/Ray runtime started\.[\s\S]*--block/);
    assert.match(headProc.output(), /^Usage stats collection is disabled\.\n\nLocal node IP: 127\.0\.1\.1\n/);
    assert.ok(headProc.output().includes(`ray start --address='127.0.1.1:${port}'`));
    const record = readJson<{ address: string; pid: number; memoryMonitorDisabled: boolean }>(
      join(head, 'ray', 'head.json'),
    );
    assert.equal(record?.address, `127.0.1.1:${port}`);
    // The shim execs node, so the spawned pid is the head process itself.
    assert.equal(record?.pid, headProc.child.pid);
    assert.equal(record?.memoryMonitorDisabled, false);

    const workerProc = background(worker, 'ray', [
      'start',
      '--block',
      `--address=127.0.1.1:${port}`,
      '--node-ip-address',
      '127.0.1.2',
    ]);
    await workerProc.waitFor(/Ray runtime started\./);

    const status = await run(head, 'ray', ['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.deepEqual(shape(status.stdout), shape(fixture), status.stdout);
    assert.equal(activeNodes(status.stdout).length, 2);
    assert.match(status.stdout, /^ 0\.0\/2\.0 GPU$/m);
    assert.match(status.stdout, /^ 0\.0\/40\.0 CPU$/m);

    // Any host finds the cluster: the worker through its own record, a bare host through --address.
    const fromWorker = await run(worker, 'ray', ['status']);
    assert.equal(activeNodes(fromWorker.stdout).length, 2, fromWorker.stderr);
    const fromElsewhere = await run(spare, 'ray', ['status', '--address', `127.0.1.1:${port}`]);
    assert.equal(activeNodes(fromElsewhere.stdout).length, 2, fromElsewhere.stderr);

    workerProc.child.kill('SIGKILL');
    await eventually(async () => activeNodes((await run(head, 'ray', ['status'])).stdout).length === 1);
    assert.match((await run(head, 'ray', ['status'])).stdout, /^ 0\.0\/1\.0 GPU$/m);

    // A worker cannot outlive its head.
    const second = background(worker, 'ray', ['start', '--block', '--address', `127.0.1.1:${port}`]);
    await second.waitFor(/Ray runtime started\./);
    headProc.child.kill('SIGKILL');
    assert.notEqual(await second.exited, 0);
    assert.match(second.output(), /raylet \[exit code=1\]/);

    // The head's record now names a dead process: that is no running instance.
    const afterHead = await run(head, 'ray', ['status']);
    assert.equal(afterHead.code, 1);
    assert.equal(afterHead.stderr.trim(), noRunningRay);
  });

  it('fails with the GCS message for a wrong port, a wrong IP, and the rayCannotReachHead fault', async () => {
    const headPort = port + 1;
    const headProc = background(head, 'ray', [
      'start',
      '--head',
      '--block',
      '--port',
      String(headPort),
      '--node-ip-address',
      '127.0.1.1',
    ]);
    await headProc.waitFor(/Ray runtime started\./);
    writeFaults(spare, { rayCannotReachHead: true });
    const [wrongPort, wrongIp, fault] = await Promise.all([
      run(worker, 'ray', ['start', '--block', '--address', `127.0.1.1:${headPort + 1}`]),
      // The head is bound to 127.0.1.1 only: the same port on another IP of this machine is closed.
      run(worker, 'ray', ['start', '--block', '--address', `127.0.1.2:${headPort}`]),
      run(spare, 'ray', ['start', '--block', '--address', `127.0.1.1:${headPort}`]),
    ]);
    writeFaults(spare, {});
    for (const [result, address] of [
      [wrongPort, `127.0.1.1:${headPort + 1}`],
      [wrongIp, `127.0.1.2:${headPort}`],
      [fault, `127.0.1.1:${headPort}`],
    ] as const) {
      assert.notEqual(result.code, 0);
      assert.ok(
        result.stderr.includes(`Failed to connect to GCS at address ${address} within 5 seconds.`),
        result.stderr,
      );
      assert.ok(result.seconds >= 4.5 && result.seconds < 9, `gave up after ${result.seconds}s`);
      assert.doesNotMatch(result.stdout, /Ray runtime started/);
    }
    const status = await run(head, 'ray', ['status']);
    assert.equal(activeNodes(status.stdout).length, 1);
    headProc.child.kill('SIGTERM');
    assert.equal(await headProc.exited, 0);
  });

  it('prints the ConnectionError when no head runs', async () => {
    const result = await run(spare, 'ray', ['status']);
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim(), noRunningRay);
    assert.equal(result.stdout, '');
  });

  it('daemonizes without --block, records the memory monitor setting, refuses a second head, and stops', async () => {
    const daemonPort = port + 5;
    const started = await run(
      spare,
      'ray',
      ['start', '--head', '--port', String(daemonPort), '--node-ip-address', '127.0.1.3'],
      { RAY_memory_monitor_refresh_ms: '0' },
    );
    assert.equal(started.code, 0, started.stdout + started.stderr);
    assert.match(started.stdout, /Ray runtime started\./);
    assert.doesNotMatch(started.stdout, /--block/);
    const record = readJson<{ pid: number; memoryMonitorRefreshMs: string; memoryMonitorDisabled: boolean }>(
      join(spare, 'ray', 'head.json'),
    );
    assert.ok(record && isAlive(record.pid));
    assert.equal(record.memoryMonitorRefreshMs, '0');
    assert.equal(record.memoryMonitorDisabled, true);

    const again = await run(spare, 'ray', [
      'start',
      '--head',
      '--block',
      '--port',
      String(daemonPort),
      '--node-ip-address',
      '127.0.1.3',
    ]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /Ray is trying to start at 127\.0\.1\.3:\d+, but is already running/);

    assert.equal(activeNodes((await run(spare, 'ray', ['status'])).stdout).length, 1);
    const stopped = await run(spare, 'ray', ['stop']);
    assert.equal(stopped.stdout.trim(), 'Stopped all 1 Ray processes.');
    assert.equal(isAlive(record.pid), false);
    assert.equal((await run(spare, 'ray', ['status'])).stderr.trim(), noRunningRay);
    assert.equal((await run(spare, 'ray', ['stop'])).stdout.trim(), 'Did not find any active Ray processes.');
  });
});
