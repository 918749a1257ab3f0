// The supervisor's probe rounds: the head's probes (container, /health, a one-token completion, `ray status`,
// which a multiproc cluster has not) and every worker's container (Ray's, or its rank), in parallel, judged into a
// ProbeRound by judgeRound. A silent host is given serve.hostUnreachableTimeout, as during the load, before it
// fails the round. One round at a time (probeRound, a local activity), or a healthy cluster's rounds run by the
// worker until one is not wholly healthy or supervise.reportEvery is up (watchRounds, cluster-watch.ts).
import { deprecatePatch, isCancellation, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type {
  CompanionRoundProbe,
  HostProbe,
  ProbeServingClusterInput,
} from '../activities/cluster-probe.js';
import type { WatchedRound } from '../activities/cluster-watch.js';
import type { CompanionInput } from '../activities/companions.js';
import type { ProbeCheck, ProbeServingInput } from '../activities/types.js';
import { formatDuration, parseDuration } from '../config/duration.js';
import { probeTimeoutMs } from '../config/supervise.js';
import type { Activities } from './activity-options.js';
import type { ClusterRun } from './cluster-run.js';
import { messageOf } from './failures.js';
import { patches } from './patches.js';
import type { ProbeRound, SuperviseState } from './supervise-state.js';

/** A round: the main model's verdict, and apart from it each companion's probe (none without companions). */
export interface RoundOutcome {
  round: ProbeRound;
  companions?: CompanionRoundProbe[];
}

export async function probeRound(
  cluster: ClusterRun,
  state: SuperviseState,
  companions: CompanionInput[] = [],
): Promise<RoundOutcome> {
  const { spec } = cluster;
  const startedAt = Date.now();
  deprecatePatch(patches.localProbeRound);
  // The whole round in one local activity (one SSH pool): it runs in the worker that runs this workflow, with no
  // activity task through the server, and its result is recorded with the workflow task that schedules the next
  // timer, so a healthy round costs one workflow task. One try: a failed probe is data for the workflow's count,
  // not something to retry. When the activity itself fails (a worker that died mid-round, a timeout), no host
  // answered.
  const { probeServingCluster } = proxyLocalActivities<Activities>({
    startToCloseTimeout: `${Math.round(probeTimeoutMs(spec.supervise) / 1000) + 60}s`,
    retry: { maximumAttempts: 1 },
  });
  let answers: HostProbe[] | string;
  let companionProbes: CompanionRoundProbe[] | undefined;
  try {
    const result = await probeServingCluster(
      clusterProbeInput(cluster, companions, parseDuration(spec.supervise.interval) ?? 30_000),
    );
    answers = result.hosts;
    companionProbes = result.companions;
  } catch (err) {
    if (isCancellation(err)) throw err;
    answers = messageOf(err);
  }
  const round = judgeRound(cluster, state, answers, startedAt, Date.now());
  return companionProbes ? { round, companions: companionProbes } : { round };
}

/** A watch's rounds (watchRounds): the healthy ones only counted, the last of them whole, and the one that ended it. */
export interface WatchedRounds {
  healthyRounds: number;
  healthyChecks: number;
  /** The last healthy round, judged (passed). */
  lastHealthy?: RoundOutcome;
  /** The round that ended the watch, judged; unset when it ended after its healthy rounds. */
  ended?: RoundOutcome;
}

/**
 * Up to `maxRounds` rounds run by the worker in one activity (cluster-watch.ts), reported when one is not wholly
 * healthy or after the last; only for a cluster whose last round passed. One try, as a round: a watch that fails
 * (its worker died, so no heartbeat came) is a round in which no host answered.
 */
export async function watchRounds(
  cluster: ClusterRun,
  state: SuperviseState,
  companions: CompanionInput[],
  maxRounds: number,
): Promise<WatchedRounds> {
  const { spec } = cluster;
  const intervalMs = parseDuration(spec.supervise.interval) ?? 30_000;
  const roundMs = probeTimeoutMs(spec.supervise) + 60_000;
  const { watchServingCluster } = proxyActivities<Activities>({
    startToCloseTimeout: maxRounds * (intervalMs + roundMs),
    // A round, the wait before the next and a margin: a worker that died is noticed within about two intervals.
    heartbeatTimeout: 2 * intervalMs + roundMs,
    retry: { maximumAttempts: 1 },
  });
  const startedAt = Date.now();
  try {
    const watched = await watchServingCluster({
      ...clusterProbeInput(cluster, companions, intervalMs),
      intervalMs,
      maxRounds,
    });
    const judged = (r: WatchedRound): RoundOutcome => {
      const round = judgeRound(cluster, state, r.hosts, r.atMs, r.atMs + r.durationMs);
      return r.companions ? { round, companions: r.companions } : { round };
    };
    return {
      healthyRounds: watched.healthyRounds,
      healthyChecks: watched.healthyChecks,
      ...(watched.lastHealthy ? { lastHealthy: judged(watched.lastHealthy) } : {}),
      ...(watched.ended ? { ended: judged(watched.ended) } : {}),
    };
  } catch (err) {
    if (isCancellation(err)) throw err;
    const round = judgeRound(cluster, state, messageOf(err), startedAt, Date.now());
    return { healthyRounds: 0, healthyChecks: 0, ended: { round } };
  }
}

/** What the probes of a round are given: the head's probes, the workers' containers, the companions. */
function clusterProbeInput(
  { spec, head, workers }: ClusterRun,
  companions: CompanionInput[],
  intervalMs: number,
): ProbeServingClusterInput {
  const hosts = [head, ...workers];
  const headInput: ProbeServingInput = {
    head: head.ref,
    clusterIp: head.clusterIp,
    container: spec.ray.container,
    port: spec.serve.port,
    model: spec.serve.servedModelName ?? spec.serve.model,
    ...(spec.serve.env.VLLM_API_KEY !== undefined ? { apiKey: spec.serve.env.VLLM_API_KEY } : {}),
    // Redacted from what the probes report, as the load poll's (an input only: the commands are the same).
    secretEnv: [spec.ray.env, spec.serve.env],
    completionTimeoutS: Math.max(1, Math.round(probeTimeoutMs(spec.supervise) / 1000)),
    expectedNodes: hosts.length,
    expectedGpus: hosts.length * spec.gpu.perHost,
    // Only a multiproc deploy (patches.multiprocSupervision) starts a supervisor of a multiproc spec.
    ...(spec.serve.backend === 'multiproc' ? { backend: 'multiproc' as const } : {}),
  };
  return {
    head: headInput,
    workers: workers.map((w) => w.ref),
    container: spec.ray.container,
    // Until a little after the next round: a supervisor that stopped leaves no connection open for long.
    keepConnectionsMs: 2 * intervalMs + 10_000,
    // Only when there are any: the input of a round without companions stays as it was recorded.
    ...(companions.length > 0 ? { companions } : {}),
  };
}

/**
 * The verdict of a round begun at `startedAt` whose hosts answered `answers` (or none did, for the reason given):
 * a host that did not answer counts against the cluster only once it has been silent serve.hostUnreachableTimeout.
 * Records in `state` when each silent host went silent, and forgets a host that answers.
 */
export function judgeRound(
  { spec, head, workers }: ClusterRun,
  state: SuperviseState,
  answers: HostProbe[] | string,
  startedAt: number,
  now: number,
): ProbeRound {
  const checks: ProbeCheck[] = [];
  const failures: string[] = [];
  const unreachable: Record<string, string> = {};
  const unreachableMs = parseDuration(spec.serve.hostUnreachableTimeout) ?? 120_000;
  let unknown = false;
  for (const host of [head, ...workers]) {
    const poll =
      typeof answers === 'string'
        ? { ok: false as const, error: answers }
        : (answers.find((h) => h.host === host.name) ?? { ok: false as const, error: 'no answer' });
    if (poll.ok) {
      delete state.unreachableSinceMs[host.name];
      checks.push(...poll.checks);
      for (const c of poll.checks) if (!c.ok) failures.push(`${c.host} ${c.name}: ${c.error ?? 'failed'}`);
      continue;
    }
    unreachable[host.name] = poll.error;
    // Silent since this round began, not since it gave up.
    const since = (state.unreachableSinceMs[host.name] ??= startedAt);
    const downMs = now - since;
    if (downMs >= unreachableMs) {
      failures.push(
        `${host.name} has not answered for ${formatDuration(downMs)} (serve.hostUnreachableTimeout ${spec.serve.hostUnreachableTimeout}): ${poll.error}`,
      );
    } else unknown = true;
  }
  return {
    atMs: startedAt,
    durationMs: now - startedAt,
    verdict: failures.length > 0 ? 'failed' : unknown ? 'unknown' : 'passed',
    checks,
    failures,
    unreachable,
  };
}
