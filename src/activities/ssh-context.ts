// How activities reach hosts: the workflow passes a target (plain data) and references to credentials
// (paths, never key material); the key is read here, inside the activity.
import { AsyncLocalStorage } from 'node:async_hooks';
import { ApplicationFailure } from '@temporalio/common';
import { SharedSshPool, type SshAuth, type SshLease, type SshSession } from '../ssh/executor.js';
import { SshError, toFailureDetails } from '../ssh/errors.js';
import type { HostRef, SshAuthRef } from '../config/targets.js';
import { currentContext, heartbeat, keepAliveMs } from './heartbeat.js';
import { activeWorkerPolicy, assertSshAuthAllowed } from './worker-policy.js';

/** The spec's credential references, plus what only the worker's policy decides: the hosts that may sign with SHA-1. */
function toSshAuth(ref: SshAuthRef): SshAuth {
  const sshRsaHostKeys = activeWorkerPolicy().sshRsaHostKeys;
  return {
    privateKeyPath: ref.privateKeyPath,
    useAgent: ref.useAgent,
    knownHostsPath: ref.knownHostsPath,
    ...(sshRsaHostKeys === true || sshRsaHostKeys.length > 0 ? { sshRsaHostKeys } : {}),
  };
}

/**
 * The worker's connections, bound to every activity it registers (like its policy), so one process running two
 * workers keeps each worker's connections apart and closes them with it.
 */
const boundPool = new AsyncLocalStorage<SharedSshPool>();

/** `fn`, using `pool` for its SSH connections wherever it is called from. */
export function bindSshPool<A extends unknown[], R>(
  pool: SharedSshPool,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return (...args) => boundPool.run(pool, () => fn(...args));
}

/**
 * Runs `fn` with a lease on the worker's SSH pool, released after however `fn` ends: its commands still running
 * then are stopped, the connections stay for the next activity. The activity heartbeats meanwhile, so a dead
 * worker is noticed within the heartbeat timeout and a cancellation reaches it; a cancellation stops this
 * activity's commands, never the connection other activities share. Outside a worker (a test or the CLI calling
 * an activity directly) the connections last for the call only.
 */
async function withLease<T>(fn: (lease: SshLease) => Promise<T>, keepMs?: number): Promise<T> {
  const shared = boundPool.getStore();
  const pool = shared ?? new SharedSshPool({ idleMs: 0 });
  const signal = currentContext()?.cancellationSignal;
  const lease = pool.lease({
    ...(signal ? { signal } : {}),
    ...(keepMs !== undefined ? { keepMs } : {}),
  });
  const beating = setInterval(() => heartbeat(), keepAliveMs);
  try {
    heartbeat();
    return await fn(lease);
  } catch (err) {
    throw err instanceof SshError ? sshFailure(err) : err;
  } finally {
    clearInterval(beating);
    lease.release();
    if (!shared) await pool.close();
  }
}

/**
 * Runs `fn` with an SSH session to the host: the worker's one connection to it, opened by the first activity that
 * needs it and reused by the next ones, so a deploy costs about one handshake per host.
 *
 * This is where the SSH layer's errors meet Temporal: each becomes an ApplicationFailure of its class name,
 * final exactly when the error says retrying cannot help (a host key, a refused login), so no workflow keeps
 * a list of error names.
 */
export async function onHost<T>(ref: HostRef, fn: (session: SshSession) => Promise<T>): Promise<T> {
  // The worker's policy decides which known_hosts and keys a spec may use, whatever the workflow passed.
  assertSshAuthAllowed(ref.auth);
  return withLease(async (lease) => fn(await lease.session(ref.target, toSshAuth(ref.auth))));
}

/**
 * Like onHost for an activity that works on several hosts at once. `fn` opens the sessions it needs and judges
 * each host's errors itself; SSH errors it lets through are converted as in onHost.
 *
 * With `keep`, the connections stay open unused for at least `idleMs` (a supervisor whose interval is longer
 * than the worker's idle time): a probe round then costs no handshake at all. A kept connection that dropped is
 * replaced by the pool (its keepalive notices a dead link within 15 s; a command caught by the drop fails as a
 * lost connection, so the host counts as unreachable, as with a fresh one).
 */
export async function onHosts<T>(
  refs: readonly HostRef[],
  fn: (open: (ref: HostRef) => Promise<SshSession>) => Promise<T>,
  keep?: { idleMs: number },
): Promise<T> {
  for (const ref of refs) assertSshAuthAllowed(ref.auth);
  return withLease(
    (lease) =>
      fn((ref: HostRef): Promise<SshSession> => {
        if (!refs.includes(ref))
          throw new Error(`onHosts: ${ref.target.name} is not one of this activity's hosts`);
        return lease.session(ref.target, toSshAuth(ref.auth));
      }),
    keep?.idleMs,
  );
}

function sshFailure(err: SshError): ApplicationFailure {
  const details = toFailureDetails(err);
  const failure = ApplicationFailure.create({
    type: details.type,
    message: details.message,
    nonRetryable: !details.retryable,
    details: [{ host: details.host ?? null, endpoint: details.endpoint ?? null, ...details.data }],
  });
  // Where the SSH layer raised it, not where it was converted.
  failure.stack = err.stack;
  return failure;
}
