// Typed failures of the SSH layer. Each message names the host and says what to do next, and each error
// flattens to plain data (toFailureDetails) so the activity layer can turn it into an ApplicationFailure.
// Nothing here ever holds key material: only paths, fingerprints and command text.
import { knownHostsName } from './known-hosts.js';
import { shellQuote } from './quote.js';
import { redactedTail } from '../shared/secrets.js';
import { sentence } from '../shared/text.js';

export type SshConnectErrorKind = 'refused' | 'timeout' | 'unreachable' | 'auth' | 'closed';

/** Where a connection went: `user@host:port`, plus the jump chain when there is one. */
export interface SshErrorEndpoint {
  /** The host's name in the cluster spec. */
  host: string;
  address: string;
  port: number;
  user: string;
  /** Names of jump hosts, outermost first. */
  via?: string[];
}

export function describe(endpoint: SshErrorEndpoint): string {
  const via = endpoint.via && endpoint.via.length > 0 ? ` via ${endpoint.via.join(' -> ')}` : '';
  return `${endpoint.host} (${endpoint.user}@${endpoint.address}:${endpoint.port}${via})`;
}

// What kind of failure an ssh2 error is, so messages and retries can tell a refused login from an unreachable host
// or a dropped link.
export interface SshLevelError extends Error {
  level?: string;
  code?: string;
}

export function classifyConnectError(err: SshLevelError): SshConnectErrorKind {
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
export function classifyForwardError(err: Error & { reason?: number | string }): {
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

export abstract class SshError extends Error {
  abstract readonly retryable: boolean;
  readonly host: string;

  protected constructor(
    readonly endpoint: SshErrorEndpoint,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.host = endpoint.host;
  }

  /** Error-specific fields, all JSON-safe. */
  abstract data(): Record<string, JsonValue>;
}

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

const connectAdvice: Record<SshConnectErrorKind, string> = {
  refused:
    'Nothing accepts SSH connections at that address and port: check that sshd runs on the host and that the port in the spec is right.',
  timeout:
    'The host did not answer in time: check that it is up, that the address is right and that no firewall drops SSH.',
  unreachable:
    'There is no route to the host: check the address in the spec, DNS, and the network path (or jumpHost).',
  auth: 'The host rejected our credentials: check the user, that the public key of privateKeyPath is in ~/.ssh/authorized_keys on the host, or that ssh-agent holds the key.',
  closed:
    'The connection closed unexpectedly: check the sshd log on the host (MaxStartups, MaxSessions, a reboot or a dropped link).',
};

export class SshConnectError extends SshError {
  override readonly name = 'SshConnectError';
  readonly retryable: boolean;

  constructor(
    endpoint: SshErrorEndpoint,
    readonly kind: SshConnectErrorKind,
    /** The underlying reason, e.g. `connect ECONNREFUSED 127.0.0.1:22`. */
    readonly reason: string,
    options?: { cause?: unknown; advice?: string; final?: boolean },
  ) {
    super(
      endpoint,
      `SSH to ${describe(endpoint)} failed (${kind}): ${sentence(reason)} ${options?.advice ?? connectAdvice[kind]}`,
      options,
    );
    // Wrong credentials stay wrong however often we retry, as does a host whose sshd offers nothing we accept
    // (`final`); everything else may be a passing network state.
    this.retryable = kind !== 'auth' && !options?.final;
  }

  data(): Record<string, JsonValue> {
    return { kind: this.kind, reason: this.reason };
  }
}

export class HostKeyUnknownError extends SshError {
  override readonly name = 'HostKeyUnknownError';
  readonly retryable = false;

  constructor(
    endpoint: SshErrorEndpoint,
    readonly keyType: string,
    readonly fingerprint: string,
    readonly knownHostsPath: string,
  ) {
    // The advice is a command to paste: every word from a spec or the worker's settings is quoted.
    const scan = `ssh-keyscan ${endpoint.port === 22 ? '' : `-p ${endpoint.port} `}${shellQuote(endpoint.address)}`;
    const jump = endpoint.via?.[endpoint.via.length - 1];
    // Behind a jump host the address may mean nothing from here: the scan has to run where we connect from.
    const howToAdd = jump
      ? `run \`${scan}\` on the jump host ${jump} and append its output to ${shellQuote(knownHostsPath)}`
      : `${scan} >> ${shellQuote(knownHostsPath)}`;
    super(
      endpoint,
      `Host key of ${describe(endpoint)} is not in ${knownHostsPath}: it offered ${keyType} ${fingerprint}. ` +
        `Check that fingerprint on the host itself (ssh-keygen -lf /etc/ssh/ssh_host_${shortKeyType(keyType)}_key.pub), then add it: ` +
        `${howToAdd} (or run: liftoff trust ${endpoint.host} -c <your spec>).`,
    );
  }

  data(): Record<string, JsonValue> {
    return { keyType: this.keyType, fingerprint: this.fingerprint, knownHostsPath: this.knownHostsPath };
  }
}

export class HostKeyMismatchError extends SshError {
  override readonly name = 'HostKeyMismatchError';
  readonly retryable = false;
  readonly keyType: string;
  readonly gotFingerprint: string;
  readonly expectedFingerprints: string[];
  readonly knownHostsPath: string;
  /** The offered key is listed as @revoked. */
  readonly revoked: boolean;

  constructor(
    endpoint: SshErrorEndpoint,
    details: {
      keyType: string;
      gotFingerprint: string;
      expectedFingerprints: string[];
      knownHostsPath: string;
      revoked?: boolean;
    },
  ) {
    const revoked = details.revoked ?? false;
    const problem = revoked
      ? `offered a key that ${details.knownHostsPath} marks @revoked: ${details.keyType} ${details.gotFingerprint}`
      : `offered ${details.keyType} ${details.gotFingerprint}, but ${details.knownHostsPath} expects ${details.expectedFingerprints.join(' or ')}`;
    super(
      endpoint,
      `HOST KEY MISMATCH for ${describe(endpoint)}: it ${problem}. Nothing was run. ` +
        `Someone may be intercepting the connection, or the host was reinstalled. Verify the new key on the host ` +
        `out of band; only then remove the old entry (ssh-keygen -R ${shellQuote(knownHostsName(endpoint.address, endpoint.port))} -f ${shellQuote(details.knownHostsPath)}) and trust the new one.`,
    );
    this.keyType = details.keyType;
    this.gotFingerprint = details.gotFingerprint;
    this.expectedFingerprints = details.expectedFingerprints;
    this.knownHostsPath = details.knownHostsPath;
    this.revoked = revoked;
  }

  data(): Record<string, JsonValue> {
    return {
      keyType: this.keyType,
      gotFingerprint: this.gotFingerprint,
      expectedFingerprints: this.expectedFingerprints,
      knownHostsPath: this.knownHostsPath,
      revoked: this.revoked,
    };
  }
}

export interface CommandOutcome {
  command: string;
  exitCode: number;
  signal?: string;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** What an error shows of a command and its output: redacted first, then cut (see redactedTail). */
function shownCommand(run: { command: string; stdout: string; stderr: string }, secrets: readonly string[]) {
  return {
    command: redactedTail(run.command, secrets, 1024),
    stdoutTail: redactedTail(run.stdout, secrets),
    stderrTail: redactedTail(run.stderr, secrets),
  };
}

type ShownCommand = ReturnType<typeof shownCommand>;

/** A stream's tail as a message shows it after the first line (`--- stderr (tail) ---`), or '' when it is empty. */
function tailSection(stream: 'stdout' | 'stderr', text: string, secrets: readonly string[]): string {
  const tail = redactedTail(text.trimEnd(), secrets);
  return tail ? `\n--- ${stream} (tail) ---\n${tail}` : '';
}

/** A command that ran and did not succeed: what it was and what it printed, and what errors show of it. */
export abstract class CommandError extends SshError {
  readonly command: string;
  readonly stdout: string;
  readonly stderr: string;

  protected constructor(
    endpoint: SshErrorEndpoint,
    run: { command: string; stdout: string; stderr: string },
    protected readonly shown: ShownCommand,
    message: string,
  ) {
    super(endpoint, message);
    this.command = run.command;
    this.stdout = run.stdout;
    this.stderr = run.stderr;
  }
}

export class RemoteCommandError extends CommandError {
  override readonly name = 'RemoteCommandError';
  /** A failed command is a fact about the host; the caller knows whether running it again can help. */
  readonly retryable = false;
  readonly exitCode: number;
  readonly signal: string | undefined;
  readonly durationMs: number;

  /** `secrets`: values the command handled (on stdin, in its environment) that its output must not show. */
  constructor(endpoint: SshErrorEndpoint, outcome: CommandOutcome, secrets: readonly string[] = []) {
    const how = outcome.signal ? `was killed by ${outcome.signal}` : `exited with code ${outcome.exitCode}`;
    const shown = shownCommand(outcome, secrets);
    super(
      endpoint,
      outcome,
      shown,
      `Command on ${describe(endpoint)} ${how}: ${shown.command}` +
        tailSection('stderr', outcome.stderr, secrets) +
        tailSection('stdout', outcome.stdout, secrets),
    );
    this.exitCode = outcome.exitCode;
    this.signal = outcome.signal;
    this.durationMs = outcome.durationMs;
  }

  data(): Record<string, JsonValue> {
    return {
      ...this.shown,
      exitCode: this.exitCode,
      signal: this.signal ?? null,
      durationMs: this.durationMs,
    };
  }
}

export class RemoteTimeoutError extends CommandError {
  override readonly name = 'RemoteTimeoutError';
  readonly retryable = true;
  readonly timeoutMs: number;

  constructor(
    endpoint: SshErrorEndpoint,
    details: { command: string; timeoutMs: number; stdout: string; stderr: string },
    secrets: readonly string[] = [],
  ) {
    const shown = shownCommand(details, secrets);
    super(
      endpoint,
      details,
      shown,
      `Command on ${describe(endpoint)} did not finish within ${details.timeoutMs} ms and was stopped ` +
        `(its channel was signalled and closed; children it started in the background may still run): ` +
        `${shown.command}` +
        tailSection('stderr', details.stderr, secrets),
    );
    this.timeoutMs = details.timeoutMs;
  }

  data(): Record<string, JsonValue> {
    return { ...this.shown, timeoutMs: this.timeoutMs };
  }
}

export interface FailureDetails {
  /** The error class name, fit for ApplicationFailure's `type`. */
  type: string;
  message: string;
  /** A hint for the retry policy; the activity layer has the last word. */
  retryable: boolean;
  host?: string;
  endpoint?: SshErrorEndpoint;
  data: Record<string, JsonValue>;
}

/** Plain, JSON-safe description of any error, with the typed fields of ours. */
export function toFailureDetails(err: unknown): FailureDetails {
  if (err instanceof SshError) {
    return {
      type: err.name,
      message: err.message,
      retryable: err.retryable,
      host: err.host,
      endpoint: { ...err.endpoint, ...(err.endpoint.via ? { via: [...err.endpoint.via] } : {}) },
      data: err.data(),
    };
  }
  if (err instanceof Error) return { type: err.name, message: err.message, retryable: true, data: {} };
  return { type: 'Error', message: String(err), retryable: true, data: {} };
}

function shortKeyType(keyType: string): string {
  if (keyType.includes('ed25519')) return 'ed25519';
  if (keyType.startsWith('ecdsa')) return 'ecdsa';
  if (keyType.includes('rsa')) return 'rsa';
  return '*';
}
