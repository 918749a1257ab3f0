// Starting a simulated host's tool server (sim/tools/server.ts): the long-lived process that runs the hosts'
// short, read-only tool calls for the thin client in bin/ (sim/tools/client.c), so a call costs about 2 ms of
// CPU instead of a Node start's 50. It runs in the host's namespaces (network: `ray status` reaches the
// head over the host's links; mount: the host's /home and /proc/meminfo), as its sshd does, and outlives sshd
// restarts as the host's other processes do. Its LIFTOFF_SIM_HOST_DIR is how cluster-down finds and ends it.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { paths } from './host-state.js';
import { isRunning, sleep } from './processes.js';

/**
 * The tool servers are on unless LIFTOFF_SIM_TOOL_SERVER=0, which runs every call as its own Node process, as
 * before them (bench/tool-call-cost.ts measures both ways).
 */
export function toolServerEnabled(): boolean {
  return process.env.LIFTOFF_SIM_TOOL_SERVER !== '0';
}

/** What build-tools.ts puts in a bin dir beside the tools' names. */
export const simToolFiles = {
  bundle: 'simtool.mjs',
  serverBundle: 'simtool-server.mjs',
  client: 'simtool-client',
} as const;

export interface ToolServerLaunch {
  hostDir: string;
  /** The cluster's bin dir: the server bundle, and the client whose presence says the calls will come. */
  binDir: string;
  /** PATH of the host's sessions. */
  path: string;
  /** Netns mode: the pid of the host's sshd, whose namespaces the server joins. */
  sshdPid?: number;
}

/**
 * Starts the host's tool server unless it is off, the bin dir has no client (no compiler: shell shims), or one is
 * running already; waits until it listens. A server that does not come up is no failure: every call then runs as
 * its own process.
 */
export async function startToolServer(launch: ToolServerLaunch, timeoutMs = 5000): Promise<void> {
  const server = join(launch.binDir, simToolFiles.serverBundle);
  if (!toolServerEnabled() || !existsSync(server) || !existsSync(join(launch.binDir, simToolFiles.client)))
    return;
  const { hostDir } = launch;
  if (toolServerRunning(hostDir)) return;
  mkdirSync(paths.toolServer(hostDir), { recursive: true, mode: 0o700 });
  const command = [process.execPath, server, hostDir];
  const [cmd, ...args] =
    launch.sshdPid === undefined
      ? command
      : ['nsenter', '-t', String(launch.sshdPid), '-n', '-m', '-u', '--', ...command];
  const log = openSync(paths.toolServerLog(hostDir), 'a');
  let pid: number | undefined;
  try {
    // No TZ, as in an SSH session: a call with another time zone runs as its own process (server.ts).
    const child = spawn(cmd as string, args, {
      detached: true,
      stdio: ['ignore', log, log],
      cwd: '/',
      env: { LIFTOFF_SIM_HOST_DIR: hostDir, PATH: launch.path, LANG: 'C.UTF-8' },
    });
    child.on('error', () => undefined);
    child.unref();
    pid = child.pid;
  } finally {
    closeSync(log);
  }
  const deadline = Date.now() + timeoutMs;
  while (pid !== undefined && isRunning(pid) && Date.now() < deadline) {
    if (toolServerRunning(hostDir)) return;
    await sleep(20);
  }
}

/** Whether the host's tool server listens: its pid file names a live process and its socket is there. */
export function toolServerRunning(hostDir: string): boolean {
  const pid = toolServerPid(hostDir);
  return pid !== undefined && isRunning(pid) && existsSync(paths.toolSocket(hostDir));
}

/** The pid its pid file names, running or not (the bench puts it in its CPU group). */
export function toolServerPid(hostDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(paths.toolServerPid(hostDir), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
