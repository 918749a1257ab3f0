// What one host says about itself for the agreement checks, parsed from the output of each of its reads
// (src/steps/agreement-read.ts), by the read's section name. Host output is hostile: every read was bounded on the
// host, each line is matched with anchored, linear patterns, and a line that does not parse is skipped, never
// guessed at.
import { parseIpv4Addresses, type Ipv4Address } from './ip-addr.js';

/** At most this many weight files are listed per host (src/host-commands/agreement.ts lists them). */
export const weightListLimit = 20_000;

export interface WeightEntry {
  /** Relative to the model folder, as find prints it (`./snapshots/<hash>/config.json`). */
  path: string;
  /** `broken`: a symbolic link whose target is missing (find -L reports it as a link). */
  kind: 'file' | 'broken';
  bytes: number;
}

export interface SafetensorsIndex {
  /** The index file, relative to the model folder. */
  file: string;
  /** metadata.total_size: the tensor bytes of every shard together, when the index has it. */
  totalSize?: number;
  /** Shard file names the weight_map names, each once. */
  shards: string[];
}

export type RayPortProbe = { outcome: 'open' | 'refused' | 'blocked'; detail: string };

export interface LogindState {
  /** False when logind does not answer (no systemd): nothing then removes a user's IPC objects. */
  answers: boolean;
  removeIpc?: boolean;
  uid?: number;
  user?: string;
  linger?: boolean;
}

export interface ImageVersions {
  python?: string;
  ray?: string;
  vllm?: string;
}

export interface HostFacts {
  host: string;
  /** Host clock minus the worker's, in ms, measured when the read started (a few ms of latency included). */
  clockOffsetMs?: number;
  /** /etc/machine-id: 32 hex digits, or undefined when the host has none. */
  machineId?: string;
  imageId?: string;
  addresses: Ipv4Address[];
  mtus: Record<string, number>;
  /** Undefined when the model folder could not be listed (the per-host model check reports that). */
  weights?: { entries: WeightEntry[]; truncated: boolean };
  indexes: SafetensorsIndex[];
  /** sha256 by path, when preflight.hashWeights asked for it. */
  hashes?: Record<string, string>;
  /** Workers only: a TCP connect to the head's clusterIp on the Ray port. */
  rayPort?: RayPortProbe;
  logind: LogindState;
  /** Read on one host per distinct image ID (activities/agreement.ts). */
  versions?: ImageVersions;
  /** `uname -r`. Absent from facts read before revisions (issue 30), as are the two below. */
  kernel?: string;
  /** The GPU driver's version as nvidia-smi reports it; absent when nvidia-smi fails. */
  driver?: string;
  /** sha256 of the model folder's first safetensors index (the first weight-indexes lists). */
  indexSha256?: { file: string; sha256: string };
}

/** What each read printed, as lines (empty ones dropped), by its section name; a read that did not run has none. */
export type FactSections = ReadonlyMap<FactSection, string[]>;

export type FactSection =
  | 'clock'
  | 'machine'
  | 'image'
  | 'addr'
  | 'link'
  | 'weights'
  | 'index'
  | 'ipc'
  | 'hash'
  | 'ray'
  | 'kernel'
  | 'driver'
  | 'index-sha';

export function parseHostFacts(host: string, sections: FactSections, startedAtMs: number): HostFacts {
  const lines = (name: FactSection): string[] => sections.get(name) ?? [];
  const clock = lines('clock')[0]?.trim() ?? '';
  const imageLine = lines('image')[0]?.trim() ?? '';
  const machineLine = lines('machine')[0]?.trim() ?? '';
  const weightLines = sections.get('weights');
  const hashes = sections.get('hash');
  const ray = sections.get('ray');
  return {
    host,
    clockOffsetMs: /^\d{13,20}$/.test(clock) ? Number(clock.slice(0, -6)) - startedAtMs : undefined,
    machineId: /^[0-9a-f]{32}$/.test(machineLine) ? machineLine : undefined,
    imageId: /^sha256:[0-9a-f]{64}$/.test(imageLine) ? imageLine : undefined,
    addresses: parseIpv4Addresses(lines('addr').join('\n')),
    mtus: parseMtus(lines('link')),
    weights: weightLines && !weightLines.includes('unreadable') ? parseWeights(weightLines) : undefined,
    indexes: parseIndexes(lines('index')),
    logind: parseLogind(lines('ipc')),
    hashes: hashes && parseHashes(hashes),
    rayPort: ray && parseRayProbe(ray),
    kernel: parseKernel(lines('kernel')),
    driver: parseDriver(lines('driver')),
    indexSha256: parseIndexSha256(lines('index-sha')),
  };
}

/** `uname -r`: `6.11.0-1016-nvidia`; printable, no spaces, at most 100 characters. */
export function parseKernel(lines: string[]): string | undefined {
  const line = lines[0]?.trim() ?? '';
  return /^[!-~]{1,100}$/.test(line) ? line : undefined;
}

/** The GPU driver read prints at most this many bytes (src/host-commands/agreement.ts). */
export const driverReadBytes = 1024;

/**
 * nvidia-smi's driver_version, one line per GPU (`580.95.05`), then `failed` when nvidia-smi exited non-zero:
 * the first line counts only when nvidia-smi succeeded and the read was not cut at its bound (a cut could drop
 * the `failed` mark).
 */
export function parseDriver(lines: string[]): string | undefined {
  const bytes = lines.reduce((n, l) => n + l.length + 1, 0);
  if (bytes >= driverReadBytes || lines.some((l) => l.trim() === 'failed')) return undefined;
  const line = lines[0]?.trim() ?? '';
  return /^\d{1,4}(\.\d{1,4}){1,3}$/.test(line) ? line : undefined;
}

/**
 * `sha256sum` of the first index: `<64 hex>  ./…/model.safetensors.index.json`. The name is required at the end,
 * so a line the host's byte bound cut is not taken; sha256sum marks a name with a newline or a backslash by a
 * leading backslash, which does not match either.
 */
export function parseIndexSha256(lines: string[]): HostFacts['indexSha256'] {
  const m = /^([0-9a-f]{64}) [ *](\.\/.{1,1100})$/.exec(lines[0] ?? '');
  const file = m?.[2];
  const named = file === './model.safetensors.index.json' || file?.endsWith('/model.safetensors.index.json');
  return m?.[1] && file && named ? { file, sha256: m[1] } : undefined;
}

/** `ip -o link show`: `2: enp1s0f1np1@if5: <BROADCAST,MULTICAST,UP> mtu 1500 qdisc …`. */
export function parseMtus(lines: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of lines) {
    const words = line.split(/\s+/);
    const name = /^([^\s@:]+)(?:@[^\s:]*)?:$/.exec(words[1] ?? '')?.[1];
    const at = words.indexOf('mtu');
    const mtu = at > 0 ? Number(words[at + 1]) : NaN;
    if (/^\d+:$/.test(words[0] ?? '') && name && Number.isInteger(mtu)) out[name] = mtu;
  }
  return out;
}

/** `find -L … -printf '%y %s %p\n'`: `f 64 ./snapshots/…/model-00001-of-00039.safetensors`, `l` for a broken link. */
export function parseWeights(lines: string[]): { entries: WeightEntry[]; truncated: boolean } {
  const entries: WeightEntry[] = [];
  for (const line of lines.slice(0, weightListLimit)) {
    const m = /^([fl]) (\d{1,16}) (\.\/.+)$/.exec(line);
    if (m?.[1] && m[2] && m[3])
      entries.push({ kind: m[1] === 'f' ? 'file' : 'broken', bytes: Number(m[2]), path: m[3] });
  }
  return { entries, truncated: lines.length > weightListLimit };
}

/** Per index file: `file ./…/model.safetensors.index.json`, its `"total_size": N`, then `"<shard>.safetensors"` lines. */
export function parseIndexes(lines: string[]): SafetensorsIndex[] {
  const out: SafetensorsIndex[] = [];
  let current: SafetensorsIndex | undefined;
  // The current index's shards as a set: each line is checked in constant time, so the parse stays linear in
  // the lines however many shard names a host prints (a scan of the list made it quadratic: 150 s at 50 000).
  let seen = new Set<string>();
  for (const line of lines) {
    if (line.startsWith('file ./')) {
      current = { file: line.slice('file '.length), shards: [] };
      seen = new Set();
      out.push(current);
      continue;
    }
    if (!current) continue;
    const total = /^"total_size"\s*:\s*(\d{1,20})$/.exec(line);
    if (total?.[1]) current.totalSize = Number(total[1]);
    const shard = /^"([^"/\\]{1,255}\.safetensors)"$/.exec(line);
    if (shard?.[1] && !seen.has(shard[1])) {
      seen.add(shard[1]);
      current.shards.push(shard[1]);
    }
  }
  return out;
}

/** `sha256sum`: `<64 hex>  ./path`. */
export function parseHashes(lines: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines) {
    const m = /^([0-9a-f]{64}) [ *](\.\/.+)$/.exec(line);
    if (m?.[1] && m[2]) out[m[2]] = m[1];
  }
  return out;
}

/** `exit N` of `timeout 3 bash -c 'exec 3<>/dev/tcp/…'`, then what it printed. */
export function parseRayProbe(lines: string[]): RayPortProbe {
  const code = Number(/^exit (\d{1,3})$/.exec(lines[0] ?? '')?.[1] ?? NaN);
  // bash says `bash: connect: No route to host`, then the same again for the redirection: the first is enough.
  const first = (lines[1] ?? '').slice(0, 300);
  const said = first.slice(first.lastIndexOf(': ') + 2).trim();
  if (code === 0) return { outcome: 'open', detail: 'connected' };
  // A refusal is the head's own answer (nothing listens there before the deploy): the path is open.
  if (/Connection refused/.test(said)) return { outcome: 'refused', detail: 'connection refused' };
  if (code === 124) return { outcome: 'blocked', detail: 'no answer within 3 s (a firewall dropping it?)' };
  return { outcome: 'blocked', detail: said || `exit ${Number.isNaN(code) ? '?' : code}` };
}

/** `uid=N`, `user=NAME`, then `loginctl show-session`/`show-user` properties and their exits. */
export function parseLogind(lines: string[]): LogindState {
  const props = new Map<string, string>();
  for (const line of lines) {
    const m = /^([A-Za-z-]{1,20})=(.{0,100})$/.exec(line);
    if (m?.[1] && m[2] !== undefined && !props.has(m[1])) props.set(m[1], m[2]);
  }
  const yesNo = (v: string | undefined): boolean | undefined =>
    v === 'yes' ? true : v === 'no' ? false : undefined;
  const answers = props.get('session-exit') === '0' && props.has('RemoveIPC');
  const userKnown = props.get('user-exit') === '0';
  // logind's view of the user when it tracks the session; otherwise what id says.
  const uidText = (userKnown ? props.get('UID') : undefined) ?? props.get('uid');
  const uid = uidText !== undefined && /^\d{1,10}$/.test(uidText) ? Number(uidText) : undefined;
  return {
    answers,
    removeIpc: answers ? yesNo(props.get('RemoveIPC')) : undefined,
    uid,
    user: (userKnown ? props.get('Name') : undefined) ?? props.get('user'),
    linger: userKnown ? yesNo(props.get('Linger')) : undefined,
  };
}

/** `python 3.12.3`, `ray 2.49.1`, `vllm 0.11.0` (`-` for a package that is not installed). */
export function parseVersions(text: string): ImageVersions | undefined {
  const out: ImageVersions = {};
  for (const line of text.split('\n')) {
    const m = /^(python|ray|vllm) ([0-9A-Za-z.+_-]{1,40})$/.exec(line.trim());
    if (m?.[1] && m[2]) out[m[1] as keyof ImageVersions] = m[2];
  }
  return out.python === undefined ? undefined : out;
}
