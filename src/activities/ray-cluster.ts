// Whether the Ray containers formed one cluster: the head's `ray status` until every node joined with its GPUs,
// and the workers' own logs for the reason one cannot join (ray-start.ts starts the containers).
import { FailureType } from '../shared/failures.js';
import { hostLines } from '../parsers/host-output.js';
import { judgeRayStatus, type RayExpectation, type RayVerdict } from '../parsers/ray-status.js';
import { tail } from '../shared/text.js';
import type { SshSession } from '../ssh/executor.js';
import { rayStatusCommand } from '../host-commands/launch.js';
import { headPollCommands, judgeHeadPoll, workerReadCommands } from '../steps/verify-ray.js';
import { activityFailure as failure } from './activity-failure.js';
import { onHost } from './ssh-context.js';
import { answerOf, runCommands } from './run-commands.js';
import { currentContext, heartbeat } from './heartbeat.js';
import { rayStarted } from './ray-start.js';
import { containerLogTail, containerSecrets, containerStateOf, inspectContainer, pause } from './docker.js';
import { redactText } from '../shared/secrets.js';
import type { NamedHost, RayClusterState, VerifyRayClusterInput } from './types.js';

/** verifyRayCluster polls this long per attempt; the workflow's retry policy bounds the whole wait. */
const verifyWindowMs = 10_000;
const verifyIntervalMs = 1_000;
/** While nodes are missing, the workers' container logs are read this often for a definitive error. */
const workerCheckIntervalMs = 2_000;

/** The head's `ray status`, judged against what the cluster must show. */
export async function readRayStatus(
  session: SshSession,
  container: string,
  expected: RayExpectation,
): Promise<RayVerdict> {
  const res = await session.exec(rayStatusCommand(container), { timeoutMs: 30_000, check: false });
  return judgeRayStatus(res, expected, { host: session.target.name, container });
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

/**
 * The first of `lines` that tells why a node did not join, by the patterns' order. Takes the lines as they come
 * (its callers cut them first, hostLines), so the linear-time test can run every pattern on one line longer than the cut.
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
  return joinErrorIn(hostLines(log))?.line;
}

interface WorkerFinding {
  host: string;
  /** A fact that polling cannot change: the container is gone or exited, or the host cannot be reached. */
  settled: boolean;
  joined: boolean;
  note: string;
}

async function inspectWorker(worker: NamedHost, container: string): Promise<WorkerFinding> {
  const finding = (settled: boolean, joined: boolean, note: string): WorkerFinding => ({
    host: worker.name,
    settled,
    joined,
    note: `${worker.name}: ${note}`,
  });
  try {
    return await onHost(worker.ref, async (direct) => {
      // The state and the log in one round trip.
      const answers = await runCommands(direct, workerReadCommands(container), { timeoutMs: 30_000 });
      const state = containerStateOf(answerOf(answers, 'state'), container, worker.name);
      if (!state.exists)
        return finding(true, false, `no container ${container} (it was never started or was removed)`);
      const log = redactText(answerOf(answers, 'log').stdout.trimEnd(), containerSecrets(state));
      const found = joinErrorIn(hostLines(log));
      const cause = found ? `: ${found.line}` : '';
      if (!state.running)
        return finding(
          true,
          false,
          `container ${container} exited (code ${state.exitCode ?? 'unknown'})${cause}`,
        );
      // `ray start` prints its banner only once the node registered with the head.
      const joined = rayStarted.test(log);
      if (!joined && found?.definitive)
        return finding(true, false, `container running but cannot join the head: ${found.line}`);
      return joined
        ? finding(false, true, 'container running and joined according to its log')
        : finding(false, false, `container running but not joined yet${cause}`);
    });
  } catch (err) {
    const said = err instanceof Error ? err.message.split('\n')[0] : String(err);
    return finding(false, false, `cannot be inspected: ${said}`);
  }
}

export async function verifyRayCluster(input: VerifyRayClusterInput): Promise<RayClusterState> {
  const head = input.head.name;
  // When the verification began: the first attempt's scheduling, so the message counts every retry.
  const startedAt = currentContext()?.info.scheduledTimestampMs ?? Date.now();
  const last = await onHost(input.head.ref, async (session) => {
    const deadline = Date.now() + verifyWindowMs;
    let nextWorkerCheck = 0;
    for (;;) {
      // With the launch's marker, each poll reads it beside Ray's state: the last look is the launch's pre-read.
      const answers = await runCommands(session, headPollCommands(input), { timeoutMs: 40_000 });
      const { verdict, look } = judgeHeadPoll(answers, input, head, Date.now());
      if (!verdict.ok && verdict.type === FailureType.hostOutputInvalid) {
        throw failure(verdict.type, verdict.message, true, { head });
      }
      if ('seen' in verdict) heartbeat({ nodes: verdict.seen.nodes, gpusTotal: verdict.seen.gpus });
      else heartbeat({ problem: verdict.problem });
      if (verdict.ok) {
        const { nodes, gpus, gpusUsed } = verdict.seen;
        return {
          done: true as const,
          state: { nodes, gpusTotal: gpus, gpusUsed, ...(look ? { headLook: look } : {}) },
        };
      }
      // A worker whose log already says it cannot reach the head will not join by waiting: end now.
      if ('seen' in verdict && verdict.seen.nodes < input.expectedNodes && Date.now() >= nextWorkerCheck) {
        nextWorkerCheck = Date.now() + workerCheckIntervalMs;
        const findings = await Promise.all(input.workers.map((w) => inspectWorker(w, input.container)));
        if (findings.some((f) => f.settled && !f.joined)) {
          return { done: false as const, verdict, headLog: '', findings };
        }
      }
      if (('headContainerDown' in verdict && verdict.headContainerDown) || Date.now() >= deadline) {
        // The head's container may be gone by now (nothing to redact then, and nothing of its log to read).
        const secrets = () => inspectContainer(session, input.container).then(containerSecrets, () => []);
        const headLog =
          'seen' in verdict ? '' : await containerLogTail(session, input.container, await secrets(), 30);
        return { done: false as const, verdict, headLog, findings: undefined };
      }
      await pause(verifyIntervalMs);
    }
  });
  if (last.done) return last.state;

  const { verdict, headLog } = last;
  const elapsed = `${((Date.now() - startedAt) / 1000).toFixed(1)} s`;
  if (!('seen' in verdict)) {
    const down = verdict.headContainerDown;
    throw failure(
      verdict.type,
      `${verdict.message}. Start the head again (deploy again); see its log below.` +
        (headLog ? `\n--- head container log (tail) ---\n${tail(headLog, 4096)}` : ''),
      down,
      { head, problem: verdict.problem, headContainerDown: down },
    );
  }

  const { nodes, gpus } = verdict.seen;
  const findings =
    last.findings ?? (await Promise.all(input.workers.map((w) => inspectWorker(w, input.container))));
  const missing = findings.filter((f) => !f.joined);
  const missingNames = missing.map((f) => f.host);
  const gpuNote =
    gpus < input.expectedGpus && nodes >= input.expectedNodes
      ? ` Every node joined but Ray counts ${gpus} GPUs: check gpu.perHost and that the containers see their GPUs (--gpus all, nvidia-smi inside the container).`
      : '';
  const who =
    missing.length > 0
      ? ` Missing: ${missingNames.join(', ')}.\n${missing.map((f) => `- ${f.note}`).join('\n')}`
      : findings.length > 0
        ? ` Every worker container runs and reports joining:\n${findings.map((f) => `- ${f.note}`).join('\n')}`
        : '';
  // Polling cannot bring back an exited container or a missing GPU: only a new deploy can.
  const settled = (missing.length > 0 && missing.every((f) => f.settled)) || gpuNote !== '';
  throw failure(verdict.type, `${verdict.message} after ${elapsed}.${gpuNote}${who}`, settled, {
    head,
    nodes,
    expectedNodes: input.expectedNodes,
    gpusTotal: gpus,
    expectedGpus: input.expectedGpus,
    missingHosts: missingNames,
    findings: findings.map((f) => f.note),
  });
}
