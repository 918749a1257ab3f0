// The one SSH executor (ssh2). Every remote command of liftoff goes through SshSession.exec, which takes only
// commands built by `sh` (quote.ts). Host keys are checked against known_hosts before any command runs,
// jump hosts are reached through the jump host's own verified session, and a pool gives each activity one
// connection per host.
import { readFile } from 'node:fs/promises';
import { constants as osConstants, homedir } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import type { Duplex } from 'node:stream';
import ssh2 from 'ssh2';
import type { ClientChannel, ConnectConfig } from 'ssh2';
import {
  HostKeyMismatchError,
  HostKeyUnknownError,
  RemoteCommandError,
  RemoteTimeoutError,
  SshConnectError,
  type SshConnectErrorKind,
  type SshErrorEndpoint,
} from './errors.js';
import { blobKeyType, knownKeyTypes, loadKnownHosts, sshFingerprint, verifyHostKey } from './known-hosts.js';
import { defaultMaxOutputBytes, OutputTail } from './output-tail.js';
import { isRemoteCommand, type RemoteCommand } from './quote.js';

const { Client, utils: sshUtils } = ssh2;
type Client = InstanceType<typeof Client>;

export interface SshEndpoint {
  /** The host's name in the cluster spec; used in every message. */
  name: string;
  host: string;
  port: number;
  user: string;
}

export interface SshAuth {
  privateKeyPath?: string;
  useAgent?: boolean;
  knownHostsPath: string;
  /** Explicit opt-in; logs a loud warning on every connect. */
  insecureAcceptAnyHostKey?: boolean;
}

/** A host, reached through `jump` (itself possibly behind another jump) when set. */
export interface SshTarget extends SshEndpoint {
  jump?: SshTarget;
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
  /** Bytes cut from the front of stdout / stderr to keep within maxOutputBytes; absent when none were. */
  stdoutCutBytes?: number;
  stderrCutBytes?: number;
  durationMs: number;
}

export interface SshSession {
  exec(cmd: RemoteCommand, opts?: ExecOptions): Promise<ExecResult>;
  close(): Promise<void>;
  readonly target: SshTarget;
}

export interface SshConnectOptions {
  /** TCP connect + handshake + authentication, per hop (default 10 s). */
  connectTimeoutMs?: number;
  /** A dead link is noticed after interval × count without an answer (default 5 s × 3). */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** Channels open at once on one connection; sshd's MaxSessions defaults to 10 (default 8). */
  maxConcurrentExecs?: number;
  /** Where the insecureAcceptAnyHostKey warning goes (default console.warn). */
  warn?: (message: string) => void;
}

const defaults = {
  connectTimeoutMs: 10_000,
  keepaliveIntervalMs: 5_000,
  keepaliveCountMax: 3,
  maxConcurrentExecs: 8,
};

// The order ssh2 offers by default, so that putting the known types first keeps every other one available.
// Not `ssh-rsa`: that signs the key exchange with SHA-1. An RSA host key still works through rsa-sha2-256/512,
// which every OpenSSH since 7.2 (2016) signs with; only a server older than that would need SHA-1.
const hostKeyAlgorithms = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
] as const;
type HostKeyAlgorithm = (typeof hostKeyAlgorithms)[number];

function algorithmsForKeyType(keyType: string): HostKeyAlgorithm[] {
  if (keyType === 'ssh-rsa') return ['rsa-sha2-512', 'rsa-sha2-256'];
  return hostKeyAlgorithms.filter((a) => a === keyType);
}

export function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return `${homedir()}${path.slice(1)}`;
  return path;
}

function endpointOf(target: SshTarget): SshErrorEndpoint {
  const via: string[] = [];
  for (let hop = target.jump; hop; hop = hop.jump) via.unshift(hop.name);
  return {
    host: target.name,
    address: target.host,
    port: target.port,
    user: target.user,
    ...(via.length > 0 ? { via } : {}),
  };
}

interface SshLevelError extends Error {
  level?: string;
  code?: string;
}

function classifyConnectError(err: SshLevelError): SshConnectErrorKind {
  switch (err.level) {
    case 'client-authentication':
      return 'auth';
    case 'client-timeout':
      return 'timeout';
    case 'client-dns':
      return 'unreachable';
    case 'client-socket':
      switch (err.code) {
        case 'ECONNREFUSED':
          return 'refused';
        case 'ETIMEDOUT':
          return 'timeout';
        case 'ECONNRESET':
        case 'EPIPE':
          return 'closed';
        default:
          return 'unreachable';
      }
    default:
      return 'closed';
  }
}

/** Reasons a jump host gives when it cannot open the forwarded TCP connection. */
function classifyForwardError(err: Error & { reason?: number | string }): {
  kind: SshConnectErrorKind;
  advice?: string;
} {
  const text = err.message.toLowerCase();
  if (err.reason === 1 || text.includes('prohibited')) {
    return {
      kind: 'unreachable',
      advice:
        'The jump host refused to forward the connection: allow TCP forwarding for this user in its sshd_config (AllowTcpForwarding).',
    };
  }
  if (text.includes('refused')) return { kind: 'refused' };
  if (text.includes('timed out')) return { kind: 'timeout' };
  return { kind: 'unreachable' };
}

async function readPrivateKey(path: string, endpoint: SshErrorEndpoint): Promise<Buffer> {
  const fullPath = expandHome(path);
  let key: Buffer;
  try {
    key = await readFile(fullPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new SshConnectError(endpoint, 'auth', `cannot read private key file ${fullPath} (${code})`, {
      advice: 'Check privateKeyPath in the spec and that the worker process may read that file.',
    });
  }
  // Only the parser's verdict is reported, never the content: its errors name the format, not the bytes.
  const parsed = sshUtils.parseKey(key);
  if (parsed instanceof Error) {
    const encrypted = /encrypted|passphrase/i.test(parsed.message);
    throw new SshConnectError(
      endpoint,
      'auth',
      encrypted
        ? `private key ${fullPath} is protected by a passphrase`
        : `private key ${fullPath} cannot be parsed`,
      {
        advice: encrypted
          ? 'Load it into ssh-agent (ssh-add) and set useAgent, or point privateKeyPath at a key without a passphrase.'
          : 'Point privateKeyPath at an OpenSSH or PEM private key (ed25519, ecdsa or rsa).',
      },
    );
  }
  return key;
}

/** Bounds the channels open at once on one connection. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(size: number) {
    this.free = size;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

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

class Ssh2Session implements SshSession {
  readonly target: SshTarget;
  private readonly client: Client;
  private readonly endpoint: SshErrorEndpoint;
  private readonly slots: Slots;
  private readonly closedPromise: Promise<void>;
  private lostReason: string | undefined;
  private closing = false;
  /** Closed together with this session (the jump hosts it owns, outside a pool). */
  private readonly owned: SshSession[];

  /** `closed` settles on the client's 'close' event, listened to since before the handshake. */
  constructor(
    target: SshTarget,
    client: Client,
    closed: Promise<void>,
    maxConcurrentExecs: number,
    owned: SshSession[] = [],
  ) {
    this.target = target;
    this.client = client;
    this.endpoint = endpointOf(target);
    this.slots = new Slots(maxConcurrentExecs);
    this.owned = owned;
    this.closedPromise = closed;
    client.on('error', (err: Error) => {
      this.lostReason ??= err.message;
    });
    void closed.then(() => {
      this.lostReason ??= 'connection closed';
    });
  }

  /** False once the connection has dropped or been closed; a pool then opens a new one. */
  get alive(): boolean {
    return this.lostReason === undefined && !this.closing;
  }

  async exec(cmd: RemoteCommand, opts: ExecOptions = {}): Promise<ExecResult> {
    if (!isRemoteCommand(cmd)) throw new TypeError('SshSession.exec accepts only commands built with sh`…`');
    opts.signal?.throwIfAborted();
    await this.slots.acquire();
    try {
      opts.signal?.throwIfAborted();
      if (!this.alive) {
        throw new SshConnectError(
          this.endpoint,
          'closed',
          `session is no longer open (${this.lostReason ?? 'closed'})`,
        );
      }
      return await this.run(cmd, opts);
    } finally {
      this.slots.release();
    }
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

      const cleanup = () => {
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        cleanup();
        fn();
      };
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
      const onAbort = () => {
        settle(() => {
          stopRemote();
          const reason: unknown = opts.signal?.reason;
          reject(reason instanceof Error ? reason : new Error(`aborted: ${String(reason)}`));
        });
      };
      const deliver = (sink: ((chunk: string) => void) | undefined, chunk: string) => {
        if (!sink || chunk === '') return;
        try {
          sink(chunk);
        } catch (err) {
          settle(() => {
            stopRemote();
            reject(err instanceof Error ? err : new Error(String(err)));
          });
        }
      };

      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.timeoutMs !== undefined) {
        const timeoutMs = opts.timeoutMs;
        timer = setTimeout(() => {
          settle(() => {
            stopRemote();
            reject(
              new RemoteTimeoutError(
                endpoint,
                { command: cmd.text, timeoutMs, stdout: stdout.text(), stderr: stderr.text() },
                opts.secrets,
              ),
            );
          });
        }, timeoutMs);
      }

      const onOpen = (err: Error | undefined, opened: ClientChannel) => {
        if (err) {
          settle(() =>
            reject(
              new SshConnectError(endpoint, 'closed', `could not open a channel: ${err.message}`, {
                cause: err,
                advice:
                  'The connection is open but the host refused a new session channel: check MaxSessions in its sshd_config.',
              }),
            ),
          );
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
          settle(() => {
            if (opts.onStdout) {
              const restOut = outDecoder.end();
              if (restOut) opts.onStdout(restOut);
            }
            if (opts.onStderr) {
              const restErr = errDecoder.end();
              if (restErr) opts.onStderr(restErr);
            }
            if (!exit) {
              reject(
                new SshConnectError(
                  endpoint,
                  'closed',
                  `connection lost while running a command (${this.lostReason ?? 'channel closed without an exit status'})`,
                  {
                    advice:
                      'The command may have run, partly or fully, and may still be running: check the host before running it again.',
                  },
                ),
              );
              return;
            }
            const durationMs = Math.round(performance.now() - started);
            const exitCode = exit.code ?? (exit.signal ? signalExitCode(exit.signal) : 255);
            const result: ExecResult = {
              exitCode,
              ...(exit.signal ? { signal: exit.signal } : {}),
              stdout: stdout.text(),
              stderr: stderr.text(),
              ...(opts.stdoutBytes ? { stdoutBytes: stdout.bytes() } : {}),
              ...(stdout.cutBytes > 0 ? { stdoutCutBytes: stdout.cutBytes } : {}),
              ...(stderr.cutBytes > 0 ? { stderrCutBytes: stderr.cutBytes } : {}),
              durationMs,
            };
            if ((opts.check ?? true) && (exitCode !== 0 || exit.signal)) {
              reject(new RemoteCommandError(endpoint, { command: cmd.text, ...result }, opts.secrets));
              return;
            }
            resolve(result);
          });
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
        settle(() =>
          reject(
            new SshConnectError(endpoint, 'closed', `session is no longer open (${(err as Error).message})`, {
              cause: err,
            }),
          ),
        );
      }
    });
  }

  /** A TCP stream from this host to host:port (direct-tcpip), to carry the next hop's SSH connection. */
  tunnel(host: string, port: number, forEndpoint: SshErrorEndpoint, timeoutMs: number): Promise<Duplex> {
    const jumpName = this.target.name;
    return new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new SshConnectError(
            forEndpoint,
            'timeout',
            `jump host ${jumpName} could not reach ${host}:${port} within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      try {
        this.client.forwardOut('127.0.0.1', 0, host, port, (err, stream) => {
          clearTimeout(timer);
          if (err) {
            const { kind, advice } = classifyForwardError(err);
            reject(
              new SshConnectError(
                forEndpoint,
                kind,
                `jump host ${jumpName} could not connect: ${err.message}`,
                {
                  cause: err,
                  ...(advice ? { advice } : {}),
                },
              ),
            );
            return;
          }
          resolve(stream);
        });
      } catch (err) {
        clearTimeout(timer);
        reject(
          new SshConnectError(forEndpoint, 'closed', `jump host ${jumpName} session is closed`, {
            cause: err,
          }),
        );
      }
    });
  }

  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      this.client.end();
      const forced = setTimeout(() => this.client.destroy(), 2_000);
      forced.unref();
      await this.closedPromise;
      clearTimeout(forced);
    }
    await this.closedPromise;
    for (const session of this.owned) await session.close();
  }
}

interface Hop {
  target: SshTarget;
  auth: SshAuth;
  settings: Required<Omit<SshConnectOptions, 'warn'>> & { warn: (message: string) => void };
  /** The verified session to the jump host, when this hop goes through one. */
  via?: Ssh2Session;
}

async function connectHop(hop: Hop, owned: SshSession[] = []): Promise<Ssh2Session> {
  const { target, auth, settings } = hop;
  const endpoint = endpointOf(target);
  const knownHostsPath = expandHome(auth.knownHostsPath);

  const config: ConnectConfig = {
    host: target.host,
    port: target.port,
    username: target.user,
    readyTimeout: settings.connectTimeoutMs,
    keepaliveInterval: settings.keepaliveIntervalMs,
    keepaliveCountMax: settings.keepaliveCountMax,
  };
  if (auth.privateKeyPath) config.privateKey = await readPrivateKey(auth.privateKeyPath, endpoint);
  if (auth.useAgent) {
    const agent = process.env.SSH_AUTH_SOCK;
    if (!agent) {
      throw new SshConnectError(endpoint, 'auth', 'useAgent is set but SSH_AUTH_SOCK is not', {
        advice: 'Start ssh-agent for the worker process and export SSH_AUTH_SOCK, or set privateKeyPath.',
      });
    }
    config.agent = agent;
  }
  if (!config.privateKey && !config.agent) {
    throw new SshConnectError(endpoint, 'auth', 'no credentials configured', {
      advice: 'Set privateKeyPath or useAgent in the ssh section of the spec.',
    });
  }

  let rejection: Error | undefined;
  if (auth.insecureAcceptAnyHostKey) {
    config.hostVerifier = (key: Buffer) => {
      settings.warn(
        `WARNING: host key of ${target.name} (${target.host}:${target.port}) was NOT verified ` +
          `(insecureAcceptAnyHostKey is set); accepted ${blobKeyType(key) ?? 'key'} ${sshFingerprint(key)}. ` +
          `Anyone on the network path can impersonate this host. Remove the option and trust the host key instead.`,
      );
      return true;
    };
  } else {
    const { entries } = await loadKnownHosts(knownHostsPath);
    const knownTypes = knownKeyTypes(entries, target.host, target.port);
    const preferred = knownTypes.flatMap(algorithmsForKeyType);
    // Ask for a key type we know first, so a host with several keys offers the one we can check.
    config.algorithms = {
      serverHostKey: [...new Set([...preferred, ...hostKeyAlgorithms])],
    };
    config.hostVerifier = (key: Buffer) => {
      const verdict = verifyHostKey(entries, target.host, target.port, key);
      switch (verdict.status) {
        case 'trusted':
          return true;
        case 'unknown':
          rejection = new HostKeyUnknownError(endpoint, verdict.keyType, verdict.fingerprint, knownHostsPath);
          return false;
        case 'revoked':
          rejection = new HostKeyMismatchError(endpoint, {
            keyType: verdict.keyType,
            gotFingerprint: verdict.fingerprint,
            expectedFingerprints: [],
            knownHostsPath,
            revoked: true,
          });
          return false;
        case 'mismatch':
          rejection = new HostKeyMismatchError(endpoint, {
            keyType: verdict.keyType,
            gotFingerprint: verdict.fingerprint,
            expectedFingerprints: verdict.expected.map((e) => `${e.keyType} ${e.fingerprint}`),
            knownHostsPath,
          });
          return false;
      }
    };
  }

  if (hop.via)
    config.sock = await hop.via.tunnel(target.host, target.port, endpoint, settings.connectTimeoutMs);

  const client = new Client();
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      client.removeListener('ready', onReady);
      client.removeListener('error', onError);
      client.removeListener('close', onClose);
      if (err) {
        client.destroy();
        reject(err);
      } else resolve();
    };
    const onReady = () => finish();
    const onError = (err: SshLevelError) => {
      if (rejection) {
        finish(rejection);
        return;
      }
      finish(new SshConnectError(endpoint, classifyConnectError(err), err.message, { cause: err }));
    };
    const onClose = () => {
      finish(rejection ?? new SshConnectError(endpoint, 'closed', 'connection closed during the handshake'));
    };
    client.on('ready', onReady);
    client.on('error', onError);
    client.on('close', onClose);
    // Errors after the handshake are recorded by the session; this keeps them from being unhandled meanwhile.
    client.on('error', () => {});
    try {
      client.connect(config);
    } catch (err) {
      finish(new SshConnectError(endpoint, 'auth', (err as Error).message, { cause: err }));
    }
  });
  return new Ssh2Session(target, client, closed, settings.maxConcurrentExecs, owned);
}

function resolveSettings(opts: SshConnectOptions = {}): Hop['settings'] {
  return {
    connectTimeoutMs: opts.connectTimeoutMs ?? defaults.connectTimeoutMs,
    keepaliveIntervalMs: opts.keepaliveIntervalMs ?? defaults.keepaliveIntervalMs,
    keepaliveCountMax: opts.keepaliveCountMax ?? defaults.keepaliveCountMax,
    maxConcurrentExecs: opts.maxConcurrentExecs ?? defaults.maxConcurrentExecs,
    warn: opts.warn ?? ((message: string) => console.warn(message)),
  };
}

/** The session to `target` owns the sessions to its jump hosts: closing it closes the whole chain. */
async function openChain(target: SshTarget, auth: SshAuth, settings: Hop['settings']): Promise<Ssh2Session> {
  if (!target.jump) return connectHop({ target, auth, settings });
  const via = await openChain(target.jump, auth, settings);
  try {
    return await connectHop({ target, auth, settings, via }, [via]);
  } catch (err) {
    await via.close();
    throw err;
  }
}

/** Opens a session to `target` (through its jump hosts, each verified); close() closes the whole chain. */
export async function openSshSession(
  target: SshTarget,
  auth: SshAuth,
  opts?: SshConnectOptions,
): Promise<SshSession> {
  return openChain(target, auth, resolveSettings(opts));
}

export interface OfferedHostKey {
  /** ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, … */
  keyType: string;
  /** The key blob in SSH wire format, as known_hosts stores it (base64). */
  key: Buffer;
  /** `SHA256:…` as ssh-keygen -l prints it. */
  fingerprint: string;
}

/**
 * The host key `target` offers, for `liftoff trust`. Its jump hosts are verified and logged into as usual
 * (a tunnel needs a session); the target itself is neither verified nor logged into: the connection ends as
 * soon as the key exchange completes, so no credential is offered and nothing runs there. The key exchange
 * completing means the server signed it with the private half of the key it offered. When known_hosts already
 * lists key types for the target, those are asked for first, as connecting does, so that the answer is the
 * key a connection would be judged on.
 */
export async function fetchOfferedHostKey(
  target: SshTarget,
  auth: SshAuth,
  opts?: SshConnectOptions,
): Promise<OfferedHostKey> {
  const settings = resolveSettings(opts);
  const endpoint = endpointOf(target);
  const via = target.jump ? await openChain(target.jump, auth, settings) : undefined;
  try {
    const { entries } = await loadKnownHosts(expandHome(auth.knownHostsPath));
    const preferred = knownKeyTypes(entries, target.host, target.port).flatMap(algorithmsForKeyType);
    const config: ConnectConfig = {
      host: target.host,
      port: target.port,
      username: target.user,
      readyTimeout: settings.connectTimeoutMs,
      algorithms: { serverHostKey: [...new Set([...preferred, ...hostKeyAlgorithms])] },
    };
    if (via) config.sock = await via.tunnel(target.host, target.port, endpoint, settings.connectTimeoutMs);
    return await keyExchangeOnly(config, endpoint);
  } finally {
    await via?.close();
  }
}

function keyExchangeOnly(config: ConnectConfig, endpoint: SshErrorEndpoint): Promise<OfferedHostKey> {
  const client = new Client();
  return new Promise<OfferedHostKey>((resolve, reject) => {
    let offered: Buffer | undefined;
    let outcome: { key: OfferedHostKey } | { error: Error } | undefined;
    const settle = () => {
      if (!outcome)
        outcome = {
          error: new SshConnectError(endpoint, 'closed', 'connection closed during the key exchange'),
        };
      if ('key' in outcome) resolve(outcome.key);
      else reject(outcome.error);
    };
    // Settle on 'close' only, so the socket (or the jump host's tunnel) is gone before the caller moves on.
    client.once('close', settle);
    client.on('error', (err: SshLevelError) => {
      outcome ??= {
        error: new SshConnectError(endpoint, classifyConnectError(err), err.message, { cause: err }),
      };
    });
    client.on('handshake', () => {
      if (!offered) return;
      const keyType = blobKeyType(offered) ?? 'unknown-key-type';
      outcome ??= { key: { keyType, key: offered, fingerprint: sshFingerprint(offered) } };
      // ssh2 asks for the user-auth service right after this event; ending here means that request is never
      // written (the socket is no longer writable), and the server sees a disconnect before any login.
      client.end();
      const forced = setTimeout(() => client.destroy(), 2_000);
      forced.unref();
      client.once('close', () => clearTimeout(forced));
    });
    try {
      client.connect({
        ...config,
        hostVerifier: (key: Buffer) => {
          offered = Buffer.from(key);
          return true;
        },
        // Never offer a credential to a host we have not verified, even if the handshake were to go on.
        // (An empty list of methods: ssh2 gives up at once, without even trying `none`.)
        authHandler: [],
      });
    } catch (err) {
      outcome = { error: new SshConnectError(endpoint, 'closed', (err as Error).message, { cause: err }) };
      client.destroy();
      settle();
    }
  });
}

function targetKey(target: SshTarget): string {
  const self = `${target.user}@${target.host}:${target.port}`;
  return target.jump ? `${self} via ${targetKey(target.jump)}` : self;
}

function depth(target: SshTarget): number {
  return target.jump ? 1 + depth(target.jump) : 0;
}

/**
 * Per-activity pool: one connection per host, reused by every command of the activity (jump hosts included,
 * shared by all hosts behind them); closeAll at the end. A dropped connection is replaced on the next
 * session() call; a failed connect is not cached.
 */
export class SshPool {
  private readonly auth: SshAuth;
  private readonly settings: Hop['settings'];
  private readonly sessions = new Map<string, { target: SshTarget; session: Promise<Ssh2Session> }>();
  private opened = 0;
  private closed = false;

  constructor(auth: SshAuth, opts?: SshConnectOptions) {
    this.auth = auth;
    this.settings = resolveSettings(opts);
  }

  /** SSH handshakes this pool has started (each hop counts once). */
  get connectionsOpened(): number {
    return this.opened;
  }

  async session(target: SshTarget): Promise<SshSession> {
    return this.get(target);
  }

  private async get(target: SshTarget): Promise<Ssh2Session> {
    if (this.closed) throw new Error('SshPool.session called after closeAll');
    const key = targetKey(target);
    const cached = this.sessions.get(key);
    if (cached) {
      const session = await cached.session.catch(() => undefined);
      if (session?.alive) return session;
      if (this.sessions.get(key) === cached) this.sessions.delete(key);
      if (session) void session.close();
      // Another caller may have replaced it while we waited.
      const replaced = this.sessions.get(key);
      if (replaced) return this.get(target);
    }
    const session = (async () => {
      const via = target.jump ? await this.get(target.jump) : undefined;
      this.opened++;
      return connectHop({ target, auth: this.auth, settings: this.settings, ...(via ? { via } : {}) });
    })();
    const entry = { target, session };
    this.sessions.set(key, entry);
    session.catch(() => {
      if (this.sessions.get(key) === entry) this.sessions.delete(key);
    });
    return session;
  }

  async closeAll(): Promise<void> {
    this.closed = true;
    const entries = [...this.sessions.values()];
    this.sessions.clear();
    // Hosts behind a jump first, so their tunnels close before the jump connection does.
    const depths = [...new Set(entries.map((e) => depth(e.target)))].sort((a, b) => b - a);
    for (const d of depths) {
      await Promise.all(
        entries
          .filter((e) => depth(e.target) === d)
          .map(async (e) => {
            const session = await e.session.catch(() => undefined);
            await session?.close();
          }),
      );
    }
  }
}
