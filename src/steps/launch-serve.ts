// Step 8, launchServe: `vllm serve` in the head's Ray container, detached, its log in serve.logPath. Its reads
// before the launch (the launch marker, whether the marker's pid runs, Ray's state), their judge, the launch
// itself and its judge, and its plan entry. The reads are the head's last look: verifyRayCluster makes them on its
// last poll and returns them parsed (HeadLook), and the workflow passes that look to the launch, which reads the
// head itself only when the look is missing or old. Pure.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { judgeRayCount, judgeRayStatus, type RayCount } from '../parsers/ray-status.js';
import { redactedTail } from '../shared/secrets.js';
import { sentence, tail } from '../shared/text.js';
import type { ExecResult } from '../ssh/executor.js';
import { raw, type RawShell } from '../ssh/quote.js';
import type { DeploySpec } from '../config/schema.js';
import {
  markerPathFor,
  markerPidAliveCommand,
  rayStatusCommand,
  readMarkerCommand,
  serveLaunchCommand,
  symlinkExit,
  type HeadLook,
  type LaunchServeInput,
  type ServeMarker,
} from '../host-commands/launch.js';
import type { EnvTransport } from '../host-commands/env-transport.js';
import { launchServeInput } from '../host-commands/step-inputs.js';
import { answerOf, type Answers, type StepCommand } from '../host-commands/step-command.js';
import {
  planPlaceholders,
  planTransport,
  plannedRun,
  type PlanHost,
  type PlannedStep,
} from './plan-entry.js';

/**
 * How old the look may be for the launch to go on it: the workflow schedules the launch right after the check; a
 * later launch (a resume, a retry) reads the head itself, since a node may have left since. A look stamped by a
 * clock ahead of this worker's is read again too.
 */
export const headLookFreshMs = 5_000;

/**
 * The head's reads before a launch, in one round trip. verifyRayCluster's polls read Ray's state first (what they
 * wait for); the launch's own read takes the marker first and Ray's state last, nearest the launch.
 */
export function preReadCommands(
  container: string,
  markerPath: string,
  by: 'verify' | 'launch',
): StepCommand[] {
  const ray: StepCommand = { name: 'ray-status', command: rayStatusCommand(container) };
  const marker: StepCommand[] = [
    { name: 'marker', command: readMarkerCommand(markerPath) },
    { name: 'marker-pid', command: markerPidAliveCommand(markerPath) },
  ];
  return by === 'verify' ? [ray, ...marker] : [...marker, ray];
}

/** A launch id longer than this is not one liftoff wrote (a workflow id and a run id). */
const maxLaunchIdChars = 512;

/** The marker's content; undefined when there is none or it is not liftoff's one JSON line. */
export function markerOf(res: ExecResult | undefined): ServeMarker | undefined {
  if (!res || res.exitCode !== 0) return undefined;
  try {
    const parsed = JSON.parse(res.stdout) as Partial<ServeMarker>;
    if (typeof parsed.launchId !== 'string' || parsed.launchId.length > maxLaunchIdChars) return undefined;
    if (typeof parsed.pid !== 'number') return undefined;
    return {
      launchId: parsed.launchId,
      pid: parsed.pid,
      startedAt: typeof parsed.startedAt === 'number' ? parsed.startedAt : 0,
    };
  } catch {
    return undefined;
  }
}

/** The marker and whether its pid runs, from the two reads beside each other (markerPidAliveCommand). */
export function markerLookOf(answers: Answers): Pick<HeadLook, 'marker' | 'markerPidAlive'> {
  const marker = markerOf(answers.get('marker'));
  if (!marker) return {};
  const res = answers.get('marker-pid');
  const checked = res?.stdout.trim() ?? '';
  const same =
    res !== undefined &&
    (res.exitCode === 0 || res.exitCode === 1) &&
    /^[0-9]{1,9}$/.test(checked) &&
    Number(checked) === marker.pid;
  return same ? { marker, markerPidAlive: res.exitCode === 0 } : { marker };
}

/** The launch's own read of the head (preReadCommands 'launch'), as the look would give it; Ray's answer judged later. */
export function launchReadOf(
  answers: Answers,
): Pick<HeadLook, 'marker' | 'markerPidAlive'> & { ray: ExecResult } {
  return { ...markerLookOf(answers), ray: answerOf(answers, 'ray-status') };
}

/** The look the launch may go on: of this head, container and marker, and fresh by this worker's clock. */
export function usableLook(
  look: HeadLook | undefined,
  input: LaunchServeInput,
  nowMs: number,
): HeadLook | undefined {
  if (!look) return undefined;
  const age = nowMs - look.atMs;
  const same =
    look.host === input.head.target.name &&
    look.container === input.container &&
    look.markerPath === markerPathFor(input.logPath);
  return same && age >= 0 && age <= headLookFreshMs ? look : undefined;
}

/** The failure of a launch whose marker names this launch and whose server is gone: it is not started twice. */
export function serverExitedFailure(input: LaunchServeInput, pid: number, log: string): ApplicationFailure {
  const host = input.head.target.name;
  return ApplicationFailure.create({
    type: FailureType.serverExited,
    message: `vllm serve of launch ${input.launchId} on ${host} (pid ${pid}) has already exited; it is not started twice. See the log ${input.logPath}.\n--- serve log (tail) ---\n${tail(log, 4096)}`,
    nonRetryable: true,
    details: [{ host, pid, logPath: input.logPath, logTail: tail(log, 4096) }],
  });
}

/** The failure of a launch over an earlier launch's server that still runs. */
export function earlierServerFailure(input: LaunchServeInput, marker: ServeMarker): ApplicationFailure {
  const host = input.head.target.name;
  return ApplicationFailure.create({
    type: FailureType.serveLaunchFailed,
    message: `A vllm server of an earlier launch (${marker.launchId}, pid ${marker.pid}) still runs on ${host}. Stop it (kill ${marker.pid}, or remove its container) before deploying again.`,
    nonRetryable: true,
    details: [{ host, pid: marker.pid, launchId: marker.launchId }],
  });
}

/**
 * Ray must still have the GPUs the server needs: the cluster was verified, but a node may have left since. Judged
 * on the look's counts, or on the launch's own `ray status`; throws when it has not.
 */
export function judgeRayBeforeLaunch(ray: RayCount | ExecResult, input: LaunchServeInput): void {
  const host = input.head.target.name;
  const expected = { gpus: input.tensorParallelSize };
  const verdict =
    'exitCode' in ray
      ? judgeRayStatus(ray, expected, { host, container: input.container })
      : judgeRayCount(ray, expected, host);
  if (verdict.ok) return;
  const gpus = 'seen' in verdict ? verdict.seen.gpus : 0;
  throw ApplicationFailure.create({
    type: verdict.type,
    message:
      'seen' in verdict
        ? `${verdict.message} (tensor parallel size ${input.tensorParallelSize}), checked again before launching vllm. A node left the cluster: check the workers' Ray containers.`
        : `${verdict.message}, checked again before launching vllm. Check the Ray containers (docker ps, docker logs) and deploy again.`,
    nonRetryable: verdict.type === FailureType.hostOutputInvalid,
    details: [
      {
        host,
        gpus,
        needed: input.tensorParallelSize,
        problem: 'problem' in verdict ? verdict.problem : null,
      },
    ],
  });
}

/** The launch: one command starts the server and writes the marker (serveLaunchCommand). */
export function launchCommand(
  input: LaunchServeInput,
  transport: EnvTransport,
  startedAt: number | RawShell,
): StepCommand {
  return {
    name: 'launch',
    command: serveLaunchCommand(input, transport, startedAt),
    change: true,
    stdin: true,
  };
}

/** The server's pid from the launch's answer; throws the launch's failure otherwise. */
export function judgeLaunch(res: ExecResult, input: LaunchServeInput, secrets: readonly string[]): number {
  const host = input.head.target.name;
  if (res.exitCode === symlinkExit) {
    throw ApplicationFailure.create({
      type: FailureType.serveLaunchFailed,
      message: `serve.logPath ${input.logPath} (or its marker ${markerPathFor(input.logPath)}) is a symbolic link on ${host}; the launch truncates the log, and would truncate what the link points at. Nothing was started: remove the link or change serve.logPath.`,
      nonRetryable: true,
      details: [{ host, logPath: input.logPath }],
    });
  }
  const pid = Number(res.stdout.trim().split('\n').pop());
  if (res.exitCode !== 0 || !Number.isInteger(pid) || pid <= 0) {
    throw ApplicationFailure.create({
      type: FailureType.serveLaunchFailed,
      message: `Launching vllm serve on ${host} failed (exit ${res.exitCode}): ${sentence(redactedTail(res.stderr.trim() || res.stdout.trim(), secrets, 2048))} Check that the folder of serve.logPath (${input.logPath}) exists and is writable.`,
      nonRetryable: true,
      details: [{ host, exitCode: res.exitCode, logPath: input.logPath }],
    });
  }
  return pid;
}

/** launchServe on the head, as `liftoff plan` shows it: the same commands the activity runs. */
export function launchServePlan(spec: DeploySpec, launchId: string, head: PlanHost): PlannedStep {
  const input = launchServeInput(spec, launchId, head);
  const markerPath = markerPathFor(spec.serve.logPath);
  return {
    step: 'launchServe',
    commands: [
      plannedRun(preReadCommands(spec.ray.container, markerPath, 'launch'), {
        when: "verifyRayCluster's last look at the head is missing or over 5 s old (a resumed or retried launch)",
      }),
      plannedRun([launchCommand(input, planTransport(spec.serve.env), raw(planPlaceholders.startedAt))]),
    ],
  };
}
