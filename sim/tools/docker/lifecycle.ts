// Ending containers: `docker rm`, `docker stop`, `docker kill`, and `docker wait` for the end.
import { hostDir } from '../../host-state.js';
import { daemonNoSuchContainer, err, noSuchContainer, out, parseOrFail, requireArgs } from './cli.js';
import { sleep } from './procs.js';
import {
  findContainer,
  isRunning,
  killContainerProcesses,
  observedContainer,
  readContainer,
  removeContainerState,
  updateContainer,
  type ContainerRecord,
  shimAlive,
} from './state.js';

/**
 * Runs `act` on each named container in turn, as rm, stop and kill do: a missing or refused container is
 * reported and makes the exit code 1 without stopping the rest. `act` returns the refusal, or undefined
 * once it has done its work, and then the name is echoed. `missing` words a missing container as the command
 * does; `missingIsDone`: it is reported but leaves the exit code alone, as `docker rm -f` does on a real engine
 * (20.10 and 28.x alike).
 */
async function eachContainer(
  dir: string,
  refs: string[],
  act: (rec: ContainerRecord, ref: string) => Promise<string | undefined>,
  missing: (ref: string) => string,
  missingIsDone = false,
): Promise<number> {
  let code = 0;
  for (const ref of refs) {
    const found = findContainer(dir, ref);
    const rec = found && observedContainer(dir, found);
    const refusal = rec ? await act(rec, ref) : missing(ref);
    if (refusal === undefined) {
      out(`${ref}\n`);
    } else {
      err(refusal);
      if (rec || !missingIsDone) code = 1;
    }
  }
  return code;
}

export async function cmdRm(args: string[]): Promise<number> {
  const f = parseOrFail('rm', args, { force: { short: 'f' }, volumes: { short: 'v' }, link: { short: 'l' } });
  if (typeof f === 'number') return f;
  const missing = requireArgs('rm', '[OPTIONS] CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const dir = hostDir();
  return eachContainer(
    dir,
    f.positionals,
    async (rec) => {
      if (isRunning(rec) && !f.has('force'))
        return `Error response from daemon: You cannot remove a running container ${rec.id}. Stop the container before attempting removal or force remove`;
      if (!(await killContainerProcesses(rec)))
        return `Error response from daemon: cannot remove container "/${rec.name}": could not kill: tried to kill container, but did not receive an exit event`;
      removeContainerState(dir, rec.name);
      return undefined;
    },
    noSuchContainer,
    f.has('force'),
  );
}

async function waitShimGone(rec: ContainerRecord, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (shimAlive(rec)) {
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
  return true;
}

/** After a SIGKILL the shim cannot record the exit; docker reports 137. */
function recordKilled(dir: string, rec: ContainerRecord): void {
  updateContainer(dir, rec.name, (r) => {
    if (r.status !== 'running') return;
    r.status = 'exited';
    r.exitCode = 137;
    r.finishedAt = new Date().toISOString();
  });
  const now = readContainer(dir, rec.name);
  if (now?.hostConfig.autoRemove) removeContainerState(dir, rec.name);
}

export async function cmdStop(args: string[]): Promise<number> {
  const f = parseOrFail('stop', args, {
    time: { short: 't', value: true },
    timeout: { value: true },
    signal: { short: 's', value: true },
  });
  if (typeof f === 'number') return f;
  const missing = requireArgs('stop', '[OPTIONS] CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const dir = hostDir();
  const seconds = Number(f.get('timeout') ?? f.get('time') ?? 10);
  const signal = normaliseSignal(f.get('signal') ?? 'SIGTERM');
  if (!signal) {
    err(`invalid signal: ${f.get('signal') ?? ''}`);
    return 125;
  }
  return eachContainer(
    dir,
    f.positionals,
    async (rec) => {
      if (isRunning(rec)) {
        try {
          process.kill(rec.pid, signal);
        } catch {
          // The main process is already gone; the shim is finishing.
        }
        if (!(await waitShimGone(rec, seconds * 1000))) {
          await killContainerProcesses(rec);
          recordKilled(dir, rec);
        }
      }
      return undefined;
    },
    daemonNoSuchContainer,
  );
}

function normaliseSignal(s: string): NodeJS.Signals | undefined {
  const upper = s.toUpperCase();
  const names: Record<string, NodeJS.Signals> = {
    '9': 'SIGKILL',
    '15': 'SIGTERM',
    '2': 'SIGINT',
    '1': 'SIGHUP',
  };
  if (names[upper]) return names[upper];
  const full = (upper.startsWith('SIG') ? upper : `SIG${upper}`) as NodeJS.Signals;
  return ['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'].includes(full)
    ? full
    : undefined;
}

export async function cmdKill(args: string[]): Promise<number> {
  const f = parseOrFail('kill', args, { signal: { short: 's', value: true } });
  if (typeof f === 'number') return f;
  const missing = requireArgs('kill', '[OPTIONS] CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const signal = normaliseSignal(f.get('signal') ?? 'KILL');
  if (!signal) {
    err(`invalid signal: ${f.get('signal') ?? ''}`);
    return 125;
  }
  const dir = hostDir();
  return eachContainer(
    dir,
    f.positionals,
    async (rec, ref) => {
      if (!isRunning(rec))
        return `Error response from daemon: Cannot kill container: ${ref}: Container ${rec.id} is not running`;
      if (signal === 'SIGKILL') {
        // Killing a container's PID 1 takes the whole container down at once.
        await killContainerProcesses(rec);
        recordKilled(dir, rec);
      } else {
        try {
          process.kill(rec.pid, signal);
        } catch {
          // Already gone.
        }
      }
      return undefined;
    },
    (ref) => `Error response from daemon: Cannot kill container: ${ref}: No such container: ${ref}`,
  );
}

export async function cmdWait(args: string[]): Promise<number> {
  const f = parseOrFail('wait', args, {});
  if (typeof f === 'number') return f;
  const missing = requireArgs('wait', 'CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const dir = hostDir();
  let code = 0;
  for (const ref of f.positionals) {
    const found = findContainer(dir, ref);
    if (!found) {
      err(daemonNoSuchContainer(ref));
      code = 1;
      continue;
    }
    let rec: ContainerRecord | undefined = found;
    while (rec && rec.status !== 'exited') {
      await sleep(100);
      const again = readContainer(dir, found.name);
      rec = again && observedContainer(dir, again);
    }
    out(`${rec?.exitCode ?? 0}\n`);
  }
  return code;
}
