// Running commands and finding/killing the processes a simulated cluster leaves behind.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}

/**
 * Runs a command to completion and never throws on a non-zero exit. Resolves shortly after the process
 * exits even if a detached grandchild (a container shim, say) still holds its stdout open.
 */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let settled = false;
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            child.kill('SIGKILL');
            stderr += `\n(killed after ${opts.timeoutMs} ms)`;
          }, opts.timeoutMs);
    const finish = (code: number): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({ code, stdout, stderr });
    };
    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => finish(code ?? (signal ? 128 : 1)));
    child.on('exit', (code, signal) => {
      setTimeout(() => finish(code ?? (signal ? 128 : 1)), 100).unref();
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

/** Like run, but a non-zero exit is an error that carries the command and its stderr. */
export async function runOk(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const res = await run(cmd, args, opts);
  if (res.code !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${res.code}: ${(res.stderr || res.stdout).trim()}`);
  }
  return res;
}

/** Runs fn over items with at most `limit` in flight; 2 cores choke on 64 parallel process spawns. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function allPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

interface ProcStat {
  state: string;
  ppid: number;
  pgid: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm may hold spaces and parentheses; the fields after its last ')' are fixed.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0] ?? '?', ppid: Number(rest[1]), pgid: Number(rest[2]) };
  } catch {
    return undefined;
  }
}

export function processGroupOf(pid: number): number | undefined {
  return readStat(pid)?.pgid;
}

/** Alive and not a zombie: a zombie holds no resources and answers kill(0). */
export function isRunning(pid: number): boolean {
  const st = readStat(pid);
  return st !== undefined && st.state !== 'Z' && st.state !== 'X';
}

export function readEnvVar(pid: number, name: string): string | undefined {
  try {
    const prefix = `${name}=`;
    for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      if (entry.startsWith(prefix)) return entry.slice(prefix.length);
    }
  } catch {
    // gone, or a kernel thread
  }
  return undefined;
}

/** Every descendant of the given roots (the roots included), from the ppid links in /proc. */
export function withDescendants(roots: Iterable<number>): Set<number> {
  const children = new Map<number, number[]>();
  for (const pid of allPids()) {
    const st = readStat(pid);
    if (!st) continue;
    const list = children.get(st.ppid) ?? [];
    list.push(pid);
    children.set(st.ppid, list);
  }
  const out = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.pop() as number;
    if (out.has(pid)) continue;
    out.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** Our own process and its ancestors: never to be killed while cleaning up. */
function selfAndAncestors(): Set<number> {
  const out = new Set<number>();
  let pid = process.pid;
  while (pid > 1 && !out.has(pid)) {
    out.add(pid);
    pid = readStat(pid)?.ppid ?? 0;
  }
  return out;
}

/** SIGKILLs the pids and waits until none of them runs; returns those still running at the deadline. */
export async function killAndWait(pids: Iterable<number>, timeoutMs = 5000): Promise<number[]> {
  const protectedPids = selfAndAncestors();
  const targets = [...new Set(pids)].filter((p) => p > 1 && !protectedPids.has(p));
  for (const pid of targets) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + timeoutMs;
  let left = targets.filter(isRunning);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(20);
    left = left.filter(isRunning);
  }
  return left;
}
