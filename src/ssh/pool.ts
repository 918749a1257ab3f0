// Connections reused across commands: one per host (jump hosts included), opened on first use.
import { connectHop, resolveSettings, type ConnectSettings, type SshConnectOptions } from './connect.js';
import type { SshSession } from './exec-contract.js';
import type { Ssh2Session } from './session.js';
import { closeDeepestFirst, targetKey, type SshAuth, type SshTarget } from './target.js';

/**
 * Per-activity pool: one connection per host, reused by every command of the activity (jump hosts included,
 * shared by all hosts behind them); closeAll at the end. A dropped connection is replaced on the next
 * session() call; a failed connect is not cached.
 */
export class SshPool {
  private readonly auth: SshAuth;
  private readonly settings: ConnectSettings;
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
    await closeDeepestFirst(entries, async (e) => {
      const session = await e.session.catch(() => undefined);
      await session?.close();
    });
  }
}
