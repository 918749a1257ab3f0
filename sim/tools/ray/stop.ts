// `ray stop`: signals every Ray process this host started, then SIGKILLs what outlives the grace period.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { hostDir, isAlive, readJson, safeReaddir } from '../../host-state.js';
import { numberOption, parseFlags } from './args.js';
import { out } from './cli.js';
import { rayFiles } from './protocol.js';

export async function stop(rest: string[]): Promise<number> {
  const parsed = parseFlags(rest, {
    values: ['grace-period', 'g'],
    booleans: ['force', 'f', 'verbose', 'v'],
  });
  const force = parsed.booleans.has('force') || parsed.booleans.has('f');
  const graceSeconds = numberOption(parsed, 'grace-period') ?? 16;
  const dir = hostDir();
  const pids: number[] = [];
  for (const f of safeReaddir(rayFiles.procs(dir))) {
    const record = readJson<{ pid: number }>(join(rayFiles.procs(dir), f));
    if (record && isAlive(record.pid)) pids.push(record.pid);
    else rmSync(join(rayFiles.procs(dir), f), { force: true });
  }
  for (const pid of pids) signal(pid, force ? 'SIGKILL' : 'SIGTERM');
  const deadline = Date.now() + graceSeconds * 1000;
  while (pids.some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const pid of pids.filter(isAlive)) signal(pid, 'SIGKILL');
  while (pids.some(isAlive)) await new Promise((r) => setTimeout(r, 20));
  for (const pid of pids) rmSync(join(rayFiles.procs(dir), `${pid}.json`), { force: true });
  for (const shared of [rayFiles.head(dir), rayFiles.currentCluster(dir)]) {
    const record = readJson<{ pid: number }>(shared);
    if (record && !isAlive(record.pid)) rmSync(shared, { force: true });
  }
  out(pids.length ? `Stopped all ${pids.length} Ray processes.` : 'Did not find any active Ray processes.');
  return 0;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}
