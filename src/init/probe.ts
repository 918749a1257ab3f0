// What `liftoff init` reads on one host, read only, through the one SSH executor: each probe is bounded by
// the executor's output cap and parsed line by line; a probe that fails (no nvidia-smi, no docker) reads as
// nothing found, so the spec it leads to says so instead of the whole run failing.
import type { SshSession } from '../ssh/executor.js';
import { parseQueryGpu } from '../parsers/nvidia-smi.js';
import { hostLines } from '../parsers/host-output.js';
import {
  parseIbdev2netdev,
  parseIpv4Addresses,
  type Ipv4Address,
  type RdmaLink,
} from '../parsers/ip-addr.js';
import { ipv4AddressesCommand } from '../host-commands/preflight.js';
import { readContainerCommandLine, readUnitCommandLine, type ReadCommandLine } from './command-line.js';
import {
  containerCommandLineCommand,
  gpuListCommand,
  hfModelsCommand,
  imagesCommand,
  initGpuFields,
  isServingContainer,
  isVllmUnit,
  memTotalCommand,
  rdmaLinksCommand,
  runningContainersCommand,
  unitExecStartCommand,
  vllmUnitsCommand,
} from '../host-commands/init.js';

export interface HostGpu {
  index: number;
  name: string;
  /** null on unified memory (GB10 prints [N/A]). */
  memoryTotalMiB: number | null;
}

export interface CachedModel {
  /** Org/Name. */
  id: string;
  /** The cache folder that holds hub/ (what a volume mounts at /root/.cache/huggingface). */
  cacheDir: string;
}

export interface HostFacts {
  name: string;
  address: string;
  gpus: HostGpu[];
  addresses: Ipv4Address[];
  rdma: RdmaLink[];
  images: { ref: string; id: string }[];
  models: CachedModel[];
  units: string[];
  containers: { name: string; image: string }[];
  /** MemTotal, MiB; null when /proc/meminfo did not say. */
  memTotalMiB: number | null;
  /** The command lines of its vLLM units and inference containers (undefined: not readable), for companions. */
  commandLines: FoundCommandLine[];
}

export interface FoundCommandLine {
  kind: 'unit' | 'container';
  name: string;
  read: ReadCommandLine | undefined;
}

/** How many units and containers a host's command lines are read of: a host listing more is not a real site. */
export const maxCommandLinesRead = 16;

/** `MemTotal:  127535616 kB` (grep's line) in MiB; null for anything else. */
export function parseMemTotalMiB(text: string): number | null {
  const m = /^MemTotal:[ \t]+(\d{1,13}) kB$/.exec(text.trim());
  return m?.[1] ? Math.floor(Number(m[1]) / 1024) : null;
}

const modelFolder = /^(\/[^\s]*)\/hub\/models--([A-Za-z0-9][A-Za-z0-9._-]*)--([A-Za-z0-9][A-Za-z0-9._-]*)$/;
const plainWord = /^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/;

export function parseModels(text: string): CachedModel[] {
  return hostLines(text).flatMap((line) => {
    const m = modelFolder.exec(line.trim());
    return m?.[1] && m[2] && m[3] ? [{ id: `${m[2]}/${m[3]}`, cacheDir: m[1] }] : [];
  });
}

/** nvidia-smi's GPU list; output that does not parse reads as no GPU, like a probe that failed. */
export function parseGpus(text: string): HostGpu[] {
  try {
    return parseQueryGpu(text, [...initGpuFields]).map((row) => ({
      index: Number(row['index'] ?? -1),
      name: String(row['name'] ?? ''),
      memoryTotalMiB: typeof row['memory.total'] === 'number' ? row['memory.total'] : null,
    }));
  } catch {
    return [];
  }
}

/** Two words a line (`NAME IMAGE`, `REF ID`), each a plain word; anything else is dropped. */
function pairs(text: string): [string, string][] {
  return hostLines(text).flatMap((line): [string, string][] => {
    const [a = '', b = '', ...rest] = line.trim().split(/\s+/);
    return rest.length === 0 && plainWord.test(a) && plainWord.test(b) ? [[a, b]] : [];
  });
}

export async function probeHost(session: SshSession, name: string, address: string): Promise<HostFacts> {
  const run = async (cmd: Parameters<SshSession['exec']>[0]): Promise<string> => {
    const res = await session.exec(cmd, { timeoutMs: 30_000, check: false });
    return res.exitCode === 0 ? res.stdout : '';
  };
  const [gpus, ip, rdma, images, models, unitList, containerList, memTotal] = await Promise.all([
    run(gpuListCommand()),
    run(ipv4AddressesCommand()),
    run(rdmaLinksCommand()),
    run(imagesCommand()),
    run(hfModelsCommand()),
    run(vllmUnitsCommand()),
    run(runningContainersCommand()),
    run(memTotalCommand()),
  ]);
  const units = hostLines(unitList)
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter((u) => /^[A-Za-z0-9@._:-]+\.service$/.test(u));
  const containers = pairs(containerList).map(([n, image]) => ({ name: n, image }));
  // Then each vLLM unit's and inference container's command line: what init offers as a companion.
  const commandLines = await Promise.all([
    ...units
      .filter(isVllmUnit)
      .slice(0, maxCommandLinesRead)
      .map(async (u): Promise<FoundCommandLine> => ({
        kind: 'unit',
        name: u,
        read: readUnitCommandLine(await run(unitExecStartCommand(u))),
      })),
    ...containers
      .filter(isServingContainer)
      .slice(0, maxCommandLinesRead)
      .map(async (c): Promise<FoundCommandLine> => ({
        kind: 'container',
        name: c.name,
        read: readContainerCommandLine(c.name, await run(containerCommandLineCommand(c.name))),
      })),
  ]);
  return {
    name,
    address,
    gpus: parseGpus(gpus),
    addresses: parseIpv4Addresses(ip),
    rdma: parseIbdev2netdev(rdma),
    images: pairs(images)
      .filter(([ref]) => !ref.includes('<none>'))
      .map(([ref, id]) => ({ ref, id })),
    models: parseModels(models),
    units,
    containers,
    memTotalMiB: parseMemTotalMiB(memTotal),
    commandLines,
  };
}
