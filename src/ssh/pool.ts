// Connections reused across commands within one use (the `liftoff init` probe, `liftoff trust`'s jump hosts, a
// test): a SharedSshPool whose connections stay open until the end of that use.
import type { SshConnectOptions } from './connect.js';
import type { Ssh2Session } from './session.js';
import { SharedSshPool } from './shared-pool.js';
import type { SshAuth, SshTarget } from './target.js';

/**
 * Per-use pool: one connection per host, reused by every command (jump hosts included, shared by all hosts
 * behind them); closeAll at the end. A dropped connection is replaced on the next session() call; a failed
 * connect is not cached.
 */
export class SshPool {
  private readonly shared: SharedSshPool;

  constructor(
    private readonly auth: SshAuth,
    opts?: SshConnectOptions,
  ) {
    this.shared = new SharedSshPool({ ...opts, idleMs: 0 });
  }

  /** SSH handshakes this pool has started (each hop counts once). */
  get connectionsOpened(): number {
    return this.shared.connectionsOpened;
  }

  session(target: SshTarget): Promise<Ssh2Session> {
    const entry = this.shared.entry(target, this.auth);
    // Never released: the connection stays open until closeAll, whatever the idle time.
    this.shared.use(entry);
    return this.shared.connection(entry);
  }

  closeAll(): Promise<void> {
    return this.shared.close();
  }
}
