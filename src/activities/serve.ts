// Launches `vllm serve` inside the head's Ray container, detached, with its log in a known file on the head. The
// step's commands and judges are src/steps/launch-serve.ts; this runs them. Idempotent: a marker next to the log
// records the launch, so a retried activity finds the server it already started instead of starting a second one.
import type { SshSession } from '../ssh/executor.js';
import { markerPathFor, pidAliveCommand, serveLogTailCommand } from '../host-commands/launch.js';
import { envTransport } from '../host-commands/env-transport.js';
import {
  earlierServerFailure,
  judgeLaunch,
  judgeRayBeforeLaunch,
  launchCommand,
  launchReadOf,
  preReadCommands,
  serverExitedFailure,
  usableLook,
} from '../steps/launch-serve.js';
import { activityFailure } from './activity-failure.js';
import { FailureType } from '../shared/failures.js';
import { redactText, secretArgValues } from '../shared/secrets.js';
import { currentContext, heartbeat } from './heartbeat.js';
import { redactedLogTail } from './docker.js';
import { resolveEnv, secretsOf } from './secrets.js';
import { onHost } from './ssh-context.js';
import { answerOf, runCommands } from './run-commands.js';
import type { LaunchServeResult } from './types.js';
import type { LaunchServeInput } from '../host-commands/launch.js';

const tailLines = 40;

/** Whether `pid` is a live process on the host, whoever owns it (pidAliveCommand). */
export async function pidAlive(session: SshSession, pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const res = await session.exec(pidAliveCommand(pid), { timeoutMs: 10_000, check: false });
  return res.exitCode === 0;
}

export async function launchServe(input: LaunchServeInput): Promise<LaunchServeResult> {
  const host = input.head.target.name;
  const env = await resolveEnv(input.env);
  const secrets = [...secretsOf(env), ...secretArgValues(input.args)];
  return onHost(input.head, async (session) => {
    // The marker, whether its pid runs, and Ray's state: as verifyRayCluster last saw them a moment ago (the
    // workflow passes its look on), or else read in one round trip. A retry always reads: the attempt before it
    // may have launched after the look was taken. A direct call, outside an activity, is a first attempt.
    const look =
      ((currentContext()?.info.attempt ?? 1) <= 1
        ? usableLook(input.headLook, input, Date.now())
        : undefined) ??
      launchReadOf(
        await runCommands(session, preReadCommands(input.container, markerPathFor(input.logPath), 'launch'), {
          timeoutMs: 40_000,
        }),
      );
    const { marker, markerPidAlive } = look;
    const alive = marker ? (markerPidAlive ?? (await pidAlive(session, marker.pid))) : false;
    if (marker?.launchId === input.launchId) {
      if (alive)
        return { pid: marker.pid, logPath: input.logPath, launchedAtMs: marker.startedAt, reused: true };
      throw serverExitedFailure(
        input,
        marker.pid,
        await redactedLogTail(session, serveLogTailCommand(input.logPath, tailLines), secrets, 15_000),
      );
    }
    if (marker && alive) throw earlierServerFailure(input, marker);
    judgeRayBeforeLaunch(look.ray, input);
    heartbeat({ host, phase: 'launching' });

    const startedAt = Date.now();
    const transport = envTransport(env.values, env.secretNames);
    let res;
    try {
      const launched = await runCommands(session, [launchCommand(input, transport, startedAt)], {
        timeoutMs: 30_000,
        stdin: transport.stdin,
        secrets,
      });
      res = answerOf(launched, 'launch');
    } catch (err) {
      // The executor's errors quote the command; keep secrets out of the failure. Final, as the launch profile
      // always treated it: a launch whose command may have half-run is for a person to look at.
      const said = err instanceof Error ? err.message : String(err);
      throw activityFailure(
        FailureType.serveLaunchFailed,
        redactText(`Launching vllm serve on ${host} failed: ${said}`, secrets),
        true,
      );
    }
    const pid = judgeLaunch(res, input, secrets);
    return { pid, logPath: input.logPath, launchedAtMs: startedAt, reused: false };
  });
}
