// Step 4 of the deploy: nothing may hold the GPUs before Ray starts. Its reads (nvidia-smi's two tables, then
// /proc/meminfo, so the two describe the same moment as nearly as possible) in one round trip; `liftoff probe`
// reads the same state. The verdict is nvidia-smi's one judge (parsers/nvidia-smi.ts judgeGpusClear).
import { ApplicationFailure } from '@temporalio/common';
import { gpuAppsCommand, gpuDevicesCommand, gpuFields, meminfoCommand } from '../host-commands/cleanup.js';
import { answerOf, type Answers, type StepCommand } from '../host-commands/step-command.js';
import { boundedNumber, HostOutputError } from '../parsers/host-output.js';
import { parseMeminfo } from '../parsers/meminfo.js';
import {
  judgeGpusClear,
  parseComputeApps,
  parseQueryGpu,
  type ComputeApp,
  type GpuClearLimits,
  type GpuLook,
} from '../parsers/nvidia-smi.js';
import { plannedRun, type PlannedStep } from './plan-entry.js';
import { FailureType } from '../shared/failures.js';
import { tail } from '../shared/text.js';

export interface GpuDevice {
  index: number;
  name: string;
  memoryUsedMiB: number | null;
  memoryTotalMiB: number | null;
}

export interface GpuState extends GpuLook {
  gpus: GpuDevice[];
  processes: Pick<ComputeApp, 'pid' | 'processName' | 'usedMiB'>[];
}

/** nvidia-smi's two tables: what prints more than this is not a real tool's output. */
const maxGpuReadBytes = 1024 * 1024;
const reads = [
  { name: 'gpus', label: 'nvidia-smi --query-gpu', command: gpuDevicesCommand(), maxBytes: maxGpuReadBytes },
  {
    name: 'apps',
    label: 'nvidia-smi --query-compute-apps',
    command: gpuAppsCommand(),
    maxBytes: maxGpuReadBytes,
  },
  { name: 'meminfo', label: '/proc/meminfo', command: meminfoCommand(), maxBytes: 65536 + 4096 },
] as const;

export const gpuReads = (): StepCommand[] =>
  reads.map(({ name, command, maxBytes }) => ({ name, command, maxBytes }));

/**
 * The GPU state the reads found. A read that failed fails the state as a failed command always did
 * (RemoteCommandError, final), naming every read that failed, not only the first; a read cut at its bound, or a
 * figure no real nvidia-smi or kernel prints, is output that cannot be judged (HostOutputInvalid, final): no retry
 * makes it trustworthy.
 */
export function gpuStateOf(answers: Answers, host: string): GpuState {
  try {
    return parsedState(answers, host);
  } catch (err) {
    if (!(err instanceof HostOutputError)) throw err;
    throw ApplicationFailure.create({
      type: FailureType.hostOutputInvalid,
      message: `GPU state of ${host} cannot be judged: ${err.message}`,
      nonRetryable: true,
      details: [{ host }],
    });
  }
}

function parsedState(answers: Answers, host: string): GpuState {
  const failed: string[] = [];
  for (const { name, label, maxBytes } of reads) {
    const answer = answerOf(answers, name);
    if (answer.stdoutCutBytes !== undefined)
      throw new HostOutputError(
        `${label} printed more than ${maxBytes} bytes, far more than that tool prints: its output cannot be trusted; check it on the host by hand.`,
      );
    if (answer.exitCode !== 0)
      failed.push(
        `${label} exited with code ${answer.exitCode}: ${tail(answer.stderr.trim() || answer.stdout.trim(), 512)}`,
      );
  }
  if (failed.length > 0) {
    throw ApplicationFailure.create({
      type: 'RemoteCommandError',
      message: `The GPU reads on ${host} failed: ${failed.join('; ')}`,
      nonRetryable: true,
      details: [{ host, failed }],
    });
  }
  const gpus = parseQueryGpu(answerOf(answers, 'gpus').stdout, [...gpuFields]).map((row) => ({
    index: Number(row['index'] ?? -1),
    name: String(row['name'] ?? ''),
    memoryUsedMiB: figure(row['memory.used'], 'memory.used'),
    memoryTotalMiB: figure(row['memory.total'], 'memory.total'),
  }));
  const processes = parseComputeApps(answerOf(answers, 'apps').stdout).map((p) => ({
    pid: p.pid,
    processName: p.processName,
    usedMiB: p.usedMiB,
  }));
  return {
    host,
    gpus,
    processes,
    unifiedMemory: gpus.some((g) => g.memoryTotalMiB === null),
    memAvailableMiB: Math.floor(parseMeminfo(answerOf(answers, 'meminfo').stdout).memAvailableKiB / 1024),
  };
}

/** A memory field: a number, or null when nvidia-smi says it cannot tell; any other text is an error. */
function figure(v: unknown, field: string): number | null {
  if (typeof v === 'number' || v === null) return v;
  return boundedNumber(Number.NaN, `nvidia-smi ${field}`, 0, typeof v === 'string' ? v : JSON.stringify(v));
}

/** Clear, or a retryable GpuNotClear: the workflow's retry policy (with backoff) is the wait for freed memory. */
export function judgeGpusClearStep(state: GpuState, limits: GpuClearLimits): GpuState {
  const verdict = judgeGpusClear(state, limits);
  if (verdict.ok) return state;
  throw ApplicationFailure.create({
    type: verdict.type,
    message: verdict.message,
    nonRetryable: false,
    details: [
      {
        host: state.host,
        processes: state.processes,
        busyGpus: verdict.busyGpus,
        unifiedMemory: state.unifiedMemory,
        memAvailableMiB: state.memAvailableMiB,
        maxUsedMiB: limits.maxUsedMiB,
        minAvailableMiB: limits.minAvailableMiB,
      },
    ],
  });
}

/** The plan's entry: the one read, repeated until the GPUs are clear or gpu.clearTimeout has passed. */
export function planGpusClear(gpu: GpuClearLimits & { clearTimeout: string }): PlannedStep {
  return {
    step: 'verifyGpusClear',
    intent: [
      `check the GPUs are clear: no compute process, at most ${gpu.maxUsedMiB} MiB used on each ` +
        `(on unified memory, MemAvailable at least ${gpu.minAvailableMiB} MiB)`,
    ],
    commands: [
      plannedRun(gpuReads(), { repeats: `until the GPUs are clear (gpu.clearTimeout ${gpu.clearTimeout})` }),
    ],
  };
}
