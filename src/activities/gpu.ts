// GPU state on a host (nvidia-smi device and compute-app queries, MemAvailable for unified memory), and the
// check that nothing holds the GPUs before a launch.
import { ApplicationFailure } from '@temporalio/common';
import { gpuFields, gpuStateCommand } from '../host-commands/cleanup.js';
import { parseSections, sectionProblem, splitStderr } from '../parsers/sections.js';
import { tail } from '../shared/text.js';
import type { SshSession } from '../ssh/executor.js';
import { judgeGpusClear, parseComputeApps, parseQueryGpu, type GpuLook } from '../parsers/nvidia-smi.js';
import { parseMeminfo } from '../parsers/meminfo.js';
import { boundedNumber, HostOutputError } from '../parsers/host-output.js';
import { FailureType } from '../shared/failures.js';
import { onHost } from './ssh-context.js';
import type { HostRef } from '../config/targets.js';
import type { VerifyGpusClearInput } from './types.js';

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

export interface GpuState extends GpuLook {
  gpus: GpuDevice[];
  processes: GpuProcessInfo[];
}

export async function readGpuState(ref: HostRef): Promise<GpuState> {
  return onHost(ref, (session) => queryGpuState(session, ref.target.name));
}

/** A figure no real nvidia-smi or kernel prints fails the step at once: no retry makes it trustworthy. */
function invalidOutputFailure(host: string, err: HostOutputError): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.hostOutputInvalid,
    message: `GPU state of ${host} cannot be judged: ${err.message}`,
    nonRetryable: true,
    details: [{ host }],
  });
}

/** Step 4 of the deploy: nothing may hold the GPUs before Ray starts (judgeGpusClear), else a retryable GpuNotClear. */
export async function verifyGpusClear(input: VerifyGpusClearInput): Promise<GpuState> {
  const host = input.host.target.name;
  const state = await onHost(input.host, (session) => queryGpuState(session, host)).catch((err: unknown) => {
    throw err instanceof HostOutputError ? invalidOutputFailure(host, err) : err;
  });
  const verdict = judgeGpusClear(state, input);
  if (verdict.ok) return state;
  // Retryable: the workflow's retry policy (with backoff) is the wait for a killed process's memory.
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
        maxUsedMiB: input.maxUsedMiB,
        minAvailableMiB: input.minAvailableMiB,
      },
    ],
  });
}

// The queries run one after the other: nvidia-smi's view is taken before /proc/meminfo is read, so the
// two describe the same moment as nearly as possible.
/**
 * The three reads in one remote command (cleanup.ts gpuStateCommand). A read that failed fails the state as a
 * failed command always did (RemoteCommandError, final), naming every read that failed, not only the first; a
 * read cut at its bound is output no real tool prints (HostOutputError).
 */
async function queryGpuState(session: SshSession, host: string): Promise<GpuState> {
  const reads = gpuStateCommand();
  const res = await session.exec(reads.command, {
    timeoutMs: 45_000,
    check: false,
    stdoutBytes: true,
    maxOutputBytes: reads.maxOutputBytes,
  });
  const out = parseSections(res.stdoutBytes ?? Buffer.alloc(0), reads.bounds);
  const what = {
    gpus: 'nvidia-smi --query-gpu',
    apps: 'nvidia-smi --query-compute-apps',
    meminfo: '/proc/meminfo',
  };
  const failed: string[] = [];
  const stdout: Record<string, string> = {};
  for (const [name, label] of Object.entries(what)) {
    const s = out.sections.get(name);
    if (s?.cut) {
      throw new HostOutputError(
        `${label} printed more than ${reads.bounds[name]} bytes, far more than that tool prints: its output cannot be trusted; check it on the host by hand.`,
      );
    }
    const problem = sectionProblem(s, name);
    const split = splitStderr(s?.text ?? '');
    if (problem) failed.push(`${label}: ${problem}`);
    else if (s?.exitCode !== 0)
      failed.push(
        `${label} exited with code ${s?.exitCode}: ${tail(split.stderr.trim() || split.stdout.trim(), 512)}`,
      );
    stdout[name] = split.stdout;
  }
  if (failed.length > 0) {
    throw ApplicationFailure.create({
      type: 'RemoteCommandError',
      message: `The GPU reads on ${host} failed: ${failed.join('; ')}`,
      nonRetryable: true,
      details: [{ host, failed }],
    });
  }
  const gpus = parseQueryGpu(stdout.gpus ?? '', [...gpuFields]).map((row) => ({
    index: Number(row['index'] ?? -1),
    name: String(row['name'] ?? ''),
    memoryUsedMiB: figure(row['memory.used'], 'memory.used'),
    memoryTotalMiB: figure(row['memory.total'], 'memory.total'),
  }));
  const processes = parseComputeApps(stdout.apps ?? '').map((p) => ({
    pid: p.pid,
    processName: p.processName,
    usedMiB: p.usedMiB,
  }));
  return {
    host,
    gpus,
    processes,
    unifiedMemory: gpus.some((g) => g.memoryTotalMiB === null),
    memAvailableMiB: Math.floor(parseMeminfo(stdout.meminfo ?? '').memAvailableKiB / 1024),
  };
}

/** A memory field: a number, or null when nvidia-smi says it cannot tell; any other text is an error. */
function figure(v: unknown, field: string): number | null {
  if (typeof v === 'number' || v === null) return v;
  return boundedNumber(Number.NaN, `nvidia-smi ${field}`, 0, typeof v === 'string' ? v : JSON.stringify(v));
}
