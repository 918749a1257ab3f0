// State of one simulated host, kept in a folder that the host's sshd exports as LIFTOFF_SIM_HOST_DIR.
// Every simulated tool (systemctl, docker, nvidia-smi, ray, vllm) reads and writes it through this module.
import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { PidNamespaces, insideContainer, ownPidNamespace, pidKey, startTicks } from './pid-namespace.js';
import { toolIo, uniqueTmpSuffix } from './tools/io.js';

export type GpuFlavour = 'h200' | 'gb10';

/** Written by `sim up`; read by the tools. */
export interface HostConfig {
  name: string;
  /** Address the control host uses for SSH (management network), or the cluster IP when reachable only through a jump host. */
  address: string;
  /** Interconnect address (NCCL/GLOO/Ray). */
  clusterIp: string;
  /** Interconnect interface name, as NCCL_SOCKET_IFNAME would name it. */
  clusterIface: string;
  flavour: GpuFlavour;
  gpuCount: number;
  /** Device memory per GPU in MiB (h200: 143771). On gb10 the unified system memory in MiB. */
  gpuMemoryMiB: number;
  /** Images `docker image inspect` knows. */
  images: string[];
  /** Paths (inside the host's view of the filesystem) that hold model weights, e.g. the HF cache. */
  modelDirs: string[];
  /** Pace of a simulated vLLM load. */
  vllm: {
    shards: number;
    shardSeconds: number;
    graphCaptureSeconds: number;
    /** MiB of GPU memory the server holds per GPU once loaded. */
    memoryMiB: number;
    /** Seconds one chat completion takes to generate (default 0: answers at once). */
    completionSeconds?: number;
  };
}

/** Faults switched on per host by `sim fault`; read by the tools on each invocation. */
export interface HostFaults {
  crashAtShard?: number;
  hangAtShard?: number;
  oomAtGraphCapture?: boolean;
  /** GPU memory of a killed process stays reported for this many seconds. */
  gpuHeldAfterKillSeconds?: number;
  /** A Ray worker on this host cannot reach its head. */
  rayCannotReachHead?: boolean;
  /**
   * A Ray worker that cannot join prints this variable of its environment (name=value) in the line that says
   * why, as a process that dumps its settings into an error would: what liftoff quotes must come out redacted.
   */
  rayJoinErrorPrintsEnv?: string;
  /**
   * A hung engine: /health stays 200 while chat completions never answer (`hang`) or fail with a 500 (`error`).
   * The running server reads it on every request, so it can be switched on after the server is up.
   */
  completions?: 'hang' | 'error';
  /**
   * With `completions: 'error'`, the 500's message ends with this variable of the server's environment
   * (name=value), as an engine that dumps its settings into an error would: what the supervisor's probe quotes
   * must come out redacted.
   */
  completionErrorPrintsEnv?: string;
  /**
   * The server runs with `--reasoning-parser` and a reasoning model spends the budget thinking: as vLLM 0.32 does,
   * `message.content` is null and the text is under `message.reasoning` (not the older `reasoning_content`).
   */
  reasoningParser?: boolean;
  /**
   * Completions generate tokens that decode to "" (real vLLM: about 40% of a tiny model's one-token answers):
   * `message.content` is "" while usage.completion_tokens counts the tokens generated.
   */
  emptyCompletionText?: boolean;
  /** `docker image inspect` reports other image IDs on this host, as after a pull of a moved tag. */
  imageIdSalt?: string;
}

export interface GpuProcess {
  pid: number;
  processName: string;
  usedMiB: number;
  gpuIndex: number;
  /** Set by the first observer that sees the pid dead. */
  diedAtMs?: number;
  /**
   * The PID namespace `pid` is numbered in (sim/pid-namespace.ts): a process in a real Docker container registers
   * its pid inside the container. Absent in entries of older tools: the host's own namespace.
   */
  pidNamespace?: string;
  /**
   * When `pid` started, in clock ticks since boot (sim/pid-namespace.ts startTicks): tells the registered process
   * from a later one that took its pid, and, with the pid, is how a viewer that may not read the namespace (a
   * non-root SSH user, of a root container's process) finds it.
   */
  startTicks?: number;
}

export function hostDir(): string {
  const dir = toolIo().env.LIFTOFF_SIM_HOST_DIR;
  if (!dir) throw new Error('LIFTOFF_SIM_HOST_DIR is not set: this tool runs only on a simulated host');
  return dir;
}

export const paths = {
  config: (dir: string) => join(dir, 'host.json'),
  faults: (dir: string) => join(dir, 'faults.json'),
  units: (dir: string) => join(dir, 'units'),
  containers: (dir: string) => join(dir, 'containers'),
  gpu: (dir: string) => join(dir, 'gpu'),
  ray: (dir: string) => join(dir, 'ray'),
  launches: (dir: string) => join(dir, 'launches.log'),
  /** Every simulated tool invocation, one JSON argv a line (tools/main.ts): what tests read as "what ran". */
  commands: (dir: string) => join(dir, 'commands.log'),
  /** Per image, the site-packages a simulated container's python3 sees (PYTHONPATH): the image's versions. */
  imageSite: (dir: string, image: string) =>
    join(dir, 'images', image.replace(/[^A-Za-z0-9._-]/g, '_'), 'site'),
  /** Read by the shell shims of sim/shell-shims.ts: the host's logind state and its clock offset. */
  logind: (dir: string) => join(dir, 'logind.env'),
  clockOffset: (dir: string) => join(dir, 'clock-offset'),
  meminfo: (dir: string) => join(dir, 'meminfo'),
  home: (dir: string) => join(dir, 'home'),
  /**
   * The host's tool server (tools/server.ts): its folder (its owner's alone, so another user's call cannot reach the
   * socket and runs as its own process), the socket the thin client connects to, its pid and its log.
   */
  toolServer: (dir: string) => join(dir, 'tool-server'),
  toolSocket: (dir: string) => join(dir, 'tool-server', 'tools.sock'),
  toolServerPid: (dir: string) => join(dir, 'tool-server', 'server.pid'),
  toolServerLog: (dir: string) => join(dir, 'tool-server', 'server.log'),
};

export function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Atomic write: tools on one host run concurrently. */
export function writeJson(file: string, value: unknown): void {
  const tmp = `${file}.${uniqueTmpSuffix()}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2));
  renameSync(tmp, file);
}

export function readHostConfig(dir = hostDir()): HostConfig {
  const cfg = readJson<HostConfig>(paths.config(dir));
  if (!cfg) throw new Error(`no host.json in ${dir}`);
  return cfg;
}

export function readFaults(dir = hostDir()): HostFaults {
  return readJson<HostFaults>(paths.faults(dir)) ?? {};
}

export function writeFaults(dir: string, faults: HostFaults): void {
  writeJson(paths.faults(dir), faults);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/**
 * A killed process whose parent has not reaped it yet still answers kill(pid, 0). Orphans are reaped by
 * PID 1, which on some machines does so only every few seconds, so a zombie must count as dead.
 */
export function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name in parentheses may itself contain spaces or parentheses; the state follows the last ')'.
    return stat.charAt(stat.lastIndexOf(')') + 2) === 'Z';
  } catch {
    return false;
  }
}

/** The registry file of one GPU's share of a pid of the caller's PID namespace. */
export function gpuProcessFile(dir: string, pid: number, gpuIndex: number): string {
  return join(paths.gpu(dir), `${pidKey(pid)}-${gpuIndex}.json`);
}

/** Registers a process of the caller's PID namespace (the caller itself, in every tool). */
export function registerGpuProcess(dir: string, proc: GpuProcess): void {
  mkdirSync(paths.gpu(dir), { recursive: true });
  const pidNamespace = ownPidNamespace();
  const started = startTicks(proc.pid);
  const file = gpuProcessFile(dir, proc.pid, proc.gpuIndex);
  writeJson(file, {
    ...proc,
    ...(pidNamespace ? { pidNamespace } : {}),
    ...(started === undefined ? {} : { startTicks: started }),
  });
  // A holder in a container beats on its file: another container cannot see this process in its /proc, and a
  // beat that stopped is how it tells that the process died (a `docker rm -f` leaves the file behind).
  if (pidNamespace !== undefined && proc.pid === process.pid) {
    setInterval(() => {
      const now = new Date();
      try {
        utimesSync(file, now, now);
      } catch {
        // Released (or the host's state removed): nothing left to beat on.
      }
    }, gpuHeartbeatMs).unref();
  }
  refreshMeminfo(dir);
}

/** How often a containerised GPU holder beats on its registration, and how long without a beat reads as dead. */
const gpuHeartbeatMs = 1000;
const gpuHeartbeatStaleMs = 3000;

/** From inside a container, whether another namespace's holder still beats on its file (see registerGpuProcess). */
function stillBeating(file: string): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs < gpuHeartbeatStaleMs;
  } catch {
    return false;
  }
}

export function releaseGpuProcess(dir: string, pid: number): void {
  for (const f of safeReaddir(paths.gpu(dir))) {
    if (f.startsWith(`${pidKey(pid)}-`)) rmSync(join(paths.gpu(dir), f), { force: true });
  }
  refreshMeminfo(dir);
}

/**
 * Whether `pid` still names the process that started at `started` (startTicks) and lives. Without a start time,
 * whether the pid lives. Pids wrap at pid_max (32768 on the CI machine, where a suite spawns that many in
 * minutes): a killed container's pid taken by some ssh session's `grep` read as the container still running, its
 * GPU memory still held.
 */
export function isAliveSince(pid: number, started: number | undefined): boolean {
  return isAlive(pid) && (started === undefined || startTicks(pid) === started);
}

/**
 * Whether a registered process lives, and its pid as this process sees it. A pid of another PID namespace (a real
 * container's) is looked up by namespace; from inside another container it cannot be seen, and counts as alive.
 */
function gpuProcessNow(
  proc: GpuProcess,
  file: string,
  own: string | undefined,
  others: PidNamespaces,
): { alive: boolean; pid: number } {
  if (proc.pidNamespace === undefined || proc.pidNamespace === own)
    return { alive: isAliveSince(proc.pid, proc.startTicks), pid: proc.pid };
  const hostPid = others.hostPid(proc.pidNamespace, proc.pid, proc.startTicks);
  if (hostPid !== undefined) return { alive: true, pid: hostPid };
  // Inside a container only its own processes show in /proc: another container's holder lives while it beats.
  return { alive: insideContainer() && stillBeating(file), pid: proc.pid };
}

/**
 * GPU processes as nvidia-smi would report them now. A dead process keeps its memory for
 * `gpuHeldAfterKillSeconds` (the fault), counted from when it was first seen dead.
 */
export function liveGpuProcesses(dir = hostDir()): GpuProcess[] {
  const heldSeconds = readFaults(dir).gpuHeldAfterKillSeconds ?? 0;
  const now = Date.now();
  const out: GpuProcess[] = [];
  const own = ownPidNamespace();
  const others = new PidNamespaces();
  for (const f of safeReaddir(paths.gpu(dir))) {
    if (!f.endsWith('.json')) continue;
    const file = join(paths.gpu(dir), f);
    const proc = readJson<GpuProcess>(file);
    if (!proc) continue;
    const seen = gpuProcessNow(proc, file, own, others);
    if (seen.alive) {
      // As nvidia-smi shows it: the pid in the viewer's namespace.
      out.push({ ...proc, pid: seen.pid });
      continue;
    }
    if (proc.diedAtMs === undefined) proc.diedAtMs = now;
    if (now - proc.diedAtMs < heldSeconds * 1000) {
      writeJson(file, proc);
      out.push(proc);
    } else {
      rmSync(file, { force: true });
    }
  }
  // Every look rewrites the fake /proc/meminfo, not only one that forgot a process: a process releasing its
  // memory while others die computes meminfo from a registry that still holds them, and could write it after the
  // look that dropped them, leaving it stale for good (verifyGpusClear: MemAvailable 21710 MiB on a clear host).
  // nvidia-smi runs before meminfo is read, so what is read is what nvidia-smi saw.
  const live = out.sort((a, b) => a.gpuIndex - b.gpuIndex || a.pid - b.pid);
  writeMeminfo(dir, live);
  return live;
}

/** Rewrites the fake /proc/meminfo from the registry as it stands (liveGpuProcesses writes it). */
export function refreshMeminfo(dir: string): void {
  liveGpuProcesses(dir);
}

/** A fake /proc/meminfo (bind-mounted over the real one in namespace mode): on gb10, GPU memory is system memory. */
function writeMeminfo(dir: string, live: readonly GpuProcess[]): void {
  const cfg = readJson<HostConfig>(paths.config(dir));
  if (!cfg) return;
  const totalKb = cfg.flavour === 'gb10' ? cfg.gpuMemoryMiB * 1024 : 263_000_000;
  const usedKb =
    cfg.flavour === 'gb10' ? live.reduce((s, p) => s + p.usedMiB * 1024, 0) + 4_000_000 : 8_000_000;
  const availKb = Math.max(0, totalKb - usedKb);
  const text = [
    `MemTotal:       ${totalKb} kB`,
    `MemFree:        ${availKb} kB`,
    `MemAvailable:   ${availKb} kB`,
    `Buffers:          120000 kB`,
    '',
  ].join('\n');
  // Written in place (a rename would detach the bind mount over /proc/meminfo), and never truncated: every
  // version has the same size and goes out in one write, so a concurrent `cat`, or a writer killed half way
  // (`docker rm -f` of a process releasing its memory), can never leave the file empty.
  // The padding is the spacing of the last line, as the kernel aligns values: every line parses (psutil, Ray).
  const last = ['Cached:', '2400000 kB'] as const;
  const pad = Math.max(1, meminfoBytes - 1 - text.length - last[0].length - last[1].length);
  const body = `${text}${last[0]}${' '.repeat(pad)}${last[1]}\n`;
  const file = paths.meminfo(dir);
  let fd: number;
  try {
    fd = openSync(file, existsSync(file) ? 'r+' : 'w');
  } catch (err) {
    // A viewer that may not write it (a read-only mount in a container) leaves it to the next look that can.
    if (['EACCES', 'EPERM', 'EROFS'].includes((err as NodeJS.ErrnoException).code ?? '')) return;
    throw err;
  }
  try {
    writeSync(fd, body, 0);
    if (fstatSync(fd).size !== body.length) ftruncateSync(fd, body.length);
  } finally {
    closeSync(fd);
  }
}

const meminfoBytes = 512;

export function safeReaddir(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** The `*.json` records of a state folder, sorted by file name; a record that cannot be read is undefined. */
export function readRecords<T>(dir: string): { file: string; record: T | undefined }[] {
  return safeReaddir(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, record: readJson<T>(join(dir, file)) }));
}
