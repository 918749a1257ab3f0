// One SSH connection and the commands run on it (Ssh2Session). exec takes only commands built by `sh`
// (quote.ts), caps the channels open at once (Slots), and stops a command that times out or is aborted. What a
// command promises (options, result, the session interface) is exec-contract.ts.
import { constants as osConstants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type ssh2 from 'ssh2';
import type { ClientChannel } from 'ssh2';
import {
  classifyForwardError,
  RemoteCommandError,
  RemoteTimeoutError,
  SshConnectError,
  type SshConnectErrorKind,
  type SshErrorEndpoint,
} from './errors.js';
import { defaultMaxOutputBytes, OutputTail } from './output-tail.js';
import { isRemoteCommand, type RemoteCommand } from './quote.js';
import { Slots } from './slots.js';
import {
  abortReason,
  notStarted,
  type ExecOptions,
  type ExecResult,
  type SshSession,
} from './exec-contract.js';
import { endpointOf, type SshTarget } from './target.js';

type Client = InstanceType<typeof ssh2.Client>;

/** How long close() waits for the host to answer the SSH goodbye before it cuts the connection. */
const closeGraceMs = 2_000;

export interface Ssh2SessionOptions {
  maxConcurrentExecs: number;
  /**
   * A channel that does not open within this long means the host or the path to it stopped answering: on a
   * connection kept open between activities, that is how a partition shows (a new connection would have hit its
   * connect timeout instead). The connection is then dropped, so the next command opens a new one.
   */
  channelOpenTimeoutMs: number;
  /**
   * The jump host's channel this connection runs over, when it has one. ssh2's own destroy() does nothing once
   * end() was called (the socket is no longer writable), so a tunnel whose far end never answers the close would
   * hold close() for ever; destroying the channel itself always ends it.
   */
  viaChannel?: Duplex;
}

export class Ssh2Session implements SshSession {
  private readonly endpoint: SshErrorEndpoint;
  private readonly slots: Slots;
  private lostReason: string | undefined;
  private closeDone: Promise<void> | undefined;

  constructor(
    readonly target: SshTarget,
    private readonly client: Client,
    /**
     * Settles once the connection is gone (dropped, or closed by either side): on the client's 'close' event,
     * listened to since before the handshake.
     */
    readonly closed: Promise<void>,
    private readonly opts: Ssh2SessionOptions,
  ) {
    this.endpoint = endpointOf(target);
    this.slots = new Slots(opts.maxConcurrentExecs);
    client.on('error', (err: Error) => {
      this.lostReason ??= err.message;
    });
    // The host ended the connection. Through a jump host this can come without a 'close' (the jump host's
    // channel stays half open until we end it), and ssh2 then refuses every command with "Not connected": the
    // connection counts as lost from here, so a pool replaces it instead of handing it out again.
    client.on('end', () => {
      this.lostReason ??= 'the host ended the connection';
    });
    void closed.then(() => {
      this.lostReason ??= 'connection closed';
    });
  }

  /** False once the connection has dropped or been closed; a pool then opens a new one. */
  get alive(): boolean {
    return this.lostReason === undefined && this.closeDone === undefined;
  }

  async exec(cmd: RemoteCommand, opts: ExecOptions = {}): Promise<ExecResult> {
    if (!isRemoteCommand(cmd)) throw new TypeError('SshSession.exec accepts only commands built with sh`…`');
    await this.slots.acquire(opts.signal);
    try {
      opts.signal?.throwIfAborted();
      if (!this.alive) throw this.notOpen(this.lostReason ?? 'closed');
      return await this.run(cmd, opts);
    } finally {
      this.slots.release();
    }
  }

  /** A command refused because the connection is gone: it never reached the host. */
  private notOpen(why: string, cause?: unknown): SshConnectError {
    const reason = `session is no longer open (${why})`;
    return notStarted(new SshConnectError(this.endpoint, 'closed', reason, cause ? { cause } : undefined));
  }

  private run(cmd: RemoteCommand, opts: ExecOptions): Promise<ExecResult> {
    const started = performance.now();
    const endpoint = this.endpoint;
    return new Promise<ExecResult>((resolve, reject) => {
      let settled = false;
      let channel: ClientChannel | undefined;
      let timer: NodeJS.Timeout | undefined;
      const maxOutputBytes = opts.maxOutputBytes ?? defaultMaxOutputBytes;
      const stdout = new OutputTail(maxOutputBytes);
      const stderr = new OutputTail(maxOutputBytes);
      const outDecoder = new StringDecoder('utf8');
      const errDecoder = new StringDecoder('utf8');
      let exit: { code: number | null; signal?: string } | undefined;

      const settle = (outcome: ExecResult | Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(openTimer);
        opts.signal?.removeEventListener('abort', onAbort);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      // The channel did not open in time (settling clears this timer): the connection is given up on, every
      // command on it fails now, and pools replace it.
      const openTimer = setTimeout(() => {
        const waited = this.opts.channelOpenTimeoutMs;
        this.lostReason ??= `no channel opened within ${waited} ms`;
        this.destroy();
        settle(
          new SshConnectError(
            endpoint,
            'timeout',
            `the host did not open a channel within ${waited} ms on an open connection; the connection is dropped`,
            {
              advice:
                'The host or the network path to it stopped answering; the next command opens a new connection.',
            },
          ),
        );
      }, this.opts.channelOpenTimeoutMs);
      // Ask the remote process to stop, then close the channel; sshd also closes the process's pipes.
      const stopRemote = () => {
        const open = channel;
        if (!open) return;
        sendSignal(open, 'TERM');
        const kill = setTimeout(() => {
          sendSignal(open, 'KILL');
          try {
            open.close();
          } catch {
            // closed in the meantime
          }
        }, 1_000);
        kill.unref();
        open.once('close', () => clearTimeout(kill));
      };
      const fail = (err: Error) => {
        if (settled) return;
        stopRemote();
        settle(err);
      };
      const onAbort = () => fail(abortReason(opts.signal));
      const deliver = (sink: (chunk: string) => void, chunk: string) => {
        if (chunk === '') return;
        try {
          sink(chunk);
        } catch (err) {
          fail(err instanceof Error ? err : new Error(String(err)));
        }
      };

      // A character split across the last chunk reaches the sink as the stream ends.
      const flush = (sink: ((chunk: string) => void) | undefined, decoder: StringDecoder) => {
        const rest = sink ? decoder.end() : '';
        if (rest) sink?.(rest);
      };

      opts.signal?.addEventListener('abort', onAbort, { once: true });
      const { timeoutMs } = opts;
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          const outcome = { command: cmd.text, timeoutMs, stdout: stdout.text(), stderr: stderr.text() };
          fail(new RemoteTimeoutError(endpoint, outcome, opts.secrets));
        }, timeoutMs);
      }

      const onOpen = (err: Error | undefined, opened: ClientChannel) => {
        clearTimeout(openTimer);
        if (err) {
          const advice =
            'The connection is open but the host refused a new session channel: check MaxSessions in its sshd_config.';
          const reason = `could not open a channel: ${err.message}`;
          settle(notStarted(new SshConnectError(endpoint, 'closed', reason, { cause: err, advice })));
          return;
        }
        channel = opened;
        if (settled) {
          // Timed out or aborted while the channel was opening.
          stopRemote();
          return;
        }
        opened.on('data', (data: Buffer) => {
          stdout.push(data);
          if (opts.onStdout) deliver(opts.onStdout, outDecoder.write(data));
        });
        opened.stderr.on('data', (data: Buffer) => {
          stderr.push(data);
          if (opts.onStderr) deliver(opts.onStderr, errDecoder.write(data));
        });
        opened.on('exit', (code: number | null, signal?: string) => {
          exit = { code, ...(signal ? { signal } : {}) };
        });
        opened.on('close', () => {
          if (settled) return;
          flush(opts.onStdout, outDecoder);
          flush(opts.onStderr, errDecoder);
          if (!exit) {
            const why = this.lostReason ?? 'channel closed without an exit status';
            const advice =
              'The command may have run, partly or fully, and may still be running: check the host before running it again.';
            settle(
              new SshConnectError(endpoint, 'closed', `connection lost while running a command (${why})`, {
                advice,
              }),
            );
            return;
          }
          const exitCode = exit.code ?? (exit.signal ? signalExitCode(exit.signal) : 255);
          const result: ExecResult = {
            exitCode,
            ...(exit.signal ? { signal: exit.signal } : {}),
            stdout: stdout.text(),
            stderr: stderr.text(),
            ...(opts.stdoutBytes ? { stdoutBytes: stdout.bytes() } : {}),
            ...(stdout.cutBytes > 0 ? { stdoutCutBytes: stdout.cutBytes } : {}),
            durationMs: Math.round(performance.now() - started),
          };
          const failed = (opts.check ?? true) && (exitCode !== 0 || exit.signal);
          settle(
            failed
              ? new RemoteCommandError(endpoint, { command: cmd.text, ...result }, opts.secrets)
              : result,
          );
        });
        opened.on('error', () => {
          // A channel error is followed by 'close', which settles.
        });
        // EOF on stdin, so a command that reads it does not wait forever.
        if (opts.stdin !== undefined) opened.end(opts.stdin);
        else opened.end();
      };

      try {
        this.client.exec(cmd.text, onOpen);
      } catch (err) {
        settle(this.notOpen((err as Error).message, err));
      }
    });
  }

  /** A TCP stream from this host to host:port (direct-tcpip), to carry the next hop's SSH connection. */
  tunnel(host: string, port: number, forEndpoint: SshErrorEndpoint, timeoutMs: number): Promise<Duplex> {
    const jumpError = (
      kind: SshConnectErrorKind,
      what: string,
      options?: { cause: unknown; advice?: string },
    ) => new SshConnectError(forEndpoint, kind, `jump host ${this.target.name} ${what}`, options);
    return new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(jumpError('timeout', `could not reach ${host}:${port} within ${timeoutMs} ms`));
      }, timeoutMs);
      try {
        this.client.forwardOut('127.0.0.1', 0, host, port, (err, stream) => {
          clearTimeout(timer);
          if (err) {
            const { kind, advice } = classifyForwardError(err);
            reject(jumpError(kind, `could not connect: ${err.message}`, { cause: err, advice }));
          } else resolve(stream);
        });
      } catch (err) {
        clearTimeout(timer);
        reject(jumpError('closed', 'session is closed', { cause: err }));
      }
    });
  }

  /** Ends the connection now, without the SSH goodbye: the socket (or the jump host's channel) is destroyed. */
  private destroy(): void {
    this.client.destroy();
    this.opts.viaChannel?.destroy();
  }

  close(): Promise<void> {
    this.closeDone ??= this.closeOnce();
    return this.closeDone;
  }

  private async closeOnce(): Promise<void> {
    this.client.end();
    // A host that does not answer the goodbye within the grace is cut off. A cut that is not confirmed either
    // (a jump host that never answers the channel's close) is given up on: closing must never hold a worker's
    // shutdown, and whatever is left dies with the jump host's connection.
    if (!(await settlesWithin(this.closed, closeGraceMs))) {
      this.destroy();
      await settlesWithin(this.closed, closeGraceMs);
    }
  }
}

/** Whether `promise` settled within `ms` (it goes on either way). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([promise.then(() => true), sleep(ms, false, { ref: false })]);
}

// Stopping a remote command: the signals sent over its channel and the exit status a signal means.
function signalExitCode(signal: string): number {
  const number = (osConstants.signals as Record<string, number | undefined>)[signal];
  return number === undefined ? 255 : 128 + number;
}

/** The parts of an ssh2 channel that Channel.signal itself uses. */
interface ChannelInternals {
  outgoing?: { id?: number; state?: string };
  _client?: { _protocol?: { signal?: (channelId: number, signalName: string) => void } };
}

/**
 * Sends an RFC 4254 "signal" request. ssh2's Channel.signal drops it once our side has sent EOF, and we
 * always send EOF on stdin so commands never wait for input; the protocol allows signals after EOF, so this
 * goes one level down to the same call Channel.signal makes.
 */
function sendSignal(channel: ClientChannel, signalName: 'TERM' | 'KILL'): void {
  const internals = channel as unknown as ChannelInternals;
  const id = internals.outgoing?.id;
  const protocol = internals._client?._protocol;
  try {
    if (
      id !== undefined &&
      (internals.outgoing?.state === 'open' || internals.outgoing?.state === 'eof') &&
      typeof protocol?.signal === 'function'
    ) {
      protocol.signal(id, signalName);
    } else {
      channel.signal(signalName);
    }
  } catch {
    // The channel or the connection is already gone: nothing left to signal.
  }
}
