// GPU state on a host (src/steps/gpus-clear.ts declares the reads and the verdict): `liftoff probe`'s look, and
// step 4 of the deploy, which fails while anything holds the GPUs.
import type { HostRef } from '../config/targets.js';
import { gpuReads, gpuStateOf, judgeGpusClearStep, type GpuState } from '../steps/gpus-clear.js';
import { runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';
import type { VerifyGpusClearInput } from './types.js';

export type { GpuDevice, GpuState } from '../steps/gpus-clear.js';

export async function readGpuState(ref: HostRef): Promise<GpuState> {
  return onHost(ref, async (session) =>
    gpuStateOf(await runCommands(session, gpuReads(), { timeoutMs: 45_000 }), ref.target.name),
  );
}

export async function verifyGpusClear(input: VerifyGpusClearInput): Promise<GpuState> {
  return judgeGpusClearStep(await readGpuState(input.host), input);
}
