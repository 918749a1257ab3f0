// Launches `vllm serve` inside the head's Ray container, detached, with its log in a known file on the
// head. Idempotent: a marker next to the log records the launch, so a retried activity finds the server
// it already started instead of starting a second one.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { judgeRayStatus } from '../parsers/ray-status.js';
import { sentence, tail } from '../shared/text.js';
import type { SshSession } from '../ssh/executor.js';
import {
  serveLogTailCommand,
  launchReadsKey,
  markerPathFor,
  pidAliveCommand,
  rayStatusCommand,
  readMarkerCommand,
  launchPreReads,
  markerPidAliveCommand,
  serveLaunchCommand,
  symlinkExit,
} from '../host-commands/launch.js';
import { envTransport } from '../host-commands/env-transport.js';
import { redactedTail, redactText, secretArgValues } from '../shared/secrets.js';
import { heartbeat } from './heartbeat.js';
import { resolveEnv } from './secrets.js';
import { onHost } from './ssh-context.js';
import { prefetchReads, sessionAnswering } from './prefetch.js';
import { takeHandoff } from './step-handoff.js';
import type { LaunchServeResult } from './types.js';
import type { LaunchServeInput } from '../host-commands/launch.js';

/** What the marker file `<logPath>.liftoff.json` on the head holds. */
export interface ServeMarker {
  launchId: string;
  pid: number;
  startedAt: number;
}

export {
  markerPathFor,
  maxTailBytes,
  pipelineParallelSize,
  serveArgv,
  serveLogTailCommand,
} from '../host-commands/launch.js';

const tailLines = 40;
/**
 * How old verifyRayCluster's look at the head may be for the launch to go on it: the workflow schedules the launch
 * right after it; a later launch (a resume, a retry) reads the head itself, since a node may have left since.
 */
const handoffFreshMs = 5_000;

/** Whether `pid` is a live process on the host, whoever owns it (pidAliveCommand). */
export async function pidAlive(session: SshSession, pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const res = await session.exec(pidAliveCommand(pid), { timeoutMs: 10_000, check: false });
  return res.exitCode === 0;
}

/**
 * Whether the marker's `pid` runs, from the check read beside the marker (launchPreReads) when it checked that
 * same pid; else asked on its own.
 */
async function markerPidAlive(session: SshSession, markerPath: string, pid: number): Promise<boolean> {
  const res = await session.exec(markerPidAliveCommand(markerPath), { timeoutMs: 10_000, check: false });
  const checked = res.stdout.trim();
  if ((res.exitCode === 0 || res.exitCode === 1) && /^[0-9]{1,9}$/.test(checked) && Number(checked) === pid)
    return res.exitCode === 0;
  return pidAlive(session, pid);
}

/** The last lines of the serve log, redacted; '' when the file is missing. */
export async function serveLogTail(
  session: SshSession,
  logPath: string,
  secrets: readonly string[],
  lines = tailLines,
): Promise<string> {
  const res = await session.exec(serveLogTailCommand(logPath, lines), {
    timeoutMs: 15_000,
    check: false,
  });
  return redactText(res.stdout.trimEnd(), secrets);
}

async function readMarker(session: SshSession, path: string): Promise<ServeMarker | undefined> {
  // The marker is one short JSON line; anything longer is not ours.
  const res = await session.exec(readMarkerCommand(path), {
    timeoutMs: 10_000,
    check: false,
  });
  if (res.exitCode !== 0) return undefined;
  try {
    const parsed = JSON.parse(res.stdout) as Partial<ServeMarker>;
    if (typeof parsed.launchId !== 'string' || typeof parsed.pid !== 'number') return undefined;
    return {
      launchId: parsed.launchId,
      pid: parsed.pid,
      startedAt: typeof parsed.startedAt === 'number' ? parsed.startedAt : 0,
    };
  } catch {
    return undefined;
  }
}

/** Ray must still have the GPUs the server needs: the cluster was verified, but a node may have left since. */
async function recheckRay(session: SshSession, input: LaunchServeInput): Promise<void> {
  const host = session.target.name;
  const res = await session.exec(rayStatusCommand(input.container), { timeoutMs: 30_000, check: false });
  const verdict = judgeRayStatus(
    res,
    { gpus: input.tensorParallelSize },
    { host, container: input.container },
  );
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

export async function launchServe(input: LaunchServeInput): Promise<LaunchServeResult> {
  const host = input.head.target.name;
  const markerPath = markerPathFor(input.logPath);
  const env = await resolveEnv(input.env);
  const secrets = [
    ...[...env.secretNames].map((n) => env.values[n] ?? '').filter((v) => v !== ''),
    ...secretArgValues(input.args),
  ];
  return onHost(input.head, async (direct) => {
    // The marker, whether its pid runs, and Ray's state: as verifyRayCluster last saw them a moment ago in this
    // worker, or else read in one round trip.
    const handed = takeHandoff(
      'launchReads',
      launchReadsKey(host, input.container, markerPath),
      handoffFreshMs,
    );
    const session = handed
      ? sessionAnswering(direct, handed)
      : await prefetchReads(direct, launchPreReads(input.container, markerPath, 'launch'), {
          timeoutMs: 40_000,
        });
    const marker = await readMarker(session, markerPath);
    if (marker?.launchId === input.launchId) {
      if (await markerPidAlive(session, markerPath, marker.pid)) {
        return { pid: marker.pid, logPath: input.logPath, launchedAtMs: marker.startedAt, reused: true };
      }
      const log = await serveLogTail(session, input.logPath, secrets);
      throw ApplicationFailure.create({
        type: FailureType.serverExited,
        message: `vllm serve of launch ${input.launchId} on ${host} (pid ${marker.pid}) has already exited; it is not started twice. See the log ${input.logPath}.\n--- serve log (tail) ---\n${tail(log, 4096)}`,
        nonRetryable: true,
        details: [{ host, pid: marker.pid, logPath: input.logPath, logTail: tail(log, 4096) }],
      });
    }
    if (marker && (await markerPidAlive(session, markerPath, marker.pid))) {
      throw ApplicationFailure.create({
        type: FailureType.serveLaunchFailed,
        message: `A vllm server of an earlier launch (${marker.launchId}, pid ${marker.pid}) still runs on ${host}. Stop it (kill ${marker.pid}, or remove its container) before deploying again.`,
        nonRetryable: true,
        details: [{ host, pid: marker.pid, launchId: marker.launchId }],
      });
    }

    await recheckRay(session, input);
    heartbeat({ host, phase: 'launching' });

    const startedAt = Date.now();
    const transport = envTransport(env.values, env.secretNames);
    const launch = serveLaunchCommand(input, transport, startedAt);
    let res;
    try {
      res = await session.exec(launch, { timeoutMs: 30_000, check: false, stdin: transport.stdin, secrets });
    } catch (err) {
      // The executor's errors quote the command; keep secrets out of the failure. Final, as the launch profile
      // always treated it: a launch whose command may have half-run is for a person to look at.
      throw ApplicationFailure.create({
        type: FailureType.serveLaunchFailed,
        nonRetryable: true,
        message: redactText(
          `Launching vllm serve on ${host} failed: ${err instanceof Error ? err.message : String(err)}`,
          secrets,
        ),
      });
    }
    if (res.exitCode === symlinkExit) {
      throw ApplicationFailure.create({
        type: FailureType.serveLaunchFailed,
        message: `serve.logPath ${input.logPath} (or its marker ${markerPath}) is a symbolic link on ${host}; the launch truncates the log, and would truncate what the link points at. Nothing was started: remove the link or change serve.logPath.`,
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
    return { pid, logPath: input.logPath, launchedAtMs: startedAt, reused: false };
  });
}
