// Reaching a simulated host from a test: with the system's OpenSSH client, as a user would, to read the host's
// state; or with liftoff's own SSH executor, one session for the length of a callback.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { SimCluster } from '../../sim/cluster.js';
import {
  SshPool,
  type SshAuth,
  type SshConnectOptions,
  type SshSession,
  type SshTarget,
} from '../../src/ssh/executor.js';

const run = promisify(execFile);

export async function sshRun(sim: SimCluster, host: string, command: string): Promise<string> {
  const { stdout } = await run('ssh', ['-F', sim.sshConfigPath, '-o', 'BatchMode=yes', host, command], {
    timeout: 30_000,
  });
  return stdout;
}

/** Opens a session to `target` (through its jump hosts, each verified); close() closes the whole chain. */
export async function openSshSession(
  target: SshTarget,
  auth: SshAuth,
  opts?: SshConnectOptions,
): Promise<SshSession> {
  const pool = new SshPool(auth, opts);
  try {
    const session = await pool.session(target);
    return { target, exec: (cmd, execOpts) => session.exec(cmd, execOpts), close: () => pool.closeAll() };
  } catch (err) {
    await pool.closeAll();
    throw err;
  }
}

/** One executor session to `target` for the length of `fn`, closed after however `fn` ends. */
export async function withSshSession<T>(
  target: SshTarget,
  auth: SshAuth,
  fn: (session: SshSession) => Promise<T>,
  opts?: SshConnectOptions,
): Promise<T> {
  const session = await openSshSession(target, auth, opts);
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}
