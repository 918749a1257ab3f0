// Launches `vllm serve` inside the head's Ray container, detached, with its log in a known file on the
// head. Idempotent: a marker next to the log records the launch, so a retried activity finds the server
// it already started instead of starting a second one.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { pipelineParallelSize } from '../config/parallel.js';
import { parseRayStatus, RayNotRunningError, RayStatusParseError } from '../parsers/ray-status.js';
import { tail } from '../shared/text.js';
import type { SshSession } from '../ssh/executor.js';
import { raw, sh, type RemoteCommand } from '../ssh/quote.js';
import { envTransport } from './env-transport.js';
import { redactedTail, redactText, secretArgValues } from '../shared/secrets.js';
import { heartbeat } from './heartbeat.js';
import { resolveEnv } from './secrets.js';
import { onHost } from './ssh-context.js';
import type { LaunchServeInput, LaunchServeResult } from './types.js';

/** What the marker file `<logPath>.liftoff.json` on the head holds. */
export interface ServeMarker {
  launchId: string;
  pid: number;
  startedAt: number;
}

export function markerPathFor(logPath: string): string {
  return `${logPath}.liftoff.json`;
}

const tailLines = 40;
/** A log tail is cut to this many bytes on the host, whatever the length of its lines. */
export const maxTailBytes = 64 * 1024;
const markerMaxBytes = 4096;
/** The launch command's exit status when the log or its marker is a symbolic link. */
const symlinkExit = 4;

/**
 * Whether `pid` is a live process on the host. A process that died but was not reaped yet (a zombie)
 * still answers `kill -0`, so its state is read too.
 */
export async function pidAlive(session: SshSession, pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const res = await session.exec(
    sh`kill -0 ${pid} 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' /proc/${pid}/status`,
    { timeoutMs: 10_000, check: false },
  );
  return res.exitCode === 0;
}

/**
 * Reads the serve log's last lines, and at most maxTailBytes of them: one line can be any length. Every read of
 * the log's tail (health, diagnostics, the failure bundle) is this command.
 */
export function serveLogTailCommand(logPath: string, lines = tailLines): RemoteCommand {
  return sh`tail -n ${lines} -- ${logPath} | tail -c ${maxTailBytes}`;
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
  const res = await session.exec(sh`head -c ${markerMaxBytes} -- ${path}`, {
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

export { pipelineParallelSize };

export function serveArgv(input: LaunchServeInput): string[] {
  // One worker process needs no distributed executor, and platforms without Ray support (vLLM's CPU
  // build) refuse the flag; past one, the workers are placed over the Ray cluster liftoff started.
  const distributed = input.tensorParallelSize * pipelineParallelSize(input.args) > 1;
  return [
    'vllm',
    'serve',
    input.model,
    '--port',
    String(input.port),
    '--tensor-parallel-size',
    String(input.tensorParallelSize),
    ...(distributed ? ['--distributed-executor-backend', 'ray'] : []),
    ...(input.servedModelName ? ['--served-model-name', input.servedModelName] : []),
    ...input.args,
  ];
}

/** Ray must still have the GPUs the server needs: the cluster was verified, but a node may have left since. */
async function recheckRay(session: SshSession, input: LaunchServeInput): Promise<void> {
  const host = session.target.name;
  const res = await session.exec(sh`docker exec ${input.container} ray status`, {
    timeoutMs: 30_000,
    check: false,
  });
  let gpus = 0;
  let problem: string | undefined;
  try {
    gpus = parseRayStatus(`${res.stdout}\n${res.stderr}`).resources.GPU?.total ?? 0;
  } catch (err) {
    if (err instanceof RayNotRunningError) problem = err.detail;
    else if (err instanceof RayStatusParseError)
      problem = redactedTail(`${res.stderr}${res.stdout}`.trim(), [], 512) || `exit code ${res.exitCode}`;
    else throw err;
  }
  if (problem !== undefined || gpus < input.tensorParallelSize) {
    throw ApplicationFailure.create({
      type: FailureType.rayClusterIncomplete,
      message:
        problem !== undefined
          ? `Before launching vllm: Ray in ${input.container} on ${host} does not answer \`ray status\`: ${problem}. Check the Ray containers (docker ps, docker logs) and deploy again.`
          : `Before launching vllm: Ray on ${host} has ${gpus} GPUs but tensor parallel size ${input.tensorParallelSize} needs ${input.tensorParallelSize}. A node left the cluster: check the workers' Ray containers.`,
      details: [{ host, gpus, needed: input.tensorParallelSize, problem: problem ?? null }],
    });
  }
}

export async function launchServe(input: LaunchServeInput): Promise<LaunchServeResult> {
  const host = input.head.target.name;
  const markerPath = markerPathFor(input.logPath);
  const env = await resolveEnv(input.env);
  const secrets = [
    ...[...env.secretNames].map((n) => env.values[n] ?? '').filter((v) => v !== ''),
    ...secretArgValues(input.args),
  ];
  return onHost(input.head, async (session) => {
    const marker = await readMarker(session, markerPath);
    if (marker?.launchId === input.launchId) {
      if (await pidAlive(session, marker.pid)) {
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
    if (marker && (await pidAlive(session, marker.pid))) {
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
    const markerFormat = '{"launchId":%s,"pid":%s,"startedAt":%s}\n';
    // One command starts the server and writes the marker, so no retry can fall between the two. It truncates
    // the log and writes the marker only if neither is a symbolic link (which would truncate its target).
    const launch = sh`${transport.prelude} if [ -L ${input.logPath} ] || [ -L ${markerPath} ]; then exit ${symlinkExit}; fi; : > ${input.logPath} || exit 3; setsid nohup docker exec ${transport.flags} ${input.container} ${serveArgv(input)} > ${input.logPath} 2>&1 < /dev/null & pid=$!; printf ${markerFormat} ${JSON.stringify(input.launchId)} ${raw('"$pid"')} ${startedAt} > ${markerPath} && echo "$pid"`;
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
        message: `Launching vllm serve on ${host} failed (exit ${res.exitCode}): ${redactedTail(res.stderr.trim() || res.stdout.trim(), secrets, 2048)}. Check that the folder of serve.logPath (${input.logPath}) exists and is writable.`,
        nonRetryable: true,
        details: [{ host, exitCode: res.exitCode, logPath: input.logPath }],
      });
    }
    return { pid, logPath: input.logPath, launchedAtMs: startedAt, reused: false };
  });
}
