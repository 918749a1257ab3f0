// What the supervisor knows about each companion (spec.companions), carried across continue-as-new with the rest
// of its state. Pure: the rules for counting a companion's failed rounds and for its own restart budget
// (supervise.maxRelaunches per supervise.window, counted per companion) are here, tested without a server;
// supervise-companions.ts does the restarting.
import type { CompanionRoundProbe } from '../activities/cluster-probe.js';
import { formatDuration } from '../config/duration.js';

/**
 * serving: its last counted probe passed; failing: it failed, fewer than failureThreshold rounds in a row so far;
 * restarting: the supervisor is bringing it up again; degraded: its restart budget is spent, so it is left failed.
 */
export type CompanionStatus = 'serving' | 'failing' | 'restarting' | 'degraded';

export interface CompanionLastProbe {
  atMs: number;
  ok: boolean;
  latencyMs?: number;
  detail?: string;
  error?: string;
}

export interface CompanionRestart {
  atMs: number;
  endedAtMs?: number;
  /** Unset while it runs. */
  outcome?: 'serving' | 'failed';
  error?: string;
}

export interface CompanionState {
  name: string;
  host: string;
  /** Where it answers: http://clusterIp:port on its host. */
  endpoint: string;
  status: CompanionStatus;
  consecutiveFailures: number;
  lastProbe?: CompanionLastProbe;
  /** Its restarts by the supervisor since the cluster's last launch (bounded). */
  restarts: CompanionRestart[];
}

export interface CompanionBudget {
  failureThreshold: number;
  maxRestarts: number;
  windowMs: number;
}

/** Restarts kept per companion: the budget counts at most supervise.maxRelaunches, which the schema caps lower. */
export const companionRestartLogLimit = 20;

/** Every companion fresh, as a launch of the cluster leaves them: serving, nothing counted. */
export function initialCompanions(
  companions: readonly { name: string; host: string; endpoint: string }[],
): Record<string, CompanionState> {
  return Object.fromEntries(
    companions.map((c) => [
      c.name,
      {
        name: c.name,
        host: c.host,
        endpoint: c.endpoint,
        status: 'serving',
        consecutiveFailures: 0,
        restarts: [],
      } satisfies CompanionState,
    ]),
  );
}

/**
 * Folds a companion's probe of one round into its state. A failure counts only when the main model's round
 * passed (a cluster going down takes its companions with it: that is the whole cluster's loss to judge), and a
 * host that could not be reached counts neither way. A companion being restarted is not judged by the rounds.
 */
export function recordCompanionProbe(
  state: CompanionState,
  probe: CompanionRoundProbe,
  mainPassed: boolean,
  atMs: number,
): void {
  if (state.status === 'restarting') return;
  if ('unreachable' in probe) {
    state.lastProbe = { atMs, ok: false, error: probe.error };
    return;
  }
  state.lastProbe = probe.ok
    ? { atMs, ok: true, latencyMs: probe.latencyMs, detail: probe.detail }
    : { atMs, ok: false, error: probe.error };
  if (probe.ok) {
    state.consecutiveFailures = 0;
    state.status = 'serving';
    return;
  }
  if (!mainPassed) return;
  state.consecutiveFailures += 1;
  if (state.status !== 'degraded') state.status = 'failing';
}

/** The restarts the budget counts: those started within the window. */
export function restartsInWindow(state: CompanionState, budget: CompanionBudget, nowMs: number): number {
  return state.restarts.filter((r) => nowMs - r.atMs < budget.windowMs).length;
}

/**
 * What to do about a companion now: nothing, restart it (it failed failureThreshold rounds in a row and its
 * budget allows), or leave it failed (the budget is spent: it becomes degraded, once).
 */
export function companionAction(
  state: CompanionState,
  budget: CompanionBudget,
  nowMs: number,
): { kind: 'none' } | { kind: 'restart' } | { kind: 'degrade'; reason: string } {
  if (state.status !== 'failing' || state.consecutiveFailures < budget.failureThreshold)
    return { kind: 'none' };
  const used = restartsInWindow(state, budget, nowMs);
  if (used < budget.maxRestarts) return { kind: 'restart' };
  return {
    kind: 'degrade',
    reason:
      budget.maxRestarts === 0
        ? 'supervise.maxRelaunches is 0: a failed companion is not restarted'
        : `its restart budget is spent: ${used} restarts within supervise.window ${formatDuration(budget.windowMs)} (supervise.maxRelaunches ${budget.maxRestarts})`,
  };
}

/** A restart begins: counted in the budget from now on; the rounds leave it alone until it ends. */
export function beginRestart(state: CompanionState, nowMs: number): CompanionRestart {
  const restart: CompanionRestart = { atMs: nowMs };
  state.status = 'restarting';
  state.restarts = [...state.restarts, restart].slice(-companionRestartLogLimit);
  return restart;
}

/** A restart ended: serving again (its probe passed), or failing, to be judged by the next rounds again. */
export function endRestart(
  state: CompanionState,
  restart: CompanionRestart,
  nowMs: number,
  outcome: { ok: true; latencyMs: number; detail: string } | { ok: false; error: string },
): void {
  restart.endedAtMs = nowMs;
  state.consecutiveFailures = 0;
  if (outcome.ok) {
    restart.outcome = 'serving';
    state.status = 'serving';
    state.lastProbe = { atMs: nowMs, ok: true, latencyMs: outcome.latencyMs, detail: outcome.detail };
    return;
  }
  restart.outcome = 'failed';
  restart.error = outcome.error;
  state.status = 'failing';
  state.lastProbe = { atMs: nowMs, ok: false, error: outcome.error };
}
