// One SSH connection per host for a whole worker, shared by every activity that reaches the host, so a deploy
// or a supervisor costs about one handshake per host instead of one per activity. Each activity takes a lease:
// its commands run on the shared connection, its cancellation stops only its own channels, and the connection
// stays open for the next activity until nobody has used it for the idle time.
//
// A connection is keyed by the target (user, address, port and every jump hop) and the credentials; a jump host's
// connection is an entry like any other, shared by the hosts behind it and by activities on the jump host itself.
// Every NEW connection checks the host key against known_hosts (connectHop), as a connection always did: a host
// whose key changed is refused on the first reconnect.
import { connectHop, resolveSettings, type ConnectSettings, type SshConnectOptions } from './connect.js';
import type { RemoteCommand } from './quote.js';
import {
  abortReason,
  commandNeverStarted,
  type ExecOptions,
  type ExecResult,
  type SshSession,
} from './exec-contract.js';
import type { Ssh2Session } from './session.js';
import { closeDeepestFirst, targetKey, type SshAuth, type SshTarget } from './target.js';

export interface SharedSshPoolOptions extends SshConnectOptions {
  /** How long a connection that no activity uses stays open (the worker's setting: config/ssh-idle.ts). 0: closed at once. */
  idleMs: number;
}

export interface SshLeaseOptions {
  /** The activity's cancellation: aborting it stops this lease's commands (and only those). */
  signal?: AbortSignal;
  /** Keep the lease's connections at least this long after release, even past the pool's idle time. */
  keepMs?: number;
}

interface Connection {
  session: Promise<Ssh2Session>;
  /** The jump host's entry this connection tunnels through: it counts as one of its users while open. */
  via?: HostEntry;
  dropped: boolean;
}

interface HostEntry {
  key: string;
  target: SshTarget;
  auth: SshAuth;
  current?: Connection;
  /** Leases using the host, plus the open connections tunnelled through it. */
  users: number;
  /** Once unused, kept open at least until then (a lease's keepMs). */
  keepUntil: number;
  idleTimer?: NodeJS.Timeout;
}

function authKey(auth: SshAuth): string {
  return JSON.stringify([
    auth.knownHostsPath,
    auth.privateKeyPath ?? null,
    auth.useAgent ?? false,
    auth.sshRsaHostKeys ?? [],
  ]);
}

/** `promise`, or the signal's reason once it aborts first (the promise itself goes on, for other users). */
async function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw abortReason(signal);
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

export class SharedSshPool {
  readonly idleMs: number;
  private readonly settings: ConnectSettings;
  private readonly hosts = new Map<string, HostEntry>();
  private opened = 0;
  private closed = false;

  constructor(opts: SharedSshPoolOptions) {
    const { idleMs, ...connect } = opts;
    this.idleMs = idleMs;
    this.settings = resolveSettings(connect);
  }

  /** SSH handshakes this pool has started (each hop counts once). */
  get connectionsOpened(): number {
    return this.opened;
  }

  /** Connections open or opening now. */
  get openConnections(): number {
    return [...this.hosts.values()].filter((entry) => entry.current).length;
  }

  /** One activity's use of the pool; release() it when the activity ends, however it ends. */
  lease(opts: SshLeaseOptions = {}): SshLease {
    if (this.closed) throw new Error('the SSH pool is closed (the worker is shutting down)');
    return new SshLease(this, opts);
  }

  /** Closes every connection, hosts behind a jump first so their tunnels close before the jump connection. */
  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.hosts.values()];
    this.hosts.clear();
    for (const entry of entries) clearTimeout(entry.idleTimer);
    await closeDeepestFirst(entries, async (entry) => {
      const conn = entry.current;
      if (!conn) return;
      conn.dropped = true;
      entry.current = undefined;
      const session = await conn.session.catch(() => undefined);
      await session?.close();
    });
  }

  /** @internal The entry for this target and credentials, created on first use. */
  entry(target: SshTarget, auth: SshAuth): HostEntry {
    const key = `${authKey(auth)} ${targetKey(target)}`;
    let entry = this.hosts.get(key);
    if (!entry) {
      entry = { key, target, auth, users: 0, keepUntil: 0 };
      this.hosts.set(key, entry);
    }
    return entry;
  }

  /** @internal */
  use(entry: HostEntry): void {
    entry.users++;
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
  }

  /** @internal */
  unuse(entry: HostEntry, keepMs = 0): void {
    entry.users--;
    entry.keepUntil = Math.max(entry.keepUntil, Date.now() + keepMs);
    if (entry.users > 0 || this.closed) return;
    const wait = Math.max(this.idleMs, entry.keepUntil - Date.now());
    if (wait <= 0) {
      this.expire(entry);
      return;
    }
    entry.idleTimer = setTimeout(() => this.expire(entry), wait);
    // An idle connection's timer alone does not keep the process up; the pool's close() ends the sockets.
    entry.idleTimer.unref();
  }

  private expire(entry: HostEntry): void {
    entry.idleTimer = undefined;
    if (entry.users > 0) return;
    if (entry.current) this.drop(entry, entry.current);
    else this.forget(entry);
  }

  private forget(entry: HostEntry): void {
    if (entry.users === 0 && !entry.current && !entry.idleTimer && this.hosts.get(entry.key) === entry)
      this.hosts.delete(entry.key);
  }

  /**
   * @internal The live connection to the entry's host: the open one, or a new one when there is none or it
   * died (a dead one is dropped). Everyone who waited on a connect that failed gets its error; the next call
   * tries afresh.
   */
  async connection(entry: HostEntry): Promise<Ssh2Session> {
    if (this.closed) throw new Error('the SSH pool is closed (the worker is shutting down)');
    const current = entry.current;
    if (current) {
      const session = await current.session;
      if (session.alive) return session;
      this.drop(entry, current);
      // Another caller may have opened the replacement while this one waited.
      if (entry.current) return this.connection(entry);
    }
    return this.open(entry);
  }

  private open(entry: HostEntry): Promise<Ssh2Session> {
    const jump = entry.target.jump;
    // Held until this connection closes, so the jump connection carrying it is never expired under it.
    const via = jump ? this.entry(jump, entry.auth) : undefined;
    if (via) this.use(via);
    const session = (async () => {
      const viaSession = via ? await this.connection(via) : undefined;
      this.opened++;
      return connectHop({ target: entry.target, auth: entry.auth, settings: this.settings, via: viaSession });
    })();
    const conn: Connection = { session, dropped: false, ...(via ? { via } : {}) };
    entry.current = conn;
    conn.session.then(
      // A connection that drops by itself frees its place (and its use of the jump host) at once.
      (session) => void session.closed.then(() => this.drop(entry, conn)),
      () => this.drop(entry, conn),
    );
    return conn.session;
  }

  private drop(entry: HostEntry, conn: Connection): void {
    if (conn.dropped) return;
    conn.dropped = true;
    if (entry.current === conn) entry.current = undefined;
    void (async () => {
      const session = await conn.session.catch(() => undefined);
      await session?.close();
      if (conn.via) this.unuse(conn.via);
      this.forget(entry);
    })();
  }
}

/**
 * One activity's use of a SharedSshPool. Its sessions run commands on the shared connections; its signal (the
 * activity's cancellation, or release()) stops the commands it started and nothing else.
 */
export class SshLease {
  private readonly keepMs: number;
  private readonly controller = new AbortController();
  private readonly held = new Set<HostEntry>();
  private released = false;
  /** Aborted by the activity's cancellation or by release(), whichever comes first. */
  readonly signal: AbortSignal;

  constructor(
    private readonly pool: SharedSshPool,
    opts: SshLeaseOptions,
  ) {
    this.keepMs = opts.keepMs ?? 0;
    this.signal = opts.signal
      ? AbortSignal.any([opts.signal, this.controller.signal])
      : this.controller.signal;
  }

  /** A session to `target`, connected (a connect error is raised here, as opening a session always did). */
  async session(target: SshTarget, auth: SshAuth): Promise<SshSession> {
    if (this.released) throw new Error('SshLease.session called after release');
    this.signal.throwIfAborted();
    const entry = this.pool.entry(target, auth);
    if (!this.held.has(entry)) {
      this.held.add(entry);
      this.pool.use(entry);
    }
    await abortable(this.pool.connection(entry), this.signal);
    return new LeasedSession(this.pool, entry, target, this.signal);
  }

  /** Stops this lease's commands still running, and leaves its connections to the pool (and its idle time). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.controller.abort(new Error('the activity ended'));
    for (const entry of this.held) this.pool.unuse(entry, this.keepMs);
    this.held.clear();
  }
}

class LeasedSession implements SshSession {
  constructor(
    private readonly pool: SharedSshPool,
    private readonly entry: HostEntry,
    readonly target: SshTarget,
    private readonly leaseSignal: AbortSignal,
  ) {}

  async exec(cmd: RemoteCommand, opts: ExecOptions = {}): Promise<ExecResult> {
    const signal = opts.signal ? AbortSignal.any([opts.signal, this.leaseSignal]) : this.leaseSignal;
    const session = await abortable(this.pool.connection(this.entry), signal);
    try {
      return await session.exec(cmd, { ...opts, signal });
    } catch (err) {
      // The connection died between uses and the command never reached the host: once more, on a new
      // connection (its host key checked like any new one's). A command that may have run is never repeated.
      if (!commandNeverStarted(err) || session.alive || signal.aborted) throw err;
      const fresh = await abortable(this.pool.connection(this.entry), signal);
      return fresh.exec(cmd, { ...opts, signal });
    }
  }

  /** The connection belongs to the pool: the lease's release ends this activity's use of it. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * A SharedSshPool for one use (the `liftoff init` probe, `liftoff trust`'s jump hosts, a test): one connection per
 * host, reused by every command (jump hosts included, shared by all hosts behind them); closeAll at the end. A
 * dropped connection is replaced on the next session() call; a failed connect is not cached.
 */
export class SshPool extends SharedSshPool {
  constructor(
    private readonly auth: SshAuth,
    opts?: SshConnectOptions,
  ) {
    super({ ...opts, idleMs: 0 });
  }

  session(target: SshTarget): Promise<Ssh2Session> {
    const entry = this.entry(target, this.auth);
    // Never released: the connection stays open until closeAll, whatever the idle time.
    this.use(entry);
    return this.connection(entry);
  }

  closeAll(): Promise<void> {
    return this.close();
  }
}
