// Reads GPU state on a host: nvidia-smi's device and compute-app queries, and MemAvailable for unified-memory GPUs.
import { sh } from '../ssh/quote.js';
import { parseComputeApps, parseQueryGpu } from '../parsers/nvidia-smi.js';
import { parseMeminfo } from '../parsers/meminfo.js';
import { onHost, type HostRef } from './ssh-context.js';

export interface GpuDevice {
  index: number;
  name: string;
  memoryUsedMiB: number | null;
  memoryTotalMiB: number | null;
}

export interface GpuProcessInfo {
  pid: number;
  processName: string;
  usedMiB: number | null;
}

export interface GpuState {
  host: string;
  gpus: GpuDevice[];
  processes: GpuProcessInfo[];
  /** True when nvidia-smi cannot report device memory (GB10 unified memory): judge by memAvailableMiB instead. */
  unifiedMemory: boolean;
  memAvailableMiB: number;
}

const gpuFields = ['index', 'name', 'memory.used', 'memory.total'] as const;

export async function readGpuState(ref: HostRef): Promise<GpuState> {
  return onHost(ref, async (session) => {
    const devices = await session.exec(
      sh`nvidia-smi --query-gpu=${gpuFields.join(',')} --format=csv,noheader,nounits`,
      { timeoutMs: 20_000 },
    );
    const apps = await session.exec(
      sh`nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits`,
      { timeoutMs: 20_000 },
    );
    const meminfo = await session.exec(sh`cat /proc/meminfo`, { timeoutMs: 10_000 });
    const gpus = parseQueryGpu(devices.stdout, [...gpuFields]).map((row) => ({
      index: Number(row['index'] ?? -1),
      name: String(row['name'] ?? ''),
      memoryUsedMiB: numberOrNull(row['memory.used']),
      memoryTotalMiB: numberOrNull(row['memory.total']),
    }));
    const processes = parseComputeApps(apps.stdout).map((p) => ({
      pid: p.pid,
      processName: p.processName,
      usedMiB: p.usedMiB,
    }));
    return {
      host: ref.target.name,
      gpus,
      processes,
      unifiedMemory: gpus.some((g) => g.memoryTotalMiB === null),
      memAvailableMiB: Math.floor(parseMeminfo(meminfo.stdout).memAvailableKiB / 1024),
    };
  });
}

function numberOrNull(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
