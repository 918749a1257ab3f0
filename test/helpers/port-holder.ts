// A process that is not liftoff's holding a TCP port on a simulated host (in its network namespace), as a stray
// server would: returned once the host's own `ss` sees it listen.
import { spawn, type ChildProcess } from 'node:child_process';
import type { SimCluster, SimHost } from '../../sim/cluster.js';
import { sshRun } from './ssh.js';
import { waitUntil } from './wait.js';

export async function holdPort(
  sim: SimCluster,
  host: SimHost,
  port: number,
  address: string,
): Promise<ChildProcess> {
  if (!host.netns) throw new Error(`${host.name} runs in no network namespace`);
  const listen = `require('node:net').createServer().listen(${port}, ${JSON.stringify(address)})`;
  const holder = spawn('ip', ['netns', 'exec', host.netns, process.execPath, '-e', listen], {
    stdio: 'ignore',
  });
  try {
    await waitUntil(
      `port ${port} to be held on ${host.name}`,
      async () => (await sshRun(sim, host.name, `ss -Hltn 'sport = :${port}'`)).trim() !== '',
      10_000,
    );
  } catch (err) {
    holder.kill('SIGKILL');
    throw err;
  }
  return holder;
}
