// The simulated GPU registry across PID namespaces: a process in a real Docker container registers its pid as its
// container numbers it (often 1), and the host's nvidia-smi must find it by namespace, show its host pid, and forget
// it once it is gone (sim/pid-namespace.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { liveGpuProcesses, paths, registerGpuProcess, writeJson } from '../../sim/host-state.js';
import { PidNamespaces, ownPidNamespace, pidKey, startTicks } from '../../sim/pid-namespace.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait.js';

describe('GPU registry across PID namespaces', () => {
  it('names an entry by pid and namespace, so pid 1 of two containers are two entries', () => {
    assert.equal(pidKey(1, 'pid:[4026532390]'), '1@4026532390');
    assert.notEqual(pidKey(1, 'pid:[4026532390]'), pidKey(1, 'pid:[4026532398]'));
    assert.equal(new PidNamespaces().hostPid(ownPidNamespace() ?? '', process.pid), process.pid);
  });

  it('forgets a process whose pid another process took (pids wrap at pid_max)', () => {
    const dir = tempDir('liftoff-gpu-registry-');
    mkdirSync(paths.gpu(dir), { recursive: true });
    registerGpuProcess(dir, { pid: process.pid, processName: 'self', usedMiB: 10, gpuIndex: 0 });
    // The same live pid, registered by a process that started at another time: the pid was reused.
    writeJson(join(paths.gpu(dir), `${pidKey(process.pid)}-1.json`), {
      pid: process.pid,
      processName: 'killed-before',
      usedMiB: 85_000,
      gpuIndex: 1,
      startTicks: (startTicks(process.pid) ?? 0) + 1,
    });
    assert.deepEqual(
      liveGpuProcesses(dir).map((p) => p.processName),
      ['self'],
    );
  });

  it('finds a process of another PID namespace by its pid there, shows its host pid, and forgets it once it ends', async () => {
    const dir = tempDir('liftoff-gpu-registry-');
    mkdirSync(paths.gpu(dir), { recursive: true });
    registerGpuProcess(dir, { pid: process.pid, processName: 'self', usedMiB: 10, gpuIndex: 0 });
    // pid 1 of a PID namespace of its own, as a container's main process is.
    const contained = spawn('unshare', ['--pid', '--fork', '--kill-child', '--mount-proc', 'sleep', '60'], {
      stdio: 'ignore',
    });
    try {
      const sleeper = await waitFor(
        'the namespaced sleep',
        () => Promise.resolve(childOf(contained.pid ?? 0)),
        10_000,
      );
      const pidNamespace = readlinkSync(`/proc/${sleeper}/ns/pid`);
      assert.notEqual(pidNamespace, ownPidNamespace());
      writeJson(join(paths.gpu(dir), `${pidKey(1, pidNamespace)}-0.json`), {
        pid: 1,
        processName: 'python3',
        usedMiB: 500,
        gpuIndex: 0,
        pidNamespace,
      });
      // Pid 1 of another namespace that no process holds: gone, however alive this namespace's pid 1 is.
      writeJson(join(paths.gpu(dir), `${pidKey(1, 'pid:[1]')}-0.json`), {
        pid: 1,
        processName: 'ghost',
        usedMiB: 700,
        gpuIndex: 0,
        pidNamespace: 'pid:[1]',
      });
      // The start time stands in for the namespace only where the viewer may not read it (an SSH user that is not
      // root, of a root container's process: test/e2e/docker-nonroot.test.ts). Here it can, so a live process of
      // one namespace never answers for the same pid and start time in another (two containers started in one
      // clock tick).
      const others = new PidNamespaces();
      assert.equal(others.hostPid(pidNamespace, 1, startTicks(sleeper)), sleeper);
      assert.equal(others.hostPid('pid:[1]', 1, startTicks(sleeper)), undefined);
      // A removed container's namespace number is soon another container's (the kernel reuses it at once): its
      // pid 1 that started at another time is not the registered process.
      assert.equal(others.hostPid(pidNamespace, 1, (startTicks(sleeper) ?? 0) + 1), undefined);
      const seen = liveGpuProcesses(dir).map((p) => [p.processName, p.pid]);
      assert.deepEqual(seen.sort(), [
        ['python3', sleeper],
        ['self', process.pid],
      ]);
      contained.kill('SIGKILL');
      await waitFor(
        'the entry forgotten',
        () =>
          Promise.resolve(liveGpuProcesses(dir).every((p) => p.processName !== 'python3') ? true : undefined),
        10_000,
      );
      assert.deepEqual(
        liveGpuProcesses(dir).map((p) => p.processName),
        ['self'],
      );
    } finally {
      contained.kill('SIGKILL');
    }
  });
});

/** The first child of `pid` that runs (unshare --fork's), from /proc. */
function childOf(pid: number): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[1]) === pid && rest[0] !== 'Z') return Number(name);
    } catch {
      // gone
    }
  }
  return undefined;
}
