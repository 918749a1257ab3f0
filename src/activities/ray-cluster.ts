// Whether the Ray containers formed one cluster: the head's `ray status` until every node joined with its GPUs,
// and the workers' own logs for the reason one cannot join (ray-start.ts starts the containers).
import { Context } from '@temporalio/activity';
import { FailureType } from '../shared/failures.js';
import { hostLines, HostOutputError } from '../parsers/host-output.js';
import { parseRayStatus, RayNotRunningError, type RayStatus } from '../parsers/ray-status.js';
import { sentence, tail } from '../shared/text.js';
import type { ExecResult, SshSession } from '../ssh/executor.js';
import { handOn } from './step-handoff.js';
import {
  containerLogTailCommand,
  inspectContainerCommand,
  launchReadsKey,
  rayStatusCommand,
  readMarkerCommand,
  launchPreReads,
  markerPidAliveCommand,
  workerJoinLogLines as workerLogLines,
} from '../host-commands/launch.js';
import { redactedTail } from '../shared/secrets.js';
import { activityFailure as failure } from './activity-failure.js';
import { onHost } from './ssh-context.js';
import { answeredReads, prefetchReads } from './prefetch.js';
import { heartbeat } from './heartbeat.js';
import { rayStarted } from './ray-start.js';
import { containerLogTail, containerSecrets, inspectContainer, pause } from './docker.js';
import type { NamedHost, RayClusterState, VerifyRayClusterInput } from './types.js';

/** verifyRayCluster polls this long per attempt; the workflow's retry policy bounds the whole wait. */
const verifyWindowMs = 10_000;
const verifyIntervalMs = 1_000;
/** While nodes are missing, the workers' container logs are read this often for a definitive error. */
const workerCheckIntervalMs = 2_000;

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
  return rayStatusOf(await session.exec(rayStatusCommand(container), { timeoutMs: 30_000, check: false }));
}

/** What `ray status` answered, judged. */
function rayStatusOf(res: ExecResult): RayStatusRead {
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
      // With the launch's marker, each poll reads it beside Ray's state: the last look is launchServe's pre-read.
      const marker = input.launchMarkerPath;
      const trip = marker
        ? await prefetchReads(session, launchPreReads(input.container, marker, 'verify'), {
            timeoutMs: 40_000,
          })
        : session;
      const rayRes = await trip.exec(rayStatusCommand(input.container), { timeoutMs: 30_000, check: false });
      const read = rayStatusOf(rayRes);
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
          if (marker) {
            handOn('launchReads', launchReadsKey(head, input.container, marker), [
              [rayStatusCommand(input.container), rayRes],
              ...(await answeredReads(
                trip,
                [readMarkerCommand(marker), markerPidAliveCommand(marker)],
                10_000,
              )),
            ]);
          }
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
        : `Ray on the head ${head} does not answer \`ray status\`: ${sentence(read.problem ?? 'no output')}`) +
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
