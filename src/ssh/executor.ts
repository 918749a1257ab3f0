// The one SSH executor (ssh2): the entry point every other module imports. Every remote command of liftoff goes
// through SshSession.exec, which takes only commands built by `sh` (quote.ts). Host keys are checked against
// known_hosts before any command runs, jump hosts are reached through the jump host's own verified session, and
// a worker-wide pool gives each host one connection, shared by the worker's activities. The parts live in one
// file each: target.ts (who and with what), connect.ts (one hop, settings), errors.ts (failures and their kinds),
// exec-contract.ts (what a command promises), session.ts (a connection and its commands), host-key-fetch.ts
// (`liftoff trust`), shared-pool.ts (one connection per host per worker, leased by each activity, jump chains
// included; SshPool, the same for one use: the `liftoff init` probe).
export { expandHome, type SshAuth, type SshTarget } from './target.js';
export type { ExecOptions, ExecResult, SshSession } from './exec-contract.js';
export type { SshConnectOptions } from './connect.js';
export { fetchOfferedHostKey } from './host-key-fetch.js';
export { SharedSshPool, SshPool, type SshLease } from './shared-pool.js';
