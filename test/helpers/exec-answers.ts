// What a step's judge reads: each of its commands' results by name, as runCommands hands them over. These build
// such answers for unit tests of the judges, so a test states only what a host printed and how it exited.
import type { ExecResult } from '../../src/ssh/executor.js';

/** A command that exited 0 and printed `stdout`; `extra` overrides any field. */
export const ok = (stdout: string, extra: Partial<ExecResult> = {}): ExecResult => ({
  exitCode: 0,
  stdout,
  stderr: '',
  durationMs: 1,
  ...extra,
});

/** A command that exited `exitCode` and printed only `stderr`. */
export const failed = (exitCode: number, stderr: string): ExecResult => ({
  exitCode,
  stdout: '',
  stderr,
  durationMs: 1,
});

/** The answers of one trip, keyed by command name. */
export const answers = (entries: Record<string, ExecResult>): Map<string, ExecResult> =>
  new Map(Object.entries(entries));
