// How activities reach hosts: the workflow passes a target (plain data) and references to credentials
// (paths, never key material); the key is read here, inside the activity.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { SshPool, type SshAuth, type SshSession } from '../ssh/executor.js';
import { SshError, toFailureDetails } from '../ssh/errors.js';
import type { SshTargetData } from '../config/targets.js';
import { keepHeartbeating } from './heartbeat.js';
import { assertSshAuthAllowed } from './worker-policy.js';

export interface SshAuthRef {
  privateKeyPath?: string;
  useAgent?: boolean;
  knownHostsPath: string;
}

export interface HostRef {
  target: SshTargetData;
  auth: SshAuthRef;
}

export function toSshAuth(ref: SshAuthRef): SshAuth {
  return { privateKeyPath: ref.privateKeyPath, useAgent: ref.useAgent, knownHostsPath: ref.knownHostsPath };
}

/**
 * Runs `fn` with one SSH session to the host, reused for every command of this activity and closed after,
 * so an activity costs one handshake per host. The activity heartbeats meanwhile, so a dead worker is noticed
 * within the heartbeat timeout and a cancellation reaches it.
 *
 * Nothing connects before the worker's policy allows the host reference's known_hosts, key and agent.
 *
 * This is where the SSH layer's errors meet Temporal: each becomes an ApplicationFailure of its class name,
 * final exactly when the error says retrying cannot help (a host key, a refused login), so no workflow keeps
 * a list of error names.
 */
export async function onHost<T>(ref: HostRef, fn: (session: SshSession) => Promise<T>): Promise<T> {
  // The worker's policy decides which known_hosts and keys a spec may use, whatever the workflow passed.
  assertSshAuthAllowed(ref.auth);
  const pool = new SshPool(toSshAuth(ref.auth));
  const signal = activitySignal();
  const abort = () => void pool.closeAll();
  signal?.addEventListener('abort', abort);
  try {
    return await keepHeartbeating(async () => fn(await pool.session(ref.target)));
  } catch (err) {
    throw err instanceof SshError ? sshFailure(err) : err;
  } finally {
    signal?.removeEventListener('abort', abort);
    await pool.closeAll();
  }
}

/** How long connections kept between calls (onHosts' `keep`) live unused, and under which key. */
export interface KeepConnections {
  /** Calls with the same key share the connections: a supervisor's rounds, one after the other. */
  key: string;
  idleMs: number;
}

interface KeptPools {
  pools: Map<string, SshPool>;
  busy: boolean;
  timer?: NodeJS.Timeout;
}

/** Connections kept between the calls of one key, each closed once unused for its idle time. */
const kept = new Map<string, KeptPools>();

/** Closes every kept connection (a worker that shuts down). */
export async function closeKeptConnections(): Promise<void> {
  const all = [...kept.values()];
  kept.clear();
  for (const k of all) clearTimeout(k.timer);
  await Promise.all(all.flatMap((k) => [...k.pools.values()].map((p) => p.closeAll())));
}

/**
 * Like onHost for an activity that works on several hosts at once: one pool for all of them, so a jump host's
 * connection also carries the hosts behind it (one handshake per host, however they are reached). `fn` opens
 * the sessions it needs and judges each host's errors itself; SSH errors it lets through are converted as in
 * onHost.
 *
 * With `keep`, the connections outlive the call, for the next call of the same key within `idleMs`: a probe
 * every 30 s then costs no handshake at all. A kept connection that dropped is replaced by the pool (its
 * keepalive notices a dead link within 15 s; a command caught by the drop fails as a lost connection, so the
 * host counts as unreachable, as with a fresh one).
 */
export async function onHosts<T>(
  refs: readonly HostRef[],
  fn: (open: (ref: HostRef) => Promise<SshSession>) => Promise<T>,
  keep?: KeepConnections,
): Promise<T> {
  for (const ref of refs) assertSshAuthAllowed(ref.auth);
  const reuse = keep ? kept.get(keep.key) : undefined;
  const entry: KeptPools = reuse && !reuse.busy ? reuse : { pools: new Map(), busy: false };
  clearTimeout(entry.timer);
  entry.busy = true;
  if (keep && !reuse) kept.set(keep.key, entry);
  const open = (ref: HostRef): Promise<SshSession> => {
    if (!refs.includes(ref))
      throw new Error(`onHosts: ${ref.target.name} is not one of this activity's hosts`);
    const key = JSON.stringify(toSshAuth(ref.auth));
    let pool = entry.pools.get(key);
    if (!pool) entry.pools.set(key, (pool = new SshPool(toSshAuth(ref.auth))));
    return pool.session(ref.target);
  };
  const closeAll = async () => {
    if (kept.get(keep?.key ?? '') === entry) kept.delete(keep?.key ?? '');
    await Promise.all([...entry.pools.values()].map((p) => p.closeAll()));
  };
  const signal = activitySignal();
  const abort = () => void closeAll();
  signal?.addEventListener('abort', abort);
  let keepOpen = false;
  try {
    const result = await keepHeartbeating(() => fn(open));
    keepOpen = keep !== undefined && kept.get(keep.key) === entry;
    return result;
  } catch (err) {
    throw err instanceof SshError ? sshFailure(err) : err;
  } finally {
    signal?.removeEventListener('abort', abort);
    entry.busy = false;
    if (keepOpen && keep) {
      entry.timer = setTimeout(() => void closeAll(), keep.idleMs);
      entry.timer.unref();
    } else await closeAll();
  }
}

function activitySignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined; // called outside an activity (tests, CLI)
  }
}

export function sshFailure(err: SshError): ApplicationFailure {
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
