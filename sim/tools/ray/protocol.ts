// Wire protocol between the simulated Ray head (GCS), its worker nodes, `ray status` and vLLM drivers:
// newline-delimited JSON over plain TCP, so a wrong IP or port fails exactly where a real one would.
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { isAlive, paths, readJson } from '../../host-state.js';
import { toolIo } from '../io.js';

export interface NodeInfo {
  nodeId: string;
  ip: string;
  cpus: number;
  gpus: number;
  memoryBytes: number;
  objectStoreBytes: number;
  memoryMonitorDisabled: boolean;
  /** The `ray start` process that represents this node (it holds GPU memory for placement groups). */
  pid: number;
  isHead: boolean;
}

export interface BundlePlacement {
  nodeId: string;
  nodeIp: string;
  gpuIndex: number;
  /** Pid that holds the bundle's GPU memory (the node's ray process); the driver's own node: 0. */
  holderPid: number;
  /** Free device memory seen by the holder just before it took its share; undefined on the driver's node. */
  freeMiB?: number;
  totalMiB?: number;
}

export interface StatusSnapshot {
  nodes: { nodeId: string; cpus: number; gpus: number; memoryBytes: number; objectStoreBytes: number }[];
  usedGpus: number;
  pendingPlacementGroups: string[];
}

export type ClientMessage =
  | { type: 'ping' }
  | { type: 'register'; node: NodeInfo }
  | { type: 'status' }
  | { type: 'requestPlacementGroup'; bundles: number; driverIp: string; memoryMiB: number }
  | { type: 'holdResult'; reqId: number; pid: number; freeMiB: number; totalMiB: number }
  | { type: 'holdFailed'; reqId: number; message: string };

export type ServerMessage =
  | { type: 'ping' }
  | { type: 'registered'; nodeId: string }
  | { type: 'statusReply'; status: StatusSnapshot }
  | { type: 'placementGroupPending'; specs: string; totalGpus: number }
  | {
      type: 'placementGroupReady';
      placementGroupId: string;
      bundles: BundlePlacement[];
      headMemoryMonitorDisabled: boolean;
    }
  | { type: 'placementGroupLost'; nodeId: string; nodeIp: string }
  | { type: 'holdGpu'; reqId: number; placementGroupId: string; gpuIndex: number; memoryMiB: number }
  | { type: 'releaseGpu'; placementGroupId: string };

export type Message = ClientMessage | ServerMessage;

const HEARTBEAT_INTERVAL_MS = 1000;

/**
 * Peers that miss heartbeats this long are treated as gone (a downed link sends no FIN). Real Ray's GCS marks
 * a node dead after 5 failed health checks 3 s apart, each allowed 10 s: a silent node survives about 30 s.
 */
export function heartbeatTimeoutMs(): number {
  const s = Number(toolIo().env.SIM_RAY_HEARTBEAT_TIMEOUT_S ?? '30');
  return Number.isFinite(s) && s > 0 ? s * 1000 : 30_000;
}

/** One side of a connection: frames messages as JSON lines and reports the peer's loss exactly once. */
export class JsonLineChannel<In extends Message, Out extends Message> {
  private buffer = '';
  private closed = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private lastHeardMs = Date.now();
  private readonly messageHandlers: ((msg: In) => void)[] = [];
  private readonly closeHandlers: (() => void)[] = [];

  constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.setNoDelay(true);
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', () => this.finish());
    socket.on('close', () => this.finish());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  onMessage(handler: (msg: In) => void): void {
    this.messageHandlers.push(handler);
  }

  onClose(handler: () => void): void {
    if (this.closed) handler();
    else this.closeHandlers.push(handler);
  }

  send(msg: Out): void {
    if (this.closed) return;
    this.socket.write(`${JSON.stringify(msg)}\n`);
  }

  /** Pings the peer and drops the connection when the peer falls silent. */
  startHeartbeat(): void {
    const timeout = heartbeatTimeoutMs();
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastHeardMs > timeout) {
        this.socket.destroy();
        this.finish();
        return;
      }
      this.send({ type: 'ping' } as Out);
    }, HEARTBEAT_INTERVAL_MS);
    this.heartbeat.unref();
  }

  close(): void {
    this.socket.end();
    this.socket.destroy();
    this.finish();
  }

  private onData(chunk: string): void {
    this.lastHeardMs = Date.now();
    this.buffer += chunk;
    let newline = this.buffer.indexOf('\n');
    while (newline >= 0) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      newline = this.buffer.indexOf('\n');
      if (!line.trim()) continue;
      let msg: In;
      try {
        msg = JSON.parse(line) as In;
      } catch {
        continue;
      }
      if (msg.type === 'ping') continue;
      for (const handler of this.messageHandlers) handler(msg);
    }
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const handler of this.closeHandlers.splice(0)) handler();
  }
}

export interface GcsAddress {
  host: string;
  port: number;
}

export function parseAddress(text: string): GcsAddress | undefined {
  const stripped = text.replace(/^ray:\/\//, '').trim();
  const match = /^(.+):(\d+)$/.exec(stripped);
  if (!match?.[1] || !match[2]) return undefined;
  return { host: match[1], port: Number(match[2]) };
}

export function formatAddress(addr: GcsAddress): string {
  return `${addr.host}:${addr.port}`;
}

export function connectOnce(addr: GcsAddress, localAddress?: string, timeoutMs = 1000): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: addr.host, port: addr.port, ...(localAddress ? { localAddress } : {}) });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('connect timeout'));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}

/** Real Ray gives the GCS 5 seconds; tests may shorten it with SIM_RAY_GCS_CONNECT_TIMEOUT_S. */
export function gcsConnectTimeoutSeconds(): number {
  const s = Number(toolIo().env.SIM_RAY_GCS_CONNECT_TIMEOUT_S ?? '5');
  return Number.isFinite(s) && s > 0 ? s : 5;
}

/** Keeps trying until the deadline, as Ray's GCS client does; undefined when the head never answered. */
/** A client's line to the GCS: it sends ClientMessages and hears ServerMessages. */
export type GcsChannel = JsonLineChannel<ServerMessage, ClientMessage>;

/** A channel to the GCS at `addr` (from `localAddress`), retried for the GCS timeout; undefined once it is spent. */
export async function connectToGcs(addr: GcsAddress, localAddress?: string): Promise<GcsChannel | undefined> {
  const socket = await connectWithRetry(addr, localAddress);
  return socket ? new JsonLineChannel<ServerMessage, ClientMessage>(socket) : undefined;
}

async function connectWithRetry(addr: GcsAddress, localAddress?: string): Promise<Socket | undefined> {
  const deadline = Date.now() + gcsConnectTimeoutSeconds() * 1000;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return undefined;
    try {
      return await connectOnce(addr, localAddress, Math.min(1000, left));
    } catch {
      const pause = Math.min(200, deadline - Date.now());
      if (pause > 0) await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/** Ray's glog-style prefix: `[2026-03-01 22:48:01,851 W 6578 6578] `. */
export function glogPrefix(level: 'I' | 'W' | 'E'): string {
  const d = new Date();
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())},${p(d.getMilliseconds(), 3)}`;
  return `[${stamp} ${level} ${toolIo().pid} ${toolIo().pid}] `;
}

/** `printed`: text the first line ends with (a fault that puts the worker's settings in its error). */
export function gcsUnreachableLines(addr: GcsAddress, printed?: string): string[] {
  return [
    `${glogPrefix('W')}gcs_rpc_client.h:151: Failed to connect to GCS at address ${formatAddress(addr)} within ${gcsConnectTimeoutSeconds()} seconds.${printed ? ` ${printed}` : ''}`,
    `${glogPrefix('W')}gcs_client.cc:187: Failed to get cluster ID from GCS server: TimedOut: Timed out while waiting for GCS to become available.`,
  ];
}

export const NO_RUNNING_RAY_MESSAGE =
  'ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting --address flag or RAY_ADDRESS environment variable.';

/** What `ray start` leaves in the host's ray/ folder. */
export interface HeadRecord {
  address: string;
  pid: number;
  nodeIp: string;
  port: number;
  memoryMonitorRefreshMs: string | null;
  memoryMonitorDisabled: boolean;
  startedAt: string;
}

/** Like Ray's /tmp/ray/ray_current_cluster: the cluster the last `ray start` on this host joined. */
export interface CurrentClusterRecord {
  address: string;
  pid: number;
}

export const rayFiles = {
  head: (dir: string) => join(paths.ray(dir), 'head.json'),
  currentCluster: (dir: string) => join(paths.ray(dir), 'current_cluster.json'),
  procs: (dir: string) => join(paths.ray(dir), 'procs'),
  logs: (dir: string) => join(paths.ray(dir), 'logs'),
};

export type AddressSource =
  | { kind: 'explicit'; addr: GcsAddress }
  | { kind: 'local'; addr: GcsAddress }
  | { kind: 'none' }
  | { kind: 'invalid'; text: string };

/**
 * Finds the cluster the way `ray.init(address="auto")` does: the explicit flag, then RAY_ADDRESS, then what a
 * live `ray start` on this host recorded. A record whose process is dead counts as no running instance.
 */
export function resolveGcsAddress(flag: string | undefined, dir: string | undefined): AddressSource {
  const env = toolIo().env.RAY_ADDRESS;
  const explicit = flag && flag !== 'auto' ? flag : env && env !== 'auto' ? env : undefined;
  if (explicit) {
    const addr = parseAddress(explicit);
    return addr ? { kind: 'explicit', addr } : { kind: 'invalid', text: explicit };
  }
  if (!dir) return { kind: 'none' };
  const head = readJson<HeadRecord>(rayFiles.head(dir));
  const current = readJson<CurrentClusterRecord>(rayFiles.currentCluster(dir));
  for (const record of [head, current]) {
    if (!record || !isAlive(record.pid)) continue;
    const addr = parseAddress(record.address);
    if (addr) return { kind: 'local', addr };
  }
  return { kind: 'none' };
}
