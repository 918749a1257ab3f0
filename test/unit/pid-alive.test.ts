// The one liveness check every pid read uses (the launch marker's pid, the head's poll, a Ray worker's container
// main process, multiproc ranks), run by /bin/sh on this machine: alive for a running process of any owner, dead
// for a gone pid and for a zombie. An SSH user that is not root, in the docker group, checks processes root owns (a
// container's main process), where `kill -0` answers "Operation not permitted".
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pidAliveCommand } from '../../src/host-commands/launch.js';

/** Runs the check as this process's user, or (with `asUid`) as that user with no groups. */
function check(pid: number, asUid?: number): boolean {
  const text = pidAliveCommand(pid).text;
  const res =
    asUid === undefined
      ? spawnSync('/bin/sh', ['-c', text], { encoding: 'utf8' })
      : spawnSync(
          'setpriv',
          [`--reuid=${asUid}`, `--regid=${asUid}`, '--clear-groups', '/bin/sh', '-c', text],
          { encoding: 'utf8' },
        );
  assert.ok(res.status === 0 || res.status === 1, `the check ran: ${res.status} ${res.stderr}`);
  return res.status === 0;
}

/** A process that runs until killed, and its pid. */
function sleeper(): { pid: number; stop: () => void } {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  const pid = child.pid;
  assert.ok(pid !== undefined);
  return { pid, stop: () => child.kill('SIGKILL') };
}

describe('pidAliveCommand', () => {
  it("is alive for the user's own running process", () => {
    const s = sleeper();
    try {
      assert.equal(check(s.pid), true);
    } finally {
      s.stop();
    }
  });

  it('is alive for a running process another user owns, checked by a user that is not root', () => {
    // As root: check this (root's) process as `nobody`. As another user: check PID 1, which root owns.
    const root = process.getuid?.() === 0;
    const target = root ? process.pid : 1;
    assert.notEqual(readFileSync(`/proc/${target}/status`, 'utf8').length, 0);
    assert.equal(check(target, root ? 65534 : undefined), true);
  });

  it('is dead for a pid that exited and was reaped', () => {
    const res = spawnSync('/bin/sh', ['-c', 'sleep 0 & p=$!; wait $p; echo $p'], { encoding: 'utf8' });
    const pid = Number(res.stdout.trim());
    assert.ok(Number.isInteger(pid) && pid > 0);
    assert.equal(check(pid), false);
  });

  it('is dead for a zombie (exited, its parent has not reaped it yet)', async () => {
    // The shell forks a child, then becomes `sleep`, which never reaps it. The child exits only once its parent is
    // `sleep` ($$ in a subshell is still the parent's pid): a child that ended before the exec could be reaped by
    // the shell, leaving no zombie to check.
    const script = 'while [ "$(cat /proc/$$/comm)" != sleep ]; do :; done';
    const parent = spawn('/bin/sh', ['-c', `( ${script} ) & echo $!; exec sleep 600`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const line = await new Promise<string>((resolve) =>
        parent.stdout.once('data', (d: Buffer) => resolve(d.toString())),
      );
      const pid = Number(line.trim());
      // Waits for the child to have exited (its state turns Z), reading the kernel's word, not a clock.
      for (;;) {
        const state = /^State:\s*(\S)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
        if (state === 'Z') break;
        await new Promise((r) => setImmediate(r));
      }
      assert.equal(check(pid), false);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
