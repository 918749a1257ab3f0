// What every simulated Ray node does for placement groups: hold GPU memory for the bundles placed on it, in
// the name of its `ray` process (nvidia-smi then shows `ray::RayWorkerWrapper` with that pid).
import { freeGpuMemoryMiB, holdGpuMemory, releaseGpuMemory } from './gpu.js';

export const RAY_WORKER_PROCESS_NAME = 'ray::RayWorkerWrapper';

export interface HoldOutcome {
  pid: number;
  freeMiB: number;
  totalMiB: number;
}

export class LocalGpuHolder {
  private readonly held = new Map<string, number[]>();

  constructor(
    private readonly dir: string,
    private readonly totalMiB: number,
  ) {}

  hold(placementGroupId: string, gpuIndex: number, memoryMiB: number): HoldOutcome {
    // Free memory is measured before taking the share, as vLLM's startup check sees it.
    const freeMiB = freeGpuMemoryMiB(this.dir, gpuIndex);
    holdGpuMemory(this.dir, process.pid, gpuIndex, memoryMiB, RAY_WORKER_PROCESS_NAME);
    this.held.set(placementGroupId, [...(this.held.get(placementGroupId) ?? []), gpuIndex]);
    return { pid: process.pid, freeMiB, totalMiB: this.totalMiB };
  }

  release(placementGroupId: string): void {
    for (const gpuIndex of this.held.get(placementGroupId) ?? [])
      releaseGpuMemory(this.dir, process.pid, gpuIndex);
    this.held.delete(placementGroupId);
  }

  releaseAll(): void {
    for (const id of [...this.held.keys()]) this.release(id);
  }
}
