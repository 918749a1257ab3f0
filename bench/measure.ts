// What the benchmark reads off processes, histories and hosts. No liftoff logic here: only measuring.
import { readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { isRecord, payloadValues, readHistoryEvents } from '../src/report/events.js';

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export const round = (x: number, digits = 2): number => Number(x.toFixed(digits));

export interface ProcessRun {
  code: number;
  ms: number;
  stdout: string;
  stderr: string;
  /** User + system CPU of the program and everything it waited for. */
  cpuSeconds: number;
}

/**
 * Runs a program to its end, timing the whole process and counting the CPU it and its descendants used
 * (bash's `times` after the program: what the control host spent on it).
 */
export function timeProcess(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ProcessRun> {
  const started = performance.now();
  const wrapped = ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'bench', cmd, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn('bash', wrapped, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - started;
      // `times` prints the shell's own user/system time, then its children's: "0m1.234s 0m0.567s".
      const lines = stderr.trimEnd().split('\n');
      const children = lines.at(-1) ?? '';
      const seconds = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
        (sum, m) => sum + Number(m[1]) * 60 + Number(m[2]),
        0,
      );
      resolve({
        code: code ?? -1,
        ms,
        stdout,
        stderr: lines.slice(0, -2).join('\n'),
        cpuSeconds: seconds,
      });
    });
  });
}

const clockTicksPerSecond = 100; // USER_HZ on Linux

export interface ProcessUsage {
  /** Peak resident set since the last resetPeakRss (VmHWM), MiB. */
  peakRssMiB: number;
  rssMiB: number;
  /** User + system CPU time over the process's life, seconds. */
  cpuSeconds: number;
}

export function processUsage(pid: number): ProcessUsage {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  // Fields after the parenthesised command name; utime and stime are the 14th and 15th of the whole line.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return {
    peakRssMiB: kib('VmHWM') / 1024,
    rssMiB: kib('VmRSS') / 1024,
    cpuSeconds: ticks / clockTicksPerSecond,
  };
}

/** Starts a new peak-RSS window for the process (Linux: writing 5 to clear_refs resets VmHWM). */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

export interface ActivityRun {
  type: string;
  /** The host the activity works on (its input's `host` or `head`). */
  host: string | undefined;
  attempts: number;
  /** When it completed; undefined when it failed or never ended. */
  completedAtMs: number | undefined;
}

/** Every activity of a history (as the client or a JSON export gives it), with its main host and attempts. */
export function activityRuns(history: unknown): ActivityRun[] {
  const scheduled = new Map<number, ActivityRun>();
  for (const e of readHistoryEvents(history)) {
    if (e.kind === 'activityTaskScheduled') {
      const activityType = isRecord(e.attrs.activityType) ? e.attrs.activityType.name : undefined;
      scheduled.set(e.eventId, {
        type: typeof activityType === 'string' ? activityType : '?',
        host: hostOf(payloadValues(e.attrs.input)[0]),
        attempts: 1,
        completedAtMs: undefined,
      });
      continue;
    }
    const run = scheduled.get(Number(e.attrs.scheduledEventId));
    if (!run) continue;
    if (e.kind === 'activityTaskStarted') run.attempts = Number(e.attrs.attempt ?? 1);
    if (e.kind === 'activityTaskCompleted') run.completedAtMs = e.timeMs;
  }
  return [...scheduled.values()];
}

function hostOf(input: unknown): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const rec = input as {
    host?: { target?: { name?: string }; ref?: { target?: { name?: string } } };
    head?: unknown;
  };
  // A host step's input names its host as a plan host (name, role, ref); the others pass the reference itself.
  if (rec.host?.target?.name) return rec.host.target.name;
  if (rec.host?.ref?.target?.name) return rec.host.ref.target.name;
  const head = rec.head as { target?: { name?: string }; ref?: { target?: { name?: string } } } | undefined;
  return head?.target?.name ?? head?.ref?.target?.name;
}

/** Busy and total jiffies of the whole machine, from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: total - idle, total };
}

/** CPU-seconds the machine was busy between two machineCpu() readings. */
export function cpuSecondsBetween(before: { busy: number }, after: { busy: number }): number {
  return (after.busy - before.busy) / clockTicksPerSecond;
}
