// Device memory that Ray workers and vLLM take on a simulated host, reported through host-state's GPU registry.
import { rmSync } from 'node:fs';
import {
  gpuProcessFile,
  liveGpuProcesses,
  readHostConfig,
  refreshMeminfo,
  registerGpuProcess,
  type HostConfig,
} from '../../host-state.js';

/** The OS and desktop take this much of GB10's unified memory (matches refreshMeminfo). */
const GB10_SYSTEM_RESERVED_MIB = Math.round(4_000_000 / 1024);

/**
 * What torch.cuda.mem_get_info would report as free on one GPU. On GB10 memory is unified, so every process
 * on the host counts, whatever GPU index it was registered on.
 */
export function freeGpuMemoryMiB(
  dir: string,
  gpuIndex: number,
  cfg: HostConfig = readHostConfig(dir),
): number {
  const procs = liveGpuProcesses(dir);
  const used =
    cfg.flavour === 'gb10'
      ? procs.reduce((s, p) => s + p.usedMiB, 0) + GB10_SYSTEM_RESERVED_MIB
      : procs.filter((p) => p.gpuIndex === gpuIndex).reduce((s, p) => s + p.usedMiB, 0);
  return Math.max(0, cfg.gpuMemoryMiB - used);
}

export function holdGpuMemory(
  dir: string,
  pid: number,
  gpuIndex: number,
  usedMiB: number,
  processName: string,
): void {
  registerGpuProcess(dir, { pid, gpuIndex, usedMiB, processName });
}

/** Releases one GPU's share of a pid (host-state's release drops every GPU of the pid at once). */
export function releaseGpuMemory(dir: string, pid: number, gpuIndex: number): void {
  rmSync(gpuProcessFile(dir, pid, gpuIndex), { force: true });
  refreshMeminfo(dir);
}
