// `ray start`: a head (the GCS, see head.ts) or a worker node that joins its head over TCP at the head's IP.
// Without --block it runs itself again in the background with --block and reports the banner.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { freemem } from 'node:os';
import { join } from 'node:path';
import {
  hostDir,
  paths,
  readFaults,
  readHostConfig,
  readJson,
  refreshMeminfo,
  writeJson,
  type HostConfig,
} from '../../host-state.js';
import { numberOption, parseFlags, UsageError, type ParsedArgs } from './args.js';
import { err, out } from './cli.js';
import { BLOCK_TEXT, headBanner, WORKER_BANNER } from './format.js';
import { GcsServer } from './head.js';
import { LocalGpuHolder } from './node.js';
import {
  connectToGcs,
  formatAddress,
  gcsConnectTimeoutSeconds,
  gcsUnreachableLines,
  parseAddress,
  rayFiles,
  type GcsChannel,
  type CurrentClusterRecord,
  type GcsAddress,
  type HeadRecord,
  type NodeInfo,
} from './protocol.js';

const DEFAULT_GCS_PORT = 6379;
const DAEMON_ENV = 'SIM_RAY_DAEMONIZED';

const startSpec = {
  values: [
    'port',
    'node-ip-address',
    'address',
    'num-gpus',
    'num-cpus',
    'memory',
    'object-store-memory',
    'dashboard-host',
    'dashboard-port',
    'include-dashboard',
    'resources',
    'temp-dir',
    'node-name',
    'labels',
    'node-manager-port',
    'object-manager-port',
    'min-worker-port',
    'max-worker-port',
    'ray-client-server-port',
    'dashboard-agent-listen-port',
    'metrics-export-port',
    'runtime-env-agent-port',
    'system-config',
    'plasma-directory',
    'redis-password',
    'log-style',
    'log-color',
  ],
  booleans: ['head', 'block', 'disable-usage-stats', 'verbose', 'no-monitor'],
};

// ---------------------------------------------------------------------------------------------- start

function defaultCpus(cfg: HostConfig): number {
  // The CPU counts of the machines being modelled (DGX Spark: 20 Arm cores; an H200 HGX box: 224 threads).
  return cfg.flavour === 'gb10' ? 20 : 224;
}

function availableMemoryBytes(dir: string): number {
  const file = paths.meminfo(dir);
  if (!existsSync(file)) refreshMeminfo(dir);
  try {
    const match = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync(file, 'utf8'));
    if (match?.[1]) return Number(match[1]) * 1024;
  } catch {
    // fall through to the machine's own figure
  }
  return freemem();
}

function describeNode(
  parsed: ParsedArgs,
  dir: string,
  cfg: HostConfig,
  ip: string,
  isHead: boolean,
): NodeInfo {
  const available = availableMemoryBytes(dir);
  // Ray's defaults: the object store takes 30% of available memory, tasks may use the rest.
  const objectStoreBytes = numberOption(parsed, 'object-store-memory') ?? Math.floor(available * 0.3);
  const memoryBytes = numberOption(parsed, 'memory') ?? Math.max(0, available - objectStoreBytes);
  return {
    nodeId: randomBytes(28).toString('hex'),
    ip,
    cpus: numberOption(parsed, 'num-cpus') ?? defaultCpus(cfg),
    gpus: numberOption(parsed, 'num-gpus') ?? cfg.gpuCount,
    memoryBytes,
    objectStoreBytes,
    memoryMonitorDisabled: process.env.RAY_memory_monitor_refresh_ms === '0',
    pid: process.pid,
    isHead,
  };
}

function recordProcess(dir: string, role: 'head' | 'worker', address: string): () => void {
  mkdirSync(rayFiles.procs(dir), { recursive: true });
  const file = join(rayFiles.procs(dir), `${process.pid}.json`);
  writeJson(file, { pid: process.pid, role, address, startedAt: new Date().toISOString() });
  const current: CurrentClusterRecord = { address, pid: process.pid };
  writeJson(rayFiles.currentCluster(dir), current);
  return () => {
    rmSync(file, { force: true });
    for (const shared of [rayFiles.currentCluster(dir), rayFiles.head(dir)]) {
      if (readJson<{ pid: number }>(shared)?.pid === process.pid) rmSync(shared, { force: true });
    }
  };
}

/** Keeps the process alive until SIGTERM/SIGINT, then runs cleanup and exits 0 (graceful, as for real). */
function blockUntilSignal(cleanup: () => void): Promise<number> {
  return new Promise<number>(() => {
    const onSignal = () => {
      cleanup();
      process.exit(0);
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    // An interval keeps the event loop alive even when every socket is closed.
    setInterval(() => undefined, 1 << 30);
  });
}

/** What `ray start --block` has settled before it becomes a head or a worker. */
interface StartContext {
  parsed: ParsedArgs;
  dir: string;
  cfg: HostConfig;
  nodeIp: string;
  /** The --block notice; a daemonized child leaves it to its parent's banner. */
  printBlockText: boolean;
}

export async function start(rest: string[], allArgs: string[]): Promise<number> {
  const parsed = parseFlags(rest, startSpec);
  if (parsed.positionals.length)
    throw new UsageError(`Got unexpected extra argument (${parsed.positionals[0]})`);
  const isHead = parsed.booleans.has('head');
  if (!isHead && !parsed.values.has('address')) {
    err('ValueError: `ray start` requires either `--head` or `--address`.');
    return 1;
  }
  if (!parsed.booleans.has('block')) return daemonize(allArgs);

  const dir = hostDir();
  const cfg = readHostConfig(dir);
  const nodeIp = parsed.values.get('node-ip-address') ?? cfg.clusterIp;
  const printBlockText = process.env[DAEMON_ENV] !== '1';
  if (parsed.booleans.has('disable-usage-stats')) out('Usage stats collection is disabled.\n\n');
  out(`Local node IP: ${nodeIp}`);
  const context: StartContext = { parsed, dir, cfg, nodeIp, printBlockText };
  return isHead ? runHead(context) : runWorker(context);
}

async function runHead({ parsed, dir, cfg, nodeIp, printBlockText }: StartContext): Promise<number> {
  const port = numberOption(parsed, 'port') ?? DEFAULT_GCS_PORT;
  const node = describeNode(parsed, dir, cfg, nodeIp, true);
  const holder = new LocalGpuHolder(dir, cfg.gpuMemoryMiB);
  const gcs = new GcsServer(node, holder);
  try {
    await gcs.listen(nodeIp, port);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      err(
        `ConnectionError: Ray is trying to start at ${nodeIp}:${port}, but is already running at ${nodeIp}:${port}. Please specify a different port using the \`--port\` flag of \`ray start\` command.`,
      );
    } else {
      err(`Failed to start the GCS server on ${nodeIp}:${port}: ${code ?? String(e)}`);
    }
    return 1;
  }
  const address = `${nodeIp}:${port}`;
  const head: HeadRecord = {
    address,
    pid: process.pid,
    nodeIp,
    port,
    memoryMonitorRefreshMs: process.env.RAY_memory_monitor_refresh_ms ?? null,
    memoryMonitorDisabled: node.memoryMonitorDisabled,
    startedAt: new Date().toISOString(),
  };
  mkdirSync(paths.ray(dir), { recursive: true });
  writeJson(rayFiles.head(dir), head);
  out(headBanner(nodeIp, port, parsed.values.get('dashboard-host') ?? '127.0.0.1').join('\n'));
  if (printBlockText) out(BLOCK_TEXT.join('\n'));
  // Recorded after the banner: a daemonizing parent takes the record as "started".
  const forget = recordProcess(dir, 'head', address);
  return blockUntilSignal(() => {
    gcs.close();
    holder.releaseAll();
    forget();
  });
}

async function runWorker({ parsed, dir, cfg, nodeIp, printBlockText }: StartContext): Promise<number> {
  const addressText = parsed.values.get('address') ?? '';
  const addr = parseAddress(addressText.includes(':') ? addressText : `${addressText}:${DEFAULT_GCS_PORT}`);
  if (!addr) {
    err(`ValueError: Malformed address ${addressText}. Expected '<host>:<port>'.`);
    return 1;
  }
  const channel = await joinCluster(addr, nodeIp, dir);
  if (!channel) {
    const printsEnv = readFaults(dir).rayJoinErrorPrintsEnv;
    const printed = printsEnv ? `${printsEnv}=${process.env[printsEnv] ?? ''}` : undefined;
    for (const line of gcsUnreachableLines(addr, printed)) err(line);
    return 1;
  }
  const node = describeNode(parsed, dir, cfg, nodeIp, false);
  const holder = new LocalGpuHolder(dir, cfg.gpuMemoryMiB);
  const registered = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), gcsConnectTimeoutSeconds() * 1000);
    channel.onMessage((msg) => {
      if (msg.type === 'registered') {
        clearTimeout(timer);
        resolve(true);
      }
    });
    channel.onClose(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  channel.onMessage((msg) => {
    if (msg.type === 'holdGpu') {
      try {
        const outcome = holder.hold(msg.placementGroupId, msg.gpuIndex, msg.memoryMiB);
        channel.send({ type: 'holdResult', reqId: msg.reqId, ...outcome });
      } catch (e) {
        channel.send({ type: 'holdFailed', reqId: msg.reqId, message: String(e) });
      }
    } else if (msg.type === 'releaseGpu') {
      holder.release(msg.placementGroupId);
    }
  });
  channel.send({ type: 'register', node });
  if (!(await registered)) {
    for (const line of gcsUnreachableLines(addr)) err(line);
    return 1;
  }
  channel.startHeartbeat();
  out(WORKER_BANNER.join('\n'));
  if (printBlockText) out(BLOCK_TEXT.join('\n'));
  const forget = recordProcess(dir, 'worker', formatAddress(addr));
  channel.onClose(() => {
    // The head is gone: the raylet cannot live without its GCS, and `ray start --block` reports it.
    holder.releaseAll();
    forget();
    err(
      'Some Ray subprocesses exited unexpectedly:\n  raylet [exit code=1]\nRemaining processes will be killed.',
    );
    process.exit(1);
  });
  return blockUntilSignal(() => {
    channel.close();
    holder.releaseAll();
    forget();
  });
}

async function joinCluster(addr: GcsAddress, nodeIp: string, dir: string): Promise<GcsChannel | undefined> {
  if (readFaults(dir).rayCannotReachHead) {
    // The fault models a head that packets never reach: the client waits out its whole window.
    await new Promise((r) => setTimeout(r, gcsConnectTimeoutSeconds() * 1000));
    return undefined;
  }
  // Connect from the node's own IP, so a node IP that is not on this host fails like a real raylet would.
  return connectToGcs(addr, nodeIp);
}

/** `ray start` without --block: run the same command with --block in the background, report its banner. */
async function daemonize(allArgs: string[]): Promise<number> {
  const dir = hostDir();
  mkdirSync(rayFiles.logs(dir), { recursive: true });
  const logFile = join(rayFiles.logs(dir), `ray-start-${Date.now()}-${process.pid}.log`);
  const logFd = openSync(logFile, 'a');
  // argv is [node, script, <tool name>, ...args]: re-run the same launcher with the same tool.
  const launcher = process.argv.slice(1, process.argv.length - allArgs.length);
  const child = spawn(process.execPath, [...process.execArgv, ...launcher, ...allArgs, '--block'], {
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env: { ...process.env, [DAEMON_ENV]: '1' },
  });
  closeSync(logFd);
  let exitCode: number | undefined;
  child.on('exit', (code, signal) => {
    exitCode = code ?? (signal ? 1 : 0);
  });
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const log = readLog();
    if (exitCode !== undefined) {
      process.stdout.write(log);
      return exitCode === 0 ? 1 : exitCode;
    }
    if (child.pid !== undefined && existsSync(join(rayFiles.procs(dir), `${child.pid}.json`))) {
      process.stdout.write(log);
      child.unref();
      return 0;
    }
  }
}
