// Runs a command on a simulated host with the system's OpenSSH client, as a user would, to read the host's state.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { SimCluster } from '../../sim/cluster.js';

const run = promisify(execFile);

export async function sshRun(sim: SimCluster, host: string, command: string): Promise<string> {
  const { stdout } = await run('ssh', ['-F', sim.sshConfigPath, '-o', 'BatchMode=yes', host, command], {
    timeout: 30_000,
  });
  return stdout;
}
