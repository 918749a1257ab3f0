// The supervisor of a serving cluster, `liftoff-<cluster>-supervise` (at most one per cluster): every
// supervise.interval a probe round (supervise-round.ts); after supervise.failureThreshold failed rounds in a row
// the cluster is lost: a failure bundle from every host goes into history first, then the whole cluster is
// relaunched through the normal deploy (supervise-relaunch.ts), within a budget of supervise.maxRelaunches per
// supervise.window, with doubling backoff. Past the budget it tears down or leaves as onFailure says and ends
// degraded, with the reason and every bundle. It continues as new after a fixed number of rounds, carrying its
// state, so its history stays bounded however long the cluster serves.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  deprecatePatch,
  patched,
  isCancellation,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { FailureBundle } from '../activities/types.js';
import { parseDuration } from '../config/duration.js';
import { healthyRoundsPerReport } from '../config/supervise.js';
import { deployWorkflowId } from '../shared/constants.js';
import { FailureType } from '../shared/failures.js';
import { stepActivities } from './activity-options.js';
import { clusterOf, validate, type ClusterRun } from './cluster-run.js';
import { messageOf } from './failures.js';
import { notifyText, sendNotification } from './notify.js';
import { patches } from './patches.js';
import { tearDown } from './teardown.js';
import { stopSupervisionSignal, supervisionQuery, type SuperviseInput } from './supervise-api.js';
import { collectBundle, relaunchCluster } from './supervise-relaunch.js';
import { rollBackLostRevision, withinBake } from './supervise-rollback.js';
import { companionSupervisor } from './supervise-companions.js';
import { probeRound, watchRounds, type RoundOutcome } from './supervise-round.js';
import { clusterReporter } from './supervise-report.js';
import {
  causeOf,
  detailsMarkdown,
  initialState,
  nextRelaunch,
  recordRounds,
  trimRelaunchLog,
  type Budget,
  type RelaunchEntry,
  type SuperviseState,
  revisionOf,
} from './supervise-state.js';

/** Rounds per run before continuing as new: about 6 events a round keeps a run near 1,200 events. */
export const roundsPerRun = 200;

export interface SuperviseResult {
  state: SuperviseState;
}

export async function supervise(input: SuperviseInput): Promise<SuperviseResult> {
  const spec = validate(input.spec);
  const state: SuperviseState = input.carry ?? initialState(spec.cluster, input.launch, Date.now());
  const cluster: ClusterRun = { ...clusterOf(spec), spec, acts: stepActivities(spec) };
  const intervalMs = parseDuration(spec.supervise.interval) ?? 30_000;
  const budget: Budget = {
    maxRelaunches: spec.supervise.maxRelaunches,
    windowMs: parseDuration(spec.supervise.window) ?? 3_600_000,
    backoffMs: parseDuration(spec.supervise.backoff) ?? 60_000,
  };
  const stableAfterMs = parseDuration(spec.supervise.stableAfter) ?? 600_000;
  /** The budget with the crash-loop rule, for runs that reach it with this code (not those recorded before). */
  const budgetNow = (): Budget =>
    patched(patches.superviseBackoffReset) ? { ...budget, stableAfterMs } : budget;
  const report = clusterReporter(spec.cluster);
  // Without companions it does nothing, and adds nothing to the history.
  const companions = companionSupervisor(
    cluster,
    state,
    {
      failureThreshold: spec.supervise.failureThreshold,
      maxRestarts: spec.supervise.maxRelaunches,
      windowMs: budget.windowMs,
    },
    () => publish(),
  );

  let stopReason: string | undefined;
  let relaunchScope: CancellationScope | undefined;
  let watchScope: CancellationScope | undefined;
  setHandler(supervisionQuery, () => state);
  setHandler(stopSupervisionSignal, ({ reason }) => {
    stopReason ??= reason;
    relaunchScope?.cancel();
    watchScope?.cancel();
  });
  const publish = async (): Promise<void> => {
    setCurrentDetails(detailsMarkdown(state, Date.now()));
    await report(state, budgetNow());
  };
  const stopped = () => stopReason !== undefined;
  /**
   * A stop that came while an activity ran (a round held past a workflow task's heartbeat, the bundle) is seen
   * only once it returns: checked before acting on what it returned, so a stopped supervisor neither announces a
   * loss nor relaunches, degrades or tears down.
   */
  const stoppedMeanwhile = (): boolean => {
    if (!stopped()) return false;
    deprecatePatch(patches.superviseStopBeforeActing);
    return true;
  };
  await publish();

  /** Ends the supervision with the reason in the state, the memo (read without a worker) and the details. */
  const end = async (status: 'stopped' | 'degraded', reason: string): Promise<SuperviseResult> => {
    state.status = status;
    state.reason = reason;
    upsertMemo({ supervise: { status, reason } });
    await publish();
    return { state };
  };

  const roundsPerReport = healthyRoundsPerReport(spec.supervise);
  /**
   * The next round to act on, and how many rounds it stands for. A cluster whose last round passed is watched by
   * the worker (supervise.reportEvery): its healthy rounds come back counted, the last one whole; a round that
   * was not wholly healthy comes back on its own, after the healthy ones before it are recorded. Otherwise one
   * round, as every round was before the watch.
   */
  const nextRound = async (): Promise<
    { outcome: RoundOutcome; rounds: number; checks: number } | 'stopped'
  > => {
    const watch =
      roundsPerReport > 1 &&
      state.lastProbe?.verdict === 'passed' &&
      !companions.restarting() &&
      patched(patches.superviseWatch);
    if (!watch) {
      const outcome = await probeRound(cluster, state, companions.probeInputs());
      return { outcome, rounds: 1, checks: outcome.round.checks.length };
    }
    const scope = new CancellationScope();
    watchScope = scope;
    let watched;
    try {
      watched = await scope.run(() => watchRounds(cluster, state, companions.probeInputs(), roundsPerReport));
    } catch (err) {
      if (isCancellation(err) && stopped()) return 'stopped';
      throw err;
    } finally {
      watchScope = undefined;
    }
    const { lastHealthy, ended, healthyRounds, healthyChecks } = watched;
    if (!ended && lastHealthy) return { outcome: lastHealthy, rounds: healthyRounds, checks: healthyChecks };
    if (lastHealthy) {
      recordRounds(state, lastHealthy.round, healthyRounds, healthyChecks);
      await companions.afterRound(lastHealthy.companions, true);
      // Counted as passed before the round that ended the watch is judged.
      await publish();
    }
    const last = ended ?? lastHealthy;
    if (!last) throw new Error('a watch came back with no round');
    return { outcome: last, rounds: 1, checks: last.round.checks.length };
  };

  /** After a loss: bundle, budget, backoff, relaunch, until serving again, out of budget, or stopped. */
  const recover = async (): Promise<'serving' | 'degraded' | 'stopped'> => {
    let cause = causeOf(state.lastProbe);
    /** This loss's bundle while its relaunch is refused: the next attempt carries it (see the refused case). */
    let refusedEpisodeBundle: FailureBundle | undefined;
    for (;;) {
      if (stopped()) return 'stopped';
      // The evidence first: nothing of the failed launch has been removed yet.
      const bundle = refusedEpisodeBundle ?? (await collectBundle(cluster));
      refusedEpisodeBundle = undefined;
      // The bundle is in history whatever comes next.
      if (stoppedMeanwhile()) return 'stopped';
      const next = nextRelaunch(state, budgetNow(), Date.now());
      if (!next.relaunch) {
        state.finalBundle = bundle;
        state.reason = `${next.reason}; last failure: ${cause}`;
        return 'degraded';
      }
      const entry: RelaunchEntry = {
        n: (state.relaunches.at(-1)?.n ?? 0) + 1,
        lostAtMs: state.lostAtMs ?? Date.now(),
        cause,
        bundle,
        startedAtMs: Date.now(),
        deployWorkflowId: deployWorkflowId(spec.cluster),
      };
      if (next.waitMs > 0) {
        await publish();
        if (await condition(stopped, next.waitMs)) return 'stopped';
        entry.startedAtMs = Date.now();
      }
      state.relaunches.push(entry);
      state.status = 'relaunching';
      await publish();
      await sendNotification(spec, 'relaunched', notifyText.relaunched(spec.cluster, entry.n, cause), {
        n: entry.n,
        cause,
      });
      const cancelled = (): 'stopped' => {
        entry.outcome = 'cancelled';
        entry.endedAtMs = Date.now();
        return 'stopped';
      };
      if (stoppedMeanwhile()) return cancelled();
      const scope = new CancellationScope();
      relaunchScope = scope;
      let outcome;
      try {
        outcome = await scope.run(() => relaunchCluster(spec, entry));
      } catch (err) {
        if (!isCancellation(err) || !stopped()) throw err;
        return cancelled();
      } finally {
        relaunchScope = undefined;
      }
      entry.endedAtMs = Date.now();
      if (outcome.kind === 'serving') {
        entry.outcome = 'serving';
        entry.launchId = outcome.result.launchId;
        state.launch = {
          launchId: outcome.result.launchId,
          servingSinceMs: Date.now(),
          endpoint: outcome.result.endpoint,
          ...revisionOf(outcome.result.revision, Date.now()),
        };
        return 'serving';
      }
      entry.outcome = outcome.kind;
      entry.error = outcome.error;
      state.status = 'lost';
      await publish();
      if (outcome.kind === 'refused') {
        delete entry.bundle;
        // One refused attempt an interval while the other deploy runs: the log stays bounded meanwhile, and
        // keeps every relaunch the budget counts.
        trimRelaunchLog(state, budget, Date.now());
        // Someone else is deploying the cluster; their deploy takes supervision over once it passes preflight.
        if (await condition(stopped, intervalMs)) return 'stopped';
        // The loss's evidence is in this bundle; what the hosts show now is the other deploy's doing. So the
        // next attempt carries it rather than collecting one every interval for as long as the refusals last
        // (one bundle a refusal episode).
        deprecatePatch(patches.refusedRelaunchKeepsBundle);
        refusedEpisodeBundle = bundle;
        continue;
      }
      cause = `relaunch #${entry.n} failed: ${outcome.error}`;
    }
  };

  /** Past the budget: tear down or leave as onFailure says, then end degraded with the reason and every bundle. */
  const degrade = async (): Promise<never> => {
    state.status = 'degraded';
    const containers =
      spec.onFailure === 'teardown'
        ? await CancellationScope.nonCancellable(() => tearDown(cluster)).catch((err: unknown) => [
            `teardown failed: ${messageOf(err)}`,
          ])
        : ['left for inspection (onFailure: leave)'];
    const reason = `${state.reason ?? 'degraded'}\ncontainers: ${containers.join('; ')}`;
    await end('degraded', reason);
    await sendNotification(spec, 'degraded', notifyText.degraded(spec.cluster, reason), {
      reason,
      relaunches: state.relaunches.length,
    });
    throw ApplicationFailure.create({
      type: FailureType.clusterDegraded,
      message: `${spec.cluster} is degraded: ${reason}`,
      nonRetryable: true,
      details: [{ state }],
    });
  };

  try {
    for (;;) {
      if (stopped()) return await end('stopped', stopReason ?? 'stopped');
      const next = await nextRound();
      if (next === 'stopped') return await end('stopped', stopReason ?? 'stopped');
      const { round, companions: companionProbes } = next.outcome;
      recordRounds(state, round, next.rounds, next.checks);
      if (state.consecutiveFailures >= spec.supervise.failureThreshold) {
        if (stoppedMeanwhile()) return await end('stopped', stopReason ?? 'stopped');
        // The whole cluster goes; its deploy brings the companions back after the main model.
        companions.cancelRestarts();
        state.status = 'lost';
        state.lostAtMs = Date.now();
        await publish();
        await sendNotification(spec, 'lost', notifyText.lost(spec.cluster, causeOf(state.lastProbe)), {
          cause: causeOf(state.lastProbe),
          rounds: state.consecutiveFailures,
        });
        if (withinBake(input.bake, Date.now())) {
          // The evidence first, as for a relaunch; then the known-good comes back instead.
          state.finalBundle = await collectBundle(cluster);
          if (stoppedMeanwhile()) return await end('stopped', stopReason ?? 'stopped');
          const info = workflowInfo();
          const said = await rollBackLostRevision(spec, input.bake, causeOf(state.lastProbe), info);
          return await end('stopped', said);
        }
        const recovered = await recover();
        if (recovered === 'stopped') return await end('stopped', stopReason ?? 'stopped');
        if (recovered === 'degraded') return await degrade();
        Object.assign(state, { status: 'serving', consecutiveFailures: 0, unreachableSinceMs: {} });
        companions.reset();
        await sendNotification(spec, 'recovered', notifyText.recovered(spec.cluster, state.launch.launchId), {
          launchId: state.launch.launchId,
          endpoint: state.launch.endpoint,
        });
        delete state.lostAtMs;
      } else if (!stopped()) await companions.afterRound(companionProbes, round.verdict === 'passed');
      await publish();
      // The interval first, so the next run's first round keeps the spacing.
      if (await condition(stopped, Math.max(0, intervalMs - round.durationMs))) continue;
      // Not under a companion's restart, which would be abandoned: the next round's turn comes soon enough.
      if (
        (state.roundsThisRun >= roundsPerRun || workflowInfo().continueAsNewSuggested) &&
        !companions.restarting()
      ) {
        trimRelaunchLog(state, budget, Date.now());
        await continueAsNew<typeof supervise>({
          spec: input.spec,
          launch: state.launch,
          carry: { ...state, roundsThisRun: 0, runs: state.runs + 1 },
          ...(withinBake(input.bake, Date.now()) ? { bake: input.bake } : {}),
        });
      }
    }
  } catch (err) {
    if (isCancellation(err)) await end('stopped', 'cancelled');
    throw err;
  }
}
