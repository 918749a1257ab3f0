// What running a command on a host promises, whatever carries it: the options a caller may give (timeout, stdin,
// output bounds, the secrets to redact), the result, and the session interface the pools hand out.
import type { RemoteCommand } from './quote.js';
import type { SshTarget } from './target.js';

/**
 * Errors of commands that never reached the host (no channel was opened for them): running them again on a new
 * connection cannot run them twice. A pool retries these once when the connection turns out dead.
 */
const neverStarted = new WeakSet<Error>();

export function commandNeverStarted(err: unknown): boolean {
  return err instanceof Error && neverStarted.has(err);
}

export function notStarted<E extends Error>(err: E): E {
  neverStarted.add(err);
  return err;
}

/** What an aborted command or wait rejects with: the signal's reason, as an Error. */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error(`aborted: ${String(reason)}`);
}

export interface ExecOptions {
  timeoutMs?: number;
  stdin?: string;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  /** Throw RemoteCommandError on a non-zero exit or a signal (default true). */
  check?: boolean;
  signal?: AbortSignal;
  /**
   * The most bytes of each stream kept in the result: the tail, after a line saying how much was cut
   * (default 1 MiB). onStdout/onStderr still see every chunk.
   */
  maxOutputBytes?: number;
  /** Also return stdout as the bytes received (ExecResult.stdoutBytes), for reads that count bytes. */
  stdoutBytes?: boolean;
  /**
   * Values this command handles (sent on stdin, exported on the host) that its errors must not show: they are
   * redacted from the command's output before the error cuts it to a tail.
   */
  secrets?: readonly string[];
}

export interface ExecResult {
  /** The exit status; 128 + signal number when the command was killed by a signal, as shells report it. */
  exitCode: number;
  /** `SIGTERM`, … when the command was killed by a signal. */
  signal?: string;
  stdout: string;
  stderr: string;
  /** With ExecOptions.stdoutBytes: stdout's kept bytes, undecoded. */
  stdoutBytes?: Buffer;
  /** Bytes cut from the front of stdout to keep within maxOutputBytes; absent when none were. */
  stdoutCutBytes?: number;
  durationMs: number;
}

export interface SshSession {
  exec(cmd: RemoteCommand, opts?: ExecOptions): Promise<ExecResult>;
  close(): Promise<void>;
  readonly target: SshTarget;
}
