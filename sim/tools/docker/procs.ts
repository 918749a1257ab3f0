// Process bookkeeping shared by the simulated docker and systemctl. A container (or a unit) is a process
// group plus every process that carries its tag in the environment: real docker and systemd use cgroups,
// which also catch processes that left the group with setsid.
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync, readdirSync, statSync } from 'node:fs';
import { isAlive } from '../../host-state.js';
import { toolIo } from '../io.js';

export const containerTagVar = 'LIFTOFF_SIM_CONTAINER';
export const unitTagVar = 'LIFTOFF_SIM_UNIT';

function allPids(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (Number.isInteger(pid) && pid > 0) out.push(pid);
  }
  return out;
}

function processGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pgrp = Number(fields[2]);
    return Number.isInteger(pgrp) ? pgrp : undefined;
  } catch {
    return undefined;
  }
}

function hasEnvEntry(pid: number, entry: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry);
  } catch {
    return false;
  }
}

/**
 * Living (non-zombie) processes in the group or tagged with `tagVar=tagValue`, but the caller: the tool's own
 * process, or the client a tool server runs the call for (it carries the tag of a container it runs in).
 */
export function membersOf(scope: { pgid?: number; tagVar: string; tagValue: string }): number[] {
  const entry = `${scope.tagVar}=${scope.tagValue}`;
  const caller = toolIo().pid;
  return allPids().filter(
    (pid) =>
      pid !== process.pid &&
      pid !== caller &&
      ((scope.pgid !== undefined && processGroupOf(pid) === scope.pgid) || hasEnvEntry(pid, entry)) &&
      isAlive(pid),
  );
}

export function signalPids(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  return allPids().some((pid) => processGroupOf(pid) === pgid && isAlive(pid));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * SIGKILLs every member until none is left. Members may fork while dying, so the scan repeats.
 * Returns false if something survived the deadline.
 */
export async function killAll(
  scope: { pgid?: number; tagVar: string; tagValue: string },
  timeoutMs = 3000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // Never signal our own group wholesale: the shim cleans up the group it leads.
    if (scope.pgid !== undefined && scope.pgid !== processGroupOf(process.pid)) {
      try {
        process.kill(-scope.pgid, 'SIGKILL');
      } catch {
        // Group already empty.
      }
    }
    const left = membersOf(scope);
    if (left.length === 0) return true;
    signalPids(left, 'SIGKILL');
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}

/** Polls until no member is left or the time is up; true if none is left. */
export async function waitNoMembers(
  scope: { pgid?: number; tagVar: string; tagValue: string },
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (membersOf(scope).length > 0) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/**
 * How to start another simulated tool: through the running bundle when we are one (no shell, no PATH
 * lookup), else by name from PATH.
 */
export function toolCommand(tool: string): { command: string; args: string[] } {
  const bundle = process.argv[1];
  if (bundle && bundle.endsWith('simtool.mjs')) return { command: process.execPath, args: [bundle, tool] };
  return { command: tool, args: [] };
}

/** Resolves an executable the way execvp does, so a missing one fails like docker's runtime does. */
export function resolveExecutable(name: string, pathVar: string | undefined): string | undefined {
  const candidates = name.includes('/')
    ? [name]
    : (pathVar ?? '/usr/local/bin:/usr/bin:/bin')
        .split(':')
        .filter(Boolean)
        .map((d) => `${d}/${name}`);
  return candidates.find(isExecutableFile);
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Starts `argv` detached (its own session and process group), output appended to `logFd`. */
export function spawnDetached(
  argv: string[],
  opts: { env: NodeJS.ProcessEnv; logFd: number | 'ignore'; cwd?: string },
): number {
  const [command, ...args] = argv;
  if (!command) throw new Error('empty command');
  const child = spawn(command, args, {
    detached: true,
    stdio: ['ignore', opts.logFd, opts.logFd],
    env: opts.env,
    cwd: opts.cwd,
  });
  child.unref();
  if (child.pid === undefined) throw new Error(`cannot start ${command}`);
  return child.pid;
}
