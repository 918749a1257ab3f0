// The open SSH connections of a simulated host, as its sshd's processes show them: what a test kills to end them
// the way a reboot or a crash of every sshd process would (restarting sshd alone leaves them open, and the
// worker keeps one per host between activities).
import { readFileSync } from 'node:fs';
import { withDescendants } from '../../sim/processes.js';
import { readSshdPid } from '../../sim/sshd.js';

function isSshd(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sshd';
  } catch {
    return false;
  }
}

/** SIGKILLs every sshd process of the host but its listener (and so every open connection); returns how many. */
export function killSshdConnections(hostDir: string): number {
  const listener = readSshdPid(hostDir);
  if (listener === undefined) return 0;
  let killed = 0;
  for (const pid of withDescendants([listener])) {
    if (pid === listener || !isSshd(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // it closed by itself meanwhile
    }
  }
  return killed;
}
