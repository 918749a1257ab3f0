// The Ray containers: start the head and the workers (`docker run … --entrypoint ray IMAGE start --block`),
// and verify from the head's `ray status` that every node joined with its GPUs.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { hostLines, HostOutputError } from '../parsers/host-output.js';
import { parseRayStatus, RayNotRunningError, type RayStatus } from '../parsers/ray-status.js';
import { tail } from '../shared/text.js';
import type { SshSession } from '../ssh/executor.js';
import {
  containerLogTailCommand,
  inspectContainerCommand,
  rayRunCommand,
  rayStatusCommand,
  removeContainerCommand,
  workerJoinLogLines as workerLogLines,
} from '../host-commands/launch.js';
import { redactedTail, redactText } from '../shared/secrets.js';
import { onHost } from './ssh-context.js';
import { prefetchReads } from './prefetch.js';
import { heartbeat } from './heartbeat.js';
import { containerLogTail, containerSecrets, inspectContainer, pause } from './docker.js';
import { envTransport } from '../host-commands/env-transport.js';
import { resolveEnv } from './secrets.js';
import type { NamedHost, RayClusterState, RayContainerResult, VerifyRayClusterInput } from './types.js';
import type { RayContainerInput } from '../host-commands/launch.js';

/** How long a started container must stay up before we call it started: a bad flag kills it within a second. */
const confirmWindowMs = 3_000;
const confirmPollMs = 250;
/** What `ray start` prints once the node runs (a worker: once it registered with the head). */
const rayStarted = /^Ray runtime started\./m;
/** verifyRayCluster polls this long per attempt; the workflow's retry policy bounds the whole wait. */
const verifyWindowMs = 10_000;
const verifyIntervalMs = 1_000;
/** While nodes are missing, the workers' container logs are read this often for a definitive error. */
const workerCheckIntervalMs = 2_000;

function failure(
  type: string,
  message: string,
  nonRetryable: boolean,
  details?: Record<string, unknown>,
): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable,
    ...(details ? { details: [details] } : {}),
  });
}

// ------------------------------------------------------------------------------------- start container

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

// `docker run` errors that a retry cannot fix.
const runConfigProblems = [
  /Unable to find image|pull access denied|No such image/,
  /bind source path does not exist|invalid mount config|invalid spec/,
  /executable file not found/,
  /unknown (shorthand )?flag|invalid argument|Invalid container name|invalid restart policy/,
  /could not select device driver/,
];

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
  const secrets = [...resolved.secretNames].map((n) => env[n] ?? '').filter((v) => v !== '');
  return onHost(input.host, async (session) => {
    const existing = await inspectContainer(session, input.container);
    if (existing.exists) {
      if (existing.running && existing.labels['liftoff.launch'] === input.launchId) {
        return { host, containerId: existing.id ?? '', reused: true };
      }
      // Another launch's container, or this launch's that died: it must go before the name is free.
      await session.exec(removeContainerCommand(input.container), { timeoutMs: 60_000 });
    }

    const run = rayRunCommand(input, role, transport);
    const started = await session.exec(run, {
      timeoutMs: 120_000,
      check: false,
      stdin: transport.stdin,
      secrets,
    });
    if (started.exitCode !== 0) {
      const why = redactText(started.stderr.trim() || started.stdout.trim(), secrets);
      const fatal = matchesAnyLine(why, runConfigProblems);
      throw failure(
        FailureType.rayContainerFailed,
        `docker run of the Ray ${role} container ${input.container} on ${host} failed (exit ${started.exitCode}): ${tail(why, 2048)}` +
          (fatal
            ? '. Fix the image, volumes or flags in the spec (ray.*) and deploy again.'
            : '. Check the docker daemon on that host.'),
        fatal,
        { host, container: input.container, exitCode: started.exitCode },
      );
    }
    const containerId = started.stdout.trim().split('\n').pop() ?? '';

    // A container whose `ray start` rejects its arguments exits within a second or two: wait that long, or
    // until `ray start` reports success (it prints its banner once the node is up, and for a worker, joined).
    const deadline = Date.now() + confirmWindowMs;
    for (;;) {
      heartbeat({ host, phase: 'confirming', container: input.container });
      await pause(confirmPollMs);
      // The banner settles it; without it, the container's state is asked, in the same round trip.
      const reads = await prefetchReads(
        session,
        [containerLogTailCommand(input.container), inspectContainerCommand(input.container)],
        { timeoutMs: 30_000 },
      );
      if (rayStarted.test(await containerLogTail(reads, input.container, secrets))) break;
      const state = await inspectContainer(reads, input.container);
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

// ------------------------------------------------------------------------------------- verify cluster

export interface RayStatusRead {
  status?: RayStatus;
  /** Why there is no status: the head's container is down, or Ray on it does not answer. */
  problem?: string;
  headContainerDown?: boolean;
  /** The output holds what no real `ray status` prints (a billion nodes, 1e999 GPUs): waiting cannot fix it. */
  invalidOutput?: boolean;
}

// The head's container may be gone by now (nothing to redact then, and nothing of its log to read).
async function headSecrets(session: SshSession, container: string): Promise<string[]> {
  try {
    return containerSecrets(await inspectContainer(session, container));
  } catch {
    return [];
  }
}

export async function readRayStatus(session: SshSession, container: string): Promise<RayStatusRead> {
  const res = await session.exec(rayStatusCommand(container), {
    timeoutMs: 30_000,
    check: false,
  });
  const text = `${res.stdout}\n${res.stderr}`;
  if (res.exitCode !== 0 && /No such container|is not running/i.test(res.stderr)) {
    return { problem: res.stderr.trim().split('\n')[0] ?? 'container not running', headContainerDown: true };
  }
  try {
    return { status: parseRayStatus(text) };
  } catch (err) {
    if (err instanceof RayNotRunningError) return { problem: err.detail };
    if (err instanceof HostOutputError) return { problem: err.message, invalidOutput: true };
    return { problem: redactedTail(text.trim(), [], 512) || `ray status exited with code ${res.exitCode}` };
  }
}

function gpuTotal(status: RayStatus): { total: number; used: number } {
  const gpu = status.resources.GPU;
  return { total: gpu?.total ?? 0, used: gpu?.used ?? 0 };
}

// The line of a Ray container's log that tells why a node did not join, most specific first: the rest of
// the line from the match, or (`whole`) the whole line. Each runs on one line cut to a few KB; the generic
// one was `[^\n]*\b(?:error|failed)\b[^\n]*`, which retried from every character of a long line.
// A `definitive` line means the worker cannot join by waiting: it cannot reach the head's GCS at the address
// it was given (a wrong head address, a blocked port). Ray itself keeps retrying for minutes; only a new
// deploy helps.
const joinErrorPatterns: Array<{ pattern: RegExp; whole?: true; definitive?: true }> = [
  { pattern: /Failed to connect to GCS at address/, definitive: true },
  { pattern: /Failed to get cluster ID from GCS/, definitive: true },
  { pattern: /Unable to connect to GCS/ },
  { pattern: /ConnectionError/ },
  { pattern: /(?:Value|Runtime|OS)Error/ },
  { pattern: /raylet \[exit code=\d+\]/ },
  { pattern: /\b(?:error|failed)\b/i, whole: true },
];

function joinError(log: string): { line: string; definitive: boolean } | undefined {
  return joinErrorIn(hostLines(log));
}

/**
 * The first of `lines` that tells why a node did not join, by the patterns' order. Takes the lines as they come
 * (joinError cuts them first), so the linear-time test can run every pattern on one line longer than the cut.
 */
export function joinErrorIn(lines: readonly string[]): { line: string; definitive: boolean } | undefined {
  for (const { pattern, whole, definitive } of joinErrorPatterns) {
    for (const line of lines) {
      const match = pattern.exec(line);
      if (match)
        return { line: (whole ? line : line.slice(match.index)).trim(), definitive: definitive === true };
    }
  }
  return undefined;
}

export function errorLine(log: string): string | undefined {
  return joinError(log)?.line;
}

interface WorkerFinding {
  host: string;
  /** A fact that polling cannot change: the container is gone or exited, or the host cannot be reached. */
  settled: boolean;
  joined: boolean;
  note: string;
}

async function inspectWorker(worker: NamedHost, container: string): Promise<WorkerFinding> {
  try {
    return await onHost(worker.ref, async (direct) => {
      // The state and the log in one round trip.
      const session = await prefetchReads(
        direct,
        [inspectContainerCommand(container), containerLogTailCommand(container, workerLogLines)],
        { timeoutMs: 30_000 },
      );
      const state = await inspectContainer(session, container);
      if (!state.exists) {
        return {
          host: worker.name,
          settled: true,
          joined: false,
          note: `${worker.name}: no container ${container} (it was never started or was removed)`,
        };
      }
      const log = await containerLogTail(session, container, containerSecrets(state), workerLogLines);
      const found = joinError(log);
      const cause = found?.line;
      if (!state.running) {
        return {
          host: worker.name,
          settled: true,
          joined: false,
          note: `${worker.name}: container ${container} exited (code ${state.exitCode ?? 'unknown'})${cause ? `: ${cause}` : ''}`,
        };
      }
      // `ray start` prints its banner only once the node registered with the head.
      const joined = rayStarted.test(log);
      const definitive = !joined && found?.definitive ? found.line : undefined;
      if (definitive) {
        return {
          host: worker.name,
          settled: true,
          joined: false,
          note: `${worker.name}: container running but cannot join the head: ${definitive}`,
        };
      }
      return {
        host: worker.name,
        settled: false,
        joined,
        note: joined
          ? `${worker.name}: container running and joined according to its log`
          : `${worker.name}: container running but not joined yet${cause ? `: ${cause}` : ''}`,
      };
    });
  } catch (err) {
    return {
      host: worker.name,
      settled: false,
      joined: false,
      note: `${worker.name}: cannot be inspected: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    };
  }
}

/** When the verification began: the first attempt's scheduling, so the message counts every retry. */
function verificationStartMs(): number {
  try {
    return Context.current().info.scheduledTimestampMs;
  } catch {
    return Date.now();
  }
}

export async function verifyRayCluster(input: VerifyRayClusterInput): Promise<RayClusterState> {
  const head = input.head.name;
  const startedAt = verificationStartMs();
  const last = await onHost(input.head.ref, async (session) => {
    const deadline = Date.now() + verifyWindowMs;
    let nextWorkerCheck = 0;
    for (;;) {
      const read = await readRayStatus(session, input.container);
      if (read.invalidOutput) {
        throw failure(
          FailureType.hostOutputInvalid,
          `The Ray cluster on ${head} cannot be judged: ${read.problem ?? 'invalid ray status output'}`,
          true,
          { head },
        );
      }
      if (read.status) {
        const nodes = read.status.activeNodes.length;
        const gpus = gpuTotal(read.status);
        heartbeat({ nodes, gpusTotal: gpus.total });
        if (nodes >= input.expectedNodes && gpus.total >= input.expectedGpus) {
          return { done: true as const, state: { nodes, gpusTotal: gpus.total, gpusUsed: gpus.used } };
        }
        // A worker whose log already says it cannot reach the head will not join by waiting: end now.
        if (nodes < input.expectedNodes && Date.now() >= nextWorkerCheck) {
          nextWorkerCheck = Date.now() + workerCheckIntervalMs;
          const findings = await Promise.all(input.workers.map((w) => inspectWorker(w, input.container)));
          if (findings.some((f) => f.settled && !f.joined)) {
            return { done: false as const, read, headLog: '', findings };
          }
        }
      } else {
        heartbeat({ problem: read.problem });
      }
      if (read.headContainerDown || Date.now() >= deadline) {
        const headLog = read.status
          ? ''
          : await containerLogTail(session, input.container, await headSecrets(session, input.container), 30);
        return { done: false as const, read, headLog, findings: undefined };
      }
      await pause(verifyIntervalMs);
    }
  });
  if (last.done) return last.state;

  const { read, headLog } = last;
  const elapsed = `${((Date.now() - startedAt) / 1000).toFixed(1)} s`;
  if (!read.status) {
    const down = read.headContainerDown === true;
    throw failure(
      FailureType.rayClusterIncomplete,
      (down
        ? `The Ray head container ${input.container} on ${head} is not running (${read.problem ?? 'unknown'}).`
        : `Ray on the head ${head} does not answer \`ray status\`: ${read.problem ?? 'no output'}.`) +
        ' Start the head again (deploy again); see its log below.' +
        (headLog ? `\n--- head container log (tail) ---\n${tail(headLog, 4096)}` : ''),
      down,
      { head, problem: read.problem ?? null, headContainerDown: down },
    );
  }

  const nodes = read.status.activeNodes.length;
  const gpus = gpuTotal(read.status);
  const findings =
    last.findings ?? (await Promise.all(input.workers.map((w) => inspectWorker(w, input.container))));
  const missing = findings.filter((f) => !f.joined);
  const missingNames = missing.map((f) => f.host);
  const gpuNote =
    gpus.total < input.expectedGpus && nodes >= input.expectedNodes
      ? ` Every node joined but Ray counts ${gpus.total} GPUs: check gpu.perHost and that the containers see their GPUs (--gpus all, nvidia-smi inside the container).`
      : '';
  const who =
    missing.length > 0
      ? ` Missing: ${missingNames.join(', ')}.\n${missing.map((f) => `- ${f.note}`).join('\n')}`
      : findings.length > 0
        ? ` Every worker container runs and reports joining:\n${findings.map((f) => `- ${f.note}`).join('\n')}`
        : '';
  // Polling cannot bring back an exited container or a missing GPU: only a new deploy can.
  const settled = (missing.length > 0 && missing.every((f) => f.settled)) || gpuNote !== '';
  throw failure(
    FailureType.rayClusterIncomplete,
    `The Ray cluster on ${head} has ${nodes} of ${input.expectedNodes} nodes and ${gpus.total} of ${input.expectedGpus} GPUs after ${elapsed}.${gpuNote}${who}`,
    settled,
    {
      head,
      nodes,
      expectedNodes: input.expectedNodes,
      gpusTotal: gpus.total,
      expectedGpus: input.expectedGpus,
      missingHosts: missingNames,
      findings: findings.map((f) => f.note),
    },
  );
}
