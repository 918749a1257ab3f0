// liftoff's own Prometheus series (src/shared/metric-names.ts), recorded from workflow code in this one module so
// every place that records is one line. They go through the SDK's workflow metric meter: nothing is written to
// the history, and nothing is recorded while a workflow replays (a worker that restarts and replays a deploy does
// not count it twice). Where the worker runs without --metrics, the meter records into nothing.
import type { MetricTags } from '@temporalio/common';
import { metricMeter, type ApplicationFailure } from '@temporalio/workflow';
import { clusterMetrics, clusterStates, deployMetrics } from '../shared/metric-names.js';
import { vllmPhases } from '../parsers/vllm-log.js';
import type { LoadProgress, StepName } from './steps.js';
import type { Budget, SuperviseState } from './supervise-state.js';
import { relaunchesInWindow } from './supervise-state.js';

export type ClusterState = (typeof clusterStates)[number];
export type DeployOutcome = 'succeeded' | 'failed' | 'cancelled' | 'rolled_back';

/**
 * The meter without the SDK's `workflowType` label: the supervisor, the deploy and `down` all write the cluster's
 * state, and each must overwrite the others' series rather than keep one of its own (an undefined tag is dropped
 * by the SDK before the sample leaves the sandbox; MetricTags does not admit undefined, hence the cast).
 */
function meter(tags: Record<string, string>): typeof metricMeter {
  return metricMeter.withTags({ workflowType: undefined, ...tags } as unknown as MetricTags);
}

function gauge(name: string, tags: Record<string, string>, value: number, valueType: 'int' | 'float'): void {
  // Gauges refuse negative values; a value we could not know (NaN) is left unset rather than recorded as 0.
  if (!Number.isFinite(value)) return;
  meter(tags).createGauge(name, valueType).set(Math.max(0, value));
}

function count(name: string, tags: Record<string, string>, n = 1): void {
  meter(tags).createCounter(name).add(n);
}

/** 1 for the cluster's state, 0 for every other: a query of `== 1` shows where each cluster is. */
export function recordClusterState(cluster: string, state: ClusterState | undefined): void {
  for (const s of clusterStates)
    gauge(clusterMetrics.state, { cluster, state: s }, s === state ? 1 : 0, 'int');
}

/** The supervisor's statuses that are cluster states; 'stopped' is not: whoever stopped it says what follows. */
function clusterStateOf(status: SuperviseState['status']): ClusterState | undefined {
  return status === 'stopped' ? undefined : status;
}

/**
 * The supervisor's series, from its state after every change (supervise-report.ts). Counters count what is new
 * since the last call: the first call of a run only sets its baseline, since a run that continued as new carries
 * rounds and relaunches its predecessor already counted.
 */
export function supervisionRecorder(cluster: string): (state: SuperviseState, budget: Budget) => void {
  let countedRounds: number | undefined;
  let countedRelaunch: number | undefined;
  return (state, budget) => {
    const now = Date.now();
    const c = { cluster };
    const status = clusterStateOf(state.status);
    if (status !== undefined) recordClusterState(cluster, status);
    const relaunchN = state.relaunches.at(-1)?.n ?? 0;
    if (countedRounds !== undefined && countedRelaunch !== undefined) {
      const round = state.lastProbe;
      if (round && state.rounds > countedRounds)
        count(clusterMetrics.probeRounds, { cluster, verdict: round.verdict }, state.rounds - countedRounds);
      if (relaunchN > countedRelaunch) count(clusterMetrics.relaunches, c, relaunchN - countedRelaunch);
    }
    countedRounds = state.rounds;
    countedRelaunch = relaunchN;
    const round = state.lastProbe;
    if (round) {
      gauge(clusterMetrics.probeOk, c, round.verdict === 'passed' ? 1 : 0, 'int');
      gauge(clusterMetrics.probeLatency, c, round.durationMs / 1000, 'float');
    }
    const left = budget.maxRelaunches - relaunchesInWindow(state, budget, now).length;
    gauge(clusterMetrics.relaunchBudgetLeft, c, left, 'int');
    const { launch } = state;
    gauge(clusterMetrics.servingSince, c, launch.servingSinceMs / 1000, 'float');
    if (launch.revision !== undefined) {
      gauge(clusterMetrics.revision, c, launch.revision, 'int');
      if (launch.revisionRecordedAtMs !== undefined)
        gauge(clusterMetrics.revisionRecorded, c, launch.revisionRecordedAtMs / 1000, 'float');
    }
    for (const comp of Object.values(state.companions ?? {}))
      gauge(
        clusterMetrics.companionUp,
        { cluster, companion: comp.name, host: comp.host },
        comp.status === 'serving' ? 1 : 0,
        'int',
      );
  };
}

/** A step's duration, where the deploy's step tracker ends it. */
export function recordStepDuration(cluster: string, step: StepName, durationMs: number): void {
  meter({ cluster, step })
    .createHistogram(deployMetrics.stepDuration, 'float', 's')
    .record(Math.max(0, durationMs) / 1000);
}

/** The load's progress, phase and ETA, after each poll of the head. */
export function recordLoad(cluster: string, load: LoadProgress): void {
  const c = { cluster };
  if (load.shardsTotal)
    gauge(deployMetrics.loadProgress, c, (load.shardsDone ?? 0) / load.shardsTotal, 'float');
  else if (load.phase === 'ready') gauge(deployMetrics.loadProgress, c, 1, 'float');
  for (const phase of vllmPhases)
    gauge(deployMetrics.loadPhase, { cluster, phase }, phase === load.phase ? 1 : 0, 'int');
  if (load.etaS !== undefined) gauge(deployMetrics.loadEta, c, load.etaS, 'float');
  else if (load.phase === 'ready') gauge(deployMetrics.loadEta, c, 0, 'float');
}

/**
 * How far off the load's first ETA was: it said it would be done `etaS` after `atMs`, and it was done at
 * `doneAtMs`. A gauge cannot go negative, so the error is two series: `late` (it took longer than said) and
 * `early`, one of them 0.
 */
export function recordEtaError(
  cluster: string,
  first: { atMs: number; etaS: number },
  doneAtMs: number,
): void {
  const errorS = first.etaS - (doneAtMs - first.atMs) / 1000;
  gauge(deployMetrics.etaError, { cluster, direction: 'late' }, Math.max(0, -errorS), 'float');
  gauge(deployMetrics.etaError, { cluster, direction: 'early' }, Math.max(0, errorS), 'float');
}

/**
 * A deploy that ended, with its failure type ('' when it succeeded). A cluster that serves is serving. One whose
 * deploy failed or was cancelled after it took the cluster over (stopped its supervisor and services) has no
 * state until something says otherwise (its supervisor, after a relaunch that failed; the rollback's deploy); one
 * that ended before that (a refused spec, a failed preflight) leaves the state of what still runs as it was.
 */
export function recordDeployOutcome(
  cluster: string,
  outcome: DeployOutcome,
  at: { failureType?: string; tookOver: boolean },
): void {
  count(deployMetrics.outcomes, { cluster, outcome, failure_type: at.failureType ?? '' });
  if (outcome === 'succeeded') recordClusterState(cluster, 'serving');
  else if (at.tookOver) recordClusterState(cluster, undefined);
}

/** Counts a failed deploy; returns the failure, for `throw`. */
export function countedFailure(
  cluster: string,
  failure: ApplicationFailure,
  tookOver: boolean,
): ApplicationFailure {
  recordDeployOutcome(cluster, 'failed', { failureType: failure.type ?? '', tookOver });
  return failure;
}
