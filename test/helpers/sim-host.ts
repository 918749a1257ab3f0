// Shared setup for the tests of the simulated tools (test/sim): a temp host dir with its host.json, the tools
// built once into a bin dir, running or starting a tool shim with the host's environment, and finding and
// killing the processes a test left behind.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { buildSimTools } from '../../sim/build-tools.js';
import { isAlive, paths, readJson, safeReaddir, type HostConfig } from '../../sim/host-state.js';
import { startToolServer, toolServerEnabled } from '../../sim/tool-server.js';

/** Ray client variables of the outer environment that must not leak into a simulated `ray` or `vllm`. */
const RAY_CLIENT_ENV: readonly string[] = ['RAY_ADDRESS', 'RAY_memory_monitor_refresh_ms'];

/** Makes a temp dir `root` (named from `prefix`) and names its `bin` dir, for `buildSimTools` to fill. */
function makeSimRoot(prefix: string): { root: string; binDir: string } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  return { root, binDir: join(root, 'bin') };
}

/**
 * A test file's sim root (see `makeSimRoot`), with hooks: before the tests, `buildSimTools` fills its bin dir;
 * after them, `cleanup` ends what the tests left running, then the root is removed.
 */
export function useSimRoot(prefix: string, cleanup: () => void): { root: string; binDir: string } {
  const dirs = makeSimRoot(prefix);
  before(() => buildSimTools(dirs.binDir));
  after(() => {
    cleanup();
    stopToolServers();
    rmSync(dirs.root, { recursive: true, force: true });
  });
  return dirs;
}

/** Host dirs whose tool server this file started (ensureToolServer), stopped by its sim root's cleanup. */
const toolServerHosts = new Set<string>();

/**
 * Starts the host's tool server on its first call, as cluster bring-up does, so runSimTool's calls are served as a
 * cluster's are (the read-only ones in the server, the others as their own process). Only with
 * the tool servers on (sim/tool-server.ts); with LIFTOFF_SIM_TOOL_SERVER=0 every call runs as its own process.
 */
async function ensureToolServer(binDir: string, hostDir: string): Promise<void> {
  // A call for a host dir that is not there (a test of that error) must not find one made for the server.
  if (!toolServerEnabled() || toolServerHosts.has(hostDir) || !existsSync(hostDir)) return;
  toolServerHosts.add(hostDir);
  await startToolServer({ hostDir, binDir, path: `${binDir}:${process.env.PATH ?? ''}` });
}

function stopToolServers(): void {
  for (const hostDir of toolServerHosts) {
    const pid = readJson<number>(paths.toolServerPid(hostDir));
    if (pid === undefined || !isAlive(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  toolServerHosts.clear();
}

/**
 * useSimRoot for a file whose tools run as one simulated host, at `root/host`: every process any tool started
 * inherits the host dir variable, so the cleanup sweeps them all, whatever the tests left.
 */
export function useSimHostRoot(prefix: string): { root: string; binDir: string; hostDir: string } {
  const { root, binDir } = useSimRoot(prefix, () => killSimHostProcesses(hostDir));
  const hostDir = join(root, 'host');
  return { root, binDir, hostDir };
}

/**
 * Creates the host dir `dir` with its host.json; what `config` leaves out is one GPU of the flavour (gb10 unless
 * told) with its full memory, on 127.0.1.1 (interconnect `lo`), no images, no model dirs and a short two-shard
 * vLLM load. Returns `dir`.
 */
export function makeSimHost(dir: string, config: Partial<HostConfig> & { name: string }): string {
  mkdirSync(dir, { recursive: true });
  const cfg: HostConfig = {
    address: '127.0.1.1',
    clusterIp: '127.0.1.1',
    clusterIface: 'lo',
    flavour: 'gb10',
    gpuCount: 1,
    gpuMemoryMiB: config.flavour === 'h200' ? 143771 : 124546,
    images: [],
    modelDirs: [],
    vllm: { shards: 2, shardSeconds: 1, graphCaptureSeconds: 1, memoryMiB: 1000 },
    ...config,
  };
  writeFileSync(join(dir, 'host.json'), JSON.stringify(cfg));
  return dir;
}

/** What `ray status` and vLLM's Ray init print with no Ray to join: Ray's own words. */
export const noRunningRay =
  'ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting --address flag or RAY_ADDRESS environment variable.';

export interface SimToolOptions {
  /** Variables to add to (or override in) the tool's environment. */
  env?: Record<string, string>;
  /** Variables of this process's environment the tool must not inherit. */
  unsetEnv?: readonly string[];
}

/** This process's environment with `binDir` first on PATH and LIFTOFF_SIM_HOST_DIR set to `hostDir`. */
export function simToolEnv(binDir: string, hostDir: string, options: SimToolOptions = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${binDir}:${process.env.PATH ?? ''}` };
  for (const name of options.unsetEnv ?? []) delete env[name];
  return { ...env, LIFTOFF_SIM_HOST_DIR: hostDir, ...options.env };
}

export interface SimToolResult {
  code: number;
  stdout: string;
  stderr: string;
  seconds: number;
}

/** Runs the shim `tool` of `binDir` as host `hostDir` to its end (killed after `timeoutMs`). */
export async function runSimTool(
  binDir: string,
  hostDir: string,
  tool: string,
  args: string[],
  options: SimToolOptions & { timeoutMs?: number } = {},
): Promise<SimToolResult> {
  await ensureToolServer(binDir, hostDir);
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      join(binDir, tool),
      args,
      { env: simToolEnv(binDir, hostDir, options), timeout: options.timeoutMs ?? 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr, seconds: (Date.now() - started) / 1000 });
      },
    );
  });
}

export interface Background {
  child: ChildProcess;
  output: () => string;
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<void>;
  exited: Promise<number>;
}

/** Starts the shim `tool` of `binDir` as host `hostDir`, collecting its stdout and stderr together. */
export function startSimTool(
  binDir: string,
  hostDir: string,
  tool: string,
  args: string[],
  options: SimToolOptions = {},
): Background {
  const child = spawn(join(binDir, tool), args, {
    env: simToolEnv(binDir, hostDir, options),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout?.on('data', (c: Buffer) => (text += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (text += c.toString()));
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  return {
    child,
    output: () => text,
    exited,
    waitFor: async (pattern, timeoutMs = 8000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(text)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; output:\n${text}`);
        if (child.exitCode !== null)
          throw new Error(`exited (${child.exitCode}) before ${pattern}; output:\n${text}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}

export interface SimTools {
  /** Every child `background` started, and any a test adds, for `killChildren`. */
  children: ChildProcess[];
  run: (
    hostDir: string,
    tool: string,
    args: string[],
    extra?: Record<string, string>,
  ) => Promise<SimToolResult>;
  background: (hostDir: string, tool: string, args: string[], extra?: Record<string, string>) => Background;
  /** SIGKILLs every child still running. */
  killChildren: () => void;
}

export interface RaySimTools extends SimTools {
  /**
   * A Ray node: host `name` in the root's folder of that name, a gb10 GPU of 121690 MiB, management and
   * interconnect address `ip` (a loopback address, so nodes join over real TCP), loading vLLM at the suite's pace.
   */
  makeHost: (name: string, ip: string) => string;
}

/**
 * The ray and vllm tests' sim root and tools: the tools never see this process's Ray client variables, and the
 * children they started are ended after the tests.
 */
export function useRaySimTools(prefix: string, vllm: HostConfig['vllm']): RaySimTools {
  const { root, binDir } = useSimRoot(prefix, () => tools.killChildren());
  const tools = simTools(binDir, { unsetEnv: RAY_CLIENT_ENV });
  return {
    ...tools,
    makeHost: (name, ip) =>
      makeSimHost(join(root, name), { name, address: ip, clusterIp: ip, gpuMemoryMiB: 121690, vllm }),
  };
}

/** `run` and `background` bound to `binDir` and `options`, tracking the children they start. */
export function simTools(binDir: string, options: Omit<SimToolOptions, 'env'> = {}): SimTools {
  const children: ChildProcess[] = [];
  return {
    children,
    run: (hostDir, tool, args, extra = {}) =>
      runSimTool(binDir, hostDir, tool, args, { ...options, env: extra }),
    background: (hostDir, tool, args, extra = {}) => {
      const started = startSimTool(binDir, hostDir, tool, args, { ...options, env: extra });
      children.push(started.child);
      return started;
    },
    killChildren: () => killChildren(children),
  };
}

/** SIGKILLs every one of `children` that has not exited yet. */
export function killChildren(children: readonly ChildProcess[]): void {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** SIGKILLs the daemons simulated `ray` recorded in these host dirs (not our children, so found this way). */
export function killRayProcs(hostDirs: readonly string[]): void {
  for (const dir of hostDirs) {
    for (const f of safeReaddir(join(dir, 'ray', 'procs'))) {
      const pid = readJson<{ pid: number }>(join(dir, 'ray', 'procs', f))?.pid;
      if (pid && isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  }
}

/** Resolves once `check` holds; throws after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** True when `pid` is gone or a zombie. */
export function deadOrZombie(pid: number): boolean {
  return !isAlive(pid);
}

/** Living pids (not this process, not zombies) with an environment entry that passes `test`. */
export function pidsWhereEnv(test: (entry: string) => boolean): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    const pid = Number(e);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').some(test) && !deadOrZombie(pid))
        out.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** Living pids whose environment carries exactly `entry` (`NAME=value`). */
export function pidsWithEnv(entry: string): number[] {
  return pidsWhereEnv((kv) => kv === entry);
}

/** Living pids whose environment has an entry starting with `prefix`. */
export function pidsWithEnvPrefix(prefix: string): number[] {
  return pidsWhereEnv((kv) => kv.startsWith(prefix));
}

/**
 * SIGKILLs every process started for host `hostDir`, whatever the test left: each carries LIFTOFF_SIM_HOST_DIR
 * naming that dir (or one below it), inherited from the tool that started it. Does nothing for an empty `hostDir`.
 */
export function killSimHostProcesses(hostDir: string): void {
  if (!hostDir) return;
  const entry = `LIFTOFF_SIM_HOST_DIR=${hostDir}`;
  for (const pid of pidsWhereEnv((kv) => kv === entry || kv.startsWith(`${entry}/`))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}
