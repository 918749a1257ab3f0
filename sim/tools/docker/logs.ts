// `docker logs`: the container's output file, whole, its tail, or followed while the container runs.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { hostDir } from '../../host-state.js';
import { FlagError, parseFlags, type FlagSpecs } from './args.js';
import { err, noSuchContainer, out, parseOrFail, requireArgs } from './cli.js';
import { sleep } from './procs.js';
import { containerPaths, findContainer, isRunning, observedContainer, readContainer } from './state.js';
import { toolIo } from '../io.js';

const logsFlags = {
  follow: { short: 'f' },
  tail: { short: 'n', value: true },
  timestamps: { short: 't' },
  since: { value: true },
  until: { value: true },
  details: {},
} satisfies FlagSpecs;

/** Whether `docker logs ARGS` follows the log (runs until the container stops); false when ARGS do not parse. */
export function logsFollow(args: string[]): boolean {
  try {
    return parseFlags(args, { help: {}, ...logsFlags }, true).has('follow');
  } catch (e) {
    if (e instanceof FlagError) return false;
    throw e;
  }
}

export async function cmdLogs(args: string[]): Promise<number> {
  const f = parseOrFail('logs', args, logsFlags);
  if (typeof f === 'number') return f;
  const missing = requireArgs('logs', '[OPTIONS] CONTAINER', f.positionals.length, 1, true);
  const ref = f.positionals[0];
  if (missing !== undefined || !ref) return missing ?? 1;
  const dir = hostDir();
  const rec = findContainer(dir, ref);
  if (!rec) {
    err(noSuchContainer(ref));
    return 1;
  }
  const tail = f.get('tail') ?? 'all';
  if (tail !== 'all' && !/^-?\d+$/.test(tail)) {
    err(`invalid value for "tail": ${tail}`);
    return 1;
  }
  const logFile = containerPaths.log(dir, rec.name);
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    // Nothing written yet.
  }
  const n = tail === 'all' ? -1 : Number(tail);
  if (n >= 0) {
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const kept = n === 0 ? [] : lines.slice(-n);
    out(kept.length ? `${kept.join('\n')}\n` : '');
  } else {
    out(text);
  }
  if (!f.has('follow')) return 0;
  let offset = Buffer.byteLength(text);
  for (;;) {
    const now = readContainer(dir, rec.name);
    const live = now && observedContainer(dir, now);
    offset = copyFrom(logFile, offset);
    if (!live || !isRunning(live)) return 0;
    await sleep(100);
  }
}

/** Copies a file (a path, or an open descriptor) from `offset` to stdout; returns the new offset. */
export function copyFrom(file: string | number, offset: number): number {
  let fd: number;
  try {
    fd = typeof file === 'number' ? file : openSync(file, 'r');
  } catch {
    return offset;
  }
  try {
    const buf = Buffer.alloc(64 * 1024);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, offset);
      if (n <= 0) return offset;
      toolIo().stdout(Buffer.from(buf.subarray(0, n)));
      offset += n;
    }
  } finally {
    if (typeof file !== 'number') closeSync(fd);
  }
}
