// The Ray containers: start the head and the workers (`docker run … --entrypoint ray IMAGE start --block`), and
// wait until `ray start` says the node runs. Whether they form one cluster is ray-cluster.ts.
import { FailureType } from '../shared/failures.js';
import { dockerSaid, hostLines } from '../parsers/host-output.js';
import { sentence, tail } from '../shared/text.js';
import {
  rayConfirmPollSeconds,
  rayConfirmWindowSeconds,
  rayRunCommand,
  removeContainerCommand,
  type RayContainerInput,
} from '../host-commands/launch.js';
import { confirmCommands, startCommands } from '../steps/start-ray.js';
import { redactText } from '../shared/secrets.js';
import { activityFailure as failure } from './activity-failure.js';
import { onHost } from './ssh-context.js';
import { answerOf, runCommands, type Answers } from './run-commands.js';
import { heartbeat } from './heartbeat.js';
import { containerLogTail, containerStateOf, pause } from './docker.js';
import { envTransport } from '../host-commands/env-transport.js';
import { resolveEnv, secretsOf } from './secrets.js';
import type { RayContainerResult } from './types.js';

/** How long a started container must stay up before we call it started: a bad flag kills it within a second. */
const confirmWindowMs = rayConfirmWindowSeconds * 1000;
const confirmPollMs = rayConfirmPollSeconds * 1000;
/** What `ray start` prints once the node runs (a worker: once it registered with the head). */
export const rayStarted = /^Ray runtime started\./m;

// Lines after which restarting the same container cannot help: the command or its arguments are wrong.
const configProblems = [
  /ValueError/,
  /Malformed address/,
  /No such (option|command)/,
  /^Usage: /m,
  /^Error: /m,
  /executable file not found/,
  /unknown (shorthand )?flag/,
  /already running at/,
];

/** Whether a pattern matches one of the text's lines, each cut to a few KB first. */
function matchesAnyLine(text: string, patterns: readonly RegExp[]): boolean {
  return hostLines(text).some((line) => patterns.some((p) => p.test(line)));
}

const noGpuRuntime = /could not select device driver/;

// `docker run` errors that a retry cannot fix.
const runConfigProblems = [
  /Unable to find image|pull access denied|No such image/,
  /bind source path does not exist|invalid mount config|invalid spec/,
  /executable file not found/,
  /unknown (shorthand )?flag|invalid argument|Invalid container name|invalid restart policy/,
  noGpuRuntime,
];

/**
 * The failure of a Ray container's `docker run`, quoting what docker said (redacted by the caller) as one sentence:
 * Docker 20.10 ends its error with a period and a pointer to --help, which read as "..". Fatal when no retry can
 * help (the image, a mount, a flag, no GPU runtime).
 */
export function rayRunFailure(
  what: { role: 'head' | 'worker'; container: string; host: string },
  exitCode: number,
  said: string,
): { message: string; fatal: boolean } {
  const fatal = matchesAnyLine(said, runConfigProblems);
  // No spec change gives a host's Docker the GPU runtime: the fix is on that host (preflight's GPU check says it
  // first; this is for a runtime removed between preflight and the launch).
  const advice = matchesAnyLine(said, [noGpuRuntime])
    ? ` Docker on ${what.host} cannot give containers GPUs: install the NVIDIA container toolkit there (nvidia-container-toolkit; then sudo nvidia-ctk runtime configure --runtime=docker and restart Docker) and deploy again.`
    : fatal
      ? ' Fix the image, volumes or flags in the spec (ray.*) and deploy again.'
      : ' Check the docker daemon on that host.';
  return {
    message: `docker run of the Ray ${what.role} container ${what.container} on ${what.host} failed (exit ${exitCode}): ${sentence(tail(dockerSaid(said), 2048))}${advice}`,
    fatal,
  };
}

export async function startRayHead(input: RayContainerInput): Promise<RayContainerResult> {
  return startRayContainer(input, 'head');
}

export async function startRayWorker(input: RayContainerInput): Promise<RayContainerResult> {
  if (!input.headAddress) {
    throw failure(
      FailureType.invalidSpec,
      `startRayWorker on ${input.host.target.name}: headAddress (head clusterIp:port) is required`,
      true,
    );
  }
  return startRayContainer(input, 'worker');
}

async function startRayContainer(
  input: RayContainerInput,
  role: 'head' | 'worker',
): Promise<RayContainerResult> {
  const host = input.host.target.name;
  const resolved = await resolveEnv(input.env);
  const env: Record<string, string> = { ...resolved.values, VLLM_HOST_IP: input.clusterIp };
  const transport = envTransport(env, resolved.secretNames);
  const secrets = secretsOf({ values: env, secretNames: resolved.secretNames });
  return onHost(input.host, async (session) => {
    const run = rayRunCommand(input, role, transport);
    // The confirm window starts with the run; the trip below spends it waiting on the host.
    let deadline = Date.now() + confirmWindowMs;
    // The state, the run unless the name is taken, and the first confirm read, in one round trip.
    const trip = await runCommands(session, startCommands(input.container, run), {
      timeoutMs: 150_000,
      stdin: transport.stdin,
      secrets,
    });
    const existing = containerStateOf(answerOf(trip, 'existing'), input.container, host);
    // What the trip confirmed is of the container it started; after an earlier one, every read is made anew.
    let confirm: Answers | undefined = trip;
    if (existing.exists) {
      if (existing.running && existing.labels['liftoff.launch'] === input.launchId) {
        return { host, containerId: existing.id ?? '', reused: true };
      }
      // Another launch's container, or this launch's that died: it must go before the name is free.
      await session.exec(removeContainerCommand(input.container), { timeoutMs: 60_000 });
      confirm = undefined;
      deadline = Date.now() + confirmWindowMs;
    }

    const started =
      confirm?.get('run') ??
      answerOf(
        await runCommands(session, [{ name: 'run', command: run, change: true, stdin: true }], {
          timeoutMs: 120_000,
          stdin: transport.stdin,
          secrets,
        }),
        'run',
      );
    if (started.exitCode !== 0) {
      const why = redactText(started.stderr.trim() || started.stdout.trim(), secrets);
      const { message, fatal } = rayRunFailure(
        { role, container: input.container, host },
        started.exitCode,
        why,
      );
      throw failure(FailureType.rayContainerFailed, message, fatal, {
        host,
        container: input.container,
        exitCode: started.exitCode,
      });
    }
    const containerId = started.stdout.trim().split('\n').pop() ?? '';

    // A container whose `ray start` rejects its arguments exits within a second or two: wait that long, or
    // until `ray start` reports success (it prints its banner once the node is up, and for a worker, joined).
    for (;;) {
      heartbeat({ host, phase: 'confirming', container: input.container });
      // The banner settles it; without it, the container's state is asked, in the same round trip.
      let reads = confirm;
      confirm = undefined;
      if (!reads) {
        await pause(confirmPollMs);
        reads = await runCommands(session, confirmCommands(input.container), { timeoutMs: 30_000 });
      }
      if (rayStarted.test(redactText(answerOf(reads, 'log').stdout.trimEnd(), secrets))) break;
      const state = containerStateOf(answerOf(reads, 'state'), input.container, host);
      if (!state.running) {
        const log = await containerLogTail(session, input.container, secrets);
        const fatal = matchesAnyLine(log, configProblems);
        throw failure(
          FailureType.rayContainerFailed,
          `The Ray ${role} container ${input.container} on ${host} exited right after it started` +
            ` (status ${state.exists ? (state.status ?? 'unknown') : 'removed'}, exit code ${state.exitCode ?? 'unknown'}).` +
            (fatal
              ? ' Its log shows a configuration problem: fix the spec and deploy again.'
              : ' Check the log below and `docker logs` on that host.') +
            `\n--- container log (tail) ---\n${tail(log, 4096)}`,
          fatal,
          { host, container: input.container, exitCode: state.exitCode ?? null, logTail: tail(log, 4096) },
        );
      }
      if (Date.now() >= deadline) break;
    }
    return { host, containerId, reused: false };
  });
}
