// Step 9, wait healthy: one poll of the head (log chunk, process, container, /health: one remote command) per
// serve.pollInterval, and of every worker's Ray container (or rank) every serve.workerPollEvery polls, until the
// server answers or something says it never will. The deadline is fixed here, once, from serve.loadTimeout, so
// retries of a poll cannot stretch it.
import { deprecatePatch, isCancellation, sleep } from '@temporalio/workflow';
import type { CheckRayWorkerResult, CheckServeResult, NamedHost } from '../activities/types.js';
import type { DeploySpec } from '../config/schema.js';
import { formatDuration, parseDuration } from '../config/duration.js';
import { judgeContainer } from '../parsers/container-state.js';
import { judgeVllmFatal, vllmPhases, type VllmPhase } from '../parsers/vllm-log.js';
import { FailureType } from '../shared/failures.js';
import type { DeployRun } from './cluster-run.js';
import { isFinal, loadFailure, messageOf } from './failures.js';
import { patches } from './patches.js';
import { publishDetails } from './step-tracker.js';
import type { LoadProgress } from './steps.js';
import { recordClusterState, recordEtaError, recordLoad } from './metrics.js';

type HostPoll<T> = { ok: true; value: T } | { ok: false; error: string; final: boolean; cause: unknown };

function settle<T>(p: Promise<T>): Promise<HostPoll<T>> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => {
      // A cancelled deploy stops here, not after one more poll.
      if (isCancellation(err)) throw err;
      return { ok: false as const, error: messageOf(err), cause: err, final: isFinal(err) };
    },
  );
}

/** Polls every host of `hosts` at once; each answer beside its host. */
function pollEach<T>(
  followers: Followers<T>,
  hosts: readonly NamedHost[],
): Promise<[NamedHost, HostPoll<T>][]> {
  return Promise.all(
    hosts.map(async (h): Promise<[NamedHost, HostPoll<T>]> => [h, await settle(followers.poll(h))]),
  );
}

interface LoadWatch {
  spec: DeploySpec;
  load: LoadProgress;
  deadline: number;
  tail: string[];
  /** When each host stopped answering; a host that answers again is removed. */
  unreachableSince: Record<string, number>;
  unreachableMs: number;
  stallMs: number;
}

/**
 * How the load watches the hosts other than the head: their Ray containers, or (multiproc) their ranks. `judge`
 * throws when a host's poll says the load cannot succeed.
 */
export interface Followers<T> {
  poll(host: NamedHost): Promise<T>;
  judge(host: NamedHost, value: T, at: { where: string; tail: string[]; load: LoadProgress }): void;
  /** The host's container (its Ray node, or its rank) is gone: judge() then names it as lost. */
  gone(value: T): boolean;
}

/** The Ray backend's followers: every worker's Ray container must keep running. */
export function rayWorkers({ spec, acts }: DeployRun): Followers<CheckRayWorkerResult> {
  const workerPolls = acts('waitHealthy', 'checkRayWorker');
  return {
    poll: (w) => workerPolls.checkRayWorker({ host: w.ref, container: spec.ray.container }),
    gone: (value) => !value.containerRunning,
    judge: (_w, value, at) => {
      const verdict = judgeContainer(
        { running: value.containerRunning, status: value.containerStatus },
        `the Ray container ${spec.ray.container} on ${value.host}`,
      );
      if (verdict.ok) return;
      throw loadFailure(
        FailureType.rayWorkerLost,
        `${verdict.message} at ${at.where}: the server lost that node`,
        at.tail,
        at.load,
      );
    },
  };
}

export async function waitHealthy<T>(run: DeployRun, pid: number, followers: Followers<T>): Promise<void> {
  const { spec, head, workers, progress, acts } = run;
  const ms = (d: string, fallback: number): number => parseDuration(d) ?? fallback;
  const pollMs = ms(spec.serve.pollInterval, 10_000);
  const startedAt = Date.now();
  const load: LoadProgress = { phase: 'starting', elapsedS: 0, health: 'unknown', lastLogAtMs: startedAt };
  progress.load = load;
  const watch: LoadWatch = {
    spec,
    load,
    deadline: startedAt + ms(spec.serve.loadTimeout, 25 * 60_000),
    tail: [],
    unreachableSince: {},
    unreachableMs: ms(spec.serve.hostUnreachableTimeout, 120_000),
    stallMs: ms(spec.serve.stallTimeout, 5 * 60_000),
  };
  const headPolls = acts('waitHealthy', 'checkServeHealth');
  deprecatePatch(patches.workerPollEvery);
  const every = spec.serve.workerPollEvery;
  let offset = 0;
  recordClusterState(spec.cluster, 'loading');
  /** The load's first estimate, which its ETA error is measured against when it is done. */
  let firstEta: { atMs: number; etaS: number } | undefined;
  const done = (): void => {
    if (firstEta) recordEtaError(spec.cluster, firstEta, Date.now());
    recordLoad(spec.cluster, load);
  };
  for (let round = 0; ; round++) {
    // A host that does not answer has been silent since this poll began, not since it gave up.
    const pollStartedAt = Date.now();
    // Every `every`-th round polls every worker; the others, those that did not answer at their last poll.
    const due = workers.filter((w) => round % every === 0 || watch.unreachableSince[w.name] !== undefined);
    const [headPoll, workerPolls] = await Promise.all([
      settle(
        headPolls.checkServeHealth({
          head: head.ref,
          clusterIp: head.clusterIp,
          container: spec.ray.container,
          pid,
          logPath: spec.serve.logPath,
          logOffset: offset,
          port: spec.serve.port,
          model: spec.serve.servedModelName ?? spec.serve.model,
          secretEnv: [spec.ray.env, spec.serve.env],
          apiKey: spec.serve.env.VLLM_API_KEY,
        }),
      ),
      pollEach(followers, due),
    ]);
    const now = Date.now();
    checkReachable(watch, [[head, headPoll]], { pollStartedAt, now });
    judgeWorkers(watch, followers, workerPolls, { pollStartedAt, now });
    if (!headPoll.ok) {
      publishDetails(progress);
      await sleep(Math.max(0, Math.min(pollMs, watch.deadline - now)));
      if (Date.now() < watch.deadline) continue;
      throw loadFailure(
        FailureType.loadTimeout,
        `vllm was not healthy within serve.loadTimeout ${spec.serve.loadTimeout}; ${head.name} did not answer the last poll (${headPoll.error}); last ${where(load)}`,
        watch.tail,
        load,
      );
    }
    const r = headPoll.value;
    offset = r.logOffset;
    watch.tail = r.tail;
    recordPoll(load, r, now, startedAt);
    if (load.etaS !== undefined) firstEta ??= { atMs: now, etaS: load.etaS };
    recordLoad(spec.cluster, load);
    publishDetails(progress);
    const phaseBefore = load.phase;
    // The workers this round did not poll (serve.workerPollEvery).
    const rest = workers.filter((w) => !due.includes(w));
    let ready: boolean;
    try {
      ready = judgePoll(watch, r, pid, now);
    } catch (err) {
      // The head's failure may be the echo of a host lost since its last poll (rank 0's "connection reset by
      // peer" when a headless rank died): the hosts not polled this round are polled now, and one whose
      // container is gone is named as the cause.
      if (rest.length > 0) {
        deprecatePatch(patches.lostHostBeforeHeadFailure);
        await nameLostFollower(followers, rest, { where: where(load), tail: watch.tail, load });
      }
      throw err;
    }
    if (ready) {
      // Ready is judged with every host's answer of this very round: the workers not polled yet are polled now.
      if (rest.length === 0) return done();
      const restStartedAt = Date.now();
      const restPolls = await pollEach(followers, rest);
      judgeWorkers(watch, followers, restPolls, { pollStartedAt: restStartedAt, now: Date.now() });
      if (Object.keys(watch.unreachableSince).length === 0) return done();
      // A worker did not answer: not ready yet, whatever the head says.
      load.phase = phaseBefore;
      publishDetails(progress);
    }
    await sleep(Math.min(pollMs, watch.deadline - now));
  }
}

/**
 * Polls `hosts` and throws the failure of the first whose container is gone (judge() names it); returns when none
 * is. For a head that just failed: its failure may only echo a host lost under it.
 */
export async function nameLostFollower<T>(
  followers: Followers<T>,
  hosts: readonly NamedHost[],
  at: { where: string; tail: string[]; load: LoadProgress },
): Promise<void> {
  for (const [w, poll] of await pollEach(followers, hosts))
    if (poll.ok && followers.gone(poll.value)) followers.judge(w, poll.value, at);
}

/** Reachability of the polled workers, then each answer's verdict (which throws when the load cannot succeed). */
function judgeWorkers<T>(
  watch: LoadWatch,
  followers: Followers<T>,
  polls: [NamedHost, HostPoll<T>][],
  at: { pollStartedAt: number; now: number },
): void {
  checkReachable(watch, polls, at);
  for (const [w, poll] of polls)
    if (poll.ok)
      followers.judge(w, poll.value, { where: where(watch.load), tail: watch.tail, load: watch.load });
}

function where(load: LoadProgress): string {
  return `phase ${load.phase}${load.shardsTotal ? `, shard ${load.shardsDone}/${load.shardsTotal}` : ''}`;
}

/** Reachability first: a host that does not answer is given serve.hostUnreachableTimeout to come back. */
function checkReachable(
  watch: LoadWatch,
  polls: [NamedHost, HostPoll<unknown>][],
  at: { pollStartedAt: number; now: number },
): void {
  const { spec, unreachableSince, unreachableMs } = watch;
  for (const [host, poll] of polls) {
    if (poll.ok) {
      delete unreachableSince[host.name];
      continue;
    }
    if (poll.final) throw poll.cause;
    unreachableSince[host.name] ??= at.pollStartedAt;
    const downMs = at.now - (unreachableSince[host.name] ?? at.now);
    if (downMs >= unreachableMs) {
      throw loadFailure(
        FailureType.hostUnreachable,
        `${host.name} has not answered for ${formatDuration(downMs)} (serve.hostUnreachableTimeout ${spec.serve.hostUnreachableTimeout}) at ${where(watch.load)}: ${poll.error}`,
        watch.tail,
        watch.load,
      );
    }
  }
  watch.load.unreachableSinceMs = { ...unreachableSince };
}

/** Folds one head poll into the load's progress. */
function recordPoll(load: LoadProgress, r: CheckServeResult, now: number, startedAt: number): void {
  Object.assign(load, {
    elapsedS: Math.round((now - startedAt) / 1000),
    health: r.health,
    lastLine: r.tail[r.tail.length - 1],
  });
  if (r.logGrew) load.lastLogAtMs = now;
  if (!r.summary) return;
  // Each poll summarises only the new lines: the phase only moves forward, and a failure keeps the phase the
  // load had reached (the failure itself is r.summary.fatal).
  const seen = r.summary.phase === 'failed' ? r.summary.reached : r.summary.phase;
  if (seen && vllmPhases.indexOf(seen) > vllmPhases.indexOf(load.phase as VllmPhase)) load.phase = seen;
  if (r.summary.shard) {
    Object.assign(load, {
      shardsDone: r.summary.shard.done,
      shardsTotal: r.summary.shard.total,
      percent: r.summary.shard.percent,
    });
  }
  if (r.summary.etaS !== undefined) Object.assign(load, { etaS: r.summary.etaS });
}

/** True when the server is ready; throws when the load cannot succeed; false to poll again. */
function judgePoll(watch: LoadWatch, r: CheckServeResult, pid: number, now: number): boolean {
  const { spec, load, tail } = watch;
  if (r.summary?.fatal) {
    const memoryMonitorOff = spec.ray.env.RAY_memory_monitor_refresh_ms === '0';
    const verdict = judgeVllmFatal(r.summary.fatal, { backend: 'ray', memoryMonitorOff });
    throw loadFailure(
      verdict.type,
      `vllm failed (${r.summary.fatal.kind}) at ${where(load)}: ${verdict.message}`,
      tail,
      load,
    );
  }
  if (!r.processAlive || !r.containerRunning) {
    const what = !r.containerRunning
      ? `container ${spec.ray.container} is not running`
      : `vllm (pid ${pid}) exited`;
    throw loadFailure(FailureType.serverExited, `${what} at ${where(load)}`, tail, load);
  }
  // Ready means every host answers: a server that looks healthy while a worker is cut off is not done.
  if (r.health === 'ok' && r.modelListed && Object.keys(watch.unreachableSince).length === 0) {
    load.phase = 'ready';
    return true;
  }
  if (now - load.lastLogAtMs >= watch.stallMs) {
    throw loadFailure(
      FailureType.serverHung,
      `vllm looks hung at ${where(load)}: its log has not moved for ${formatDuration(now - load.lastLogAtMs)} (serve.stallTimeout ${spec.serve.stallTimeout}) while the process is alive`,
      tail,
      load,
    );
  }
  if (now >= watch.deadline) {
    throw loadFailure(
      FailureType.loadTimeout,
      `vllm was not healthy within serve.loadTimeout ${spec.serve.loadTimeout}; last ${where(load)}`,
      tail,
      load,
    );
  }
  return false;
}
