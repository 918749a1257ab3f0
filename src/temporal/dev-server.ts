// The embedded Temporal: `temporal server start-dev` with a database file, so history survives a restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { allSearchAttributeKeys } from '../shared/constants.js';
import { temporalCliPath } from './cli-path.js';

export interface DevServerOptions {
  /** Folder for the database file and the server log. */
  stateDir: string;
  port?: number;
  uiPort?: number;
  namespace?: string;
  /** How long to wait for the frontend to answer. */
  readyTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl: string;
  dbFile: string;
  pid: number;
  stop(): Promise<void>;
}

const defaults = { ip: '127.0.0.1', port: 7233, uiPort: 8233, namespace: 'default', readyTimeoutMs: 60_000 };

/** The `--search-attribute` flags that register liftoff's search attributes with the dev server. */
export function searchAttributeFlags(): string[] {
  // The CLI names the SDK's types in camel case: KEYWORD_LIST is KeywordList.
  const typeName = (type: string) =>
    type.toLowerCase().replace(/(?:^|_)([a-z])/g, (_, c: string) => c.toUpperCase());
  return allSearchAttributeKeys.flatMap((key) => ['--search-attribute', `${key.name}=${typeName(key.type)}`]);
}

/**
 * The server's folder (0700) and its log (0600), made private before the server starts: the database holds
 * every workflow's history, and the server has no authentication of its own. The database is not created here:
 * start-dev takes an existing file, even an empty one, for a database it made before and skips creating its
 * tables. The server is started with umask 077 instead, so the database and SQLite's -wal and -shm files are
 * born 0600. Existing ones are tightened.
 */
export function prepareStateFiles(stateDir: string): { dbFile: string; logFile: string } {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  chmodSync(stateDir, 0o700);
  const dbFile = join(stateDir, 'temporal.db');
  const logFile = join(stateDir, 'temporal-server.log');
  closeSync(openSync(logFile, 'a', 0o600));
  for (const file of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`, logFile]) {
    if (existsSync(file)) chmodSync(file, 0o600);
  }
  return { dbFile, logFile };
}

function spawnServer(dbFile: string, opts: typeof defaults & DevServerOptions, logFd: number): ChildProcess {
  const flags = {
    '--db-filename': dbFile,
    '--ip': opts.ip,
    '--port': String(opts.port),
    '--ui-port': String(opts.uiPort),
    '--namespace': opts.namespace,
    '--log-level': 'warn',
  };
  return spawn(
    temporalCliPath(),
    ['server', 'start-dev', ...Object.entries(flags).flat(), ...searchAttributeFlags()],
    { stdio: ['ignore', logFd, logFd] },
  );
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const opts = { ...defaults, ...options };
  for (const port of [opts.port, opts.uiPort]) {
    if (await portAcceptsConnections(opts.ip, port)) {
      throw new Error(
        `port ${opts.ip}:${port} is already in use (another \`liftoff dev\` or Temporal server?); ` +
          'stop it, or pick other ports with --port/--ui-port',
      );
    }
  }
  const { dbFile, logFile } = prepareStateFiles(opts.stateDir);
  const logFd = openSync(logFile, 'a', 0o600);
  // umask is per process and spawn forks synchronously: the 077 applies to the server alone.
  const umask = process.umask(0o077);
  let child: ChildProcess;
  try {
    child = spawnServer(dbFile, opts, logFd);
  } finally {
    process.umask(umask);
    closeSync(logFd);
  }
  const address = `${opts.ip}:${opts.port}`;
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.once('exit', (code, signal) => (exited = { code, signal }));

  const deadline = Date.now() + opts.readyTimeoutMs;
  for (;;) {
    if (exited) {
      throw new Error(
        `temporal dev server exited during start (code ${exited.code}, signal ${exited.signal}); see ${logFile}` +
          ` (is port ${opts.port} or ${opts.uiPort} already in use?)`,
      );
    }
    if (await frontendAnswers(address, opts.namespace)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `temporal dev server did not answer on ${address} within ${opts.readyTimeoutMs} ms; see ${logFile}`,
      );
    }
    await sleep(200);
  }

  return {
    address,
    namespace: opts.namespace,
    uiUrl: `http://${opts.ip}:${opts.uiPort}`,
    dbFile,
    pid: child.pid ?? -1,
    stop: () => stopChild(child),
  };
}

/** Ready means the namespace exists and our search attributes are registered, not merely an open port. */
async function frontendAnswers(address: string, namespace: string): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1000 });
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    return allSearchAttributeKeys.every((key) => customAttributes && key.name in customAttributes);
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

function portAcceptsConnections(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1000 });
    const answer = (accepts: boolean) => {
      socket.destroy();
      resolve(accepts);
    };
    socket.once('connect', () => answer(true));
    socket.once('timeout', () => answer(false));
    socket.once('error', () => answer(false));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await done;
  clearTimeout(timer);
}
