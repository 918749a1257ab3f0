// What the supervising workflow knows about its cluster, carried across continue-as-new: the counters, the last
// probe round, the relaunch log with each relaunch's failure bundle. Pure: the rules for judging a round, the
// relaunch budget and the backoff are here, tested without a server; supervise.ts does the waiting and acting.
import type { FailureBundle, ProbeCheck } from '../activities/types.js';
import { formatDuration } from '../config/duration.js';
import { markdownHostText } from '../shared/host-markup.js';
import type { CompanionState } from './supervise-companion-state.js';

export type SuperviseStatus = 'serving' | 'lost' | 'relaunching' | 'degraded' | 'stopped';

export interface ProbeRound {
  atMs: number;
  durationMs: number;
  /** passed: every probe passed; failed: one did (or a host stayed unreachable past the window); unknown: a host
   * did not answer but is still within its window, so the round neither counts against the cluster nor for it. */
  verdict: 'passed' | 'failed' | 'unknown';
  checks: ProbeCheck[];
  /** Why the round failed, one line per failed probe. */
  failures: string[];
  /** Hosts that did not answer, with the error. */
  unreachable: Record<string, string>;
}

export interface RelaunchEntry {
  /** 1 for the first relaunch this supervisor made. */
  n: number;
  lostAtMs: number;
  /** The failed probes (or the failed relaunch) that led to it. */
  cause: string;
  /** What every host showed before anything was removed; dropped from entries older than the budget window. */
  bundle?: FailureBundle;
  startedAtMs: number;
  endedAtMs?: number;
  /** refused: another deploy of the cluster ran, so this one started nothing (not counted in the budget). */
  outcome?: 'serving' | 'failed' | 'cancelled' | 'refused';
  error?: string;
  deployWorkflowId: string;
  deployRunId?: string;
  launchId?: string;
}

export interface LaunchInfo {
  launchId: string;
  /** When this launch started serving: uptime counts from here. */
  servingSinceMs: number;
  endpoint?: string;
  /** The revision serving and when it was recorded, for the metrics; unset in runs started before they were. */
  revision?: number;
  revisionRecordedAtMs?: number;
}

export interface SuperviseState {
  cluster: string;
  status: SuperviseStatus;
  /** Why it is degraded or stopped. */
  reason?: string;
  supervisingSinceMs: number;
  launch: LaunchInfo;
  /** Rounds and probes since supervision started (all runs); failed rounds among them. */
  rounds: number;
  probes: number;
  failedRounds: number;
  consecutiveFailures: number;
  /** This run's rounds: the history stays bounded by continuing as new after a fixed number. */
  roundsThisRun: number;
  /** How many runs supervision has continued as new through. */
  runs: number;
  lastProbe?: ProbeRound;
  /** The last failed rounds (bounded): each probe failure with its error. */
  recentFailures: ProbeRound[];
  /** When each host stopped answering; a host that answers again is removed. */
  unreachableSinceMs: Record<string, number>;
  lostAtMs?: number;
  relaunches: RelaunchEntry[];
  /** The bundle collected when the budget was found spent: the evidence of the last failure. */
  finalBundle?: FailureBundle;
  /** Each companion (spec.companions) by name: its state, last probe and restarts; unset without companions. */
  companions?: Record<string, CompanionState>;
}

export interface Budget {
  maxRelaunches: number;
  windowMs: number;
  backoffMs: number;
  /** A relaunch that then served this long ends a crash loop: the backoff starts over (the budget still counts it). */
  stableAfterMs?: number;
}

/** Entries kept in the relaunch log; older ones are dropped (their bundles are in the history of their run). */
export const relaunchLogLimit = 20;
const recentFailuresLimit = 5;

export function relaunchesInWindow(state: SuperviseState, budget: Budget, nowMs: number): RelaunchEntry[] {
  return state.relaunches.filter((r) => r.outcome !== 'refused' && nowMs - r.startedAtMs < budget.windowMs);
}

/**
 * The relaunches in the window since the cluster last served stably (supervise.stableAfter after a relaunch,
 * until the next loss or `lostAtMs`): a crash loop's, which the backoff doubles over. Independent faults minutes
 * apart each start over, as Kubernetes resets CrashLoopBackOff after 10 minutes of running.
 */
export function crashLoop(
  recent: readonly RelaunchEntry[],
  budget: Budget,
  lostAtMs: number,
): RelaunchEntry[] {
  const stableAfterMs = budget.stableAfterMs ?? Infinity;
  let start = 0;
  recent.forEach((r, i) => {
    const servedUntilMs = recent[i + 1]?.lostAtMs ?? lostAtMs;
    if (r.outcome === 'serving' && r.endedAtMs !== undefined && servedUntilMs - r.endedAtMs >= stableAfterMs)
      start = i + 1;
  });
  return recent.slice(start);
}

/**
 * What to do next about a lost cluster: relaunch after `waitMs` (0 for the first of a crash loop, then the
 * backoff, doubling), or stop: the budget of maxRelaunches per window is spent.
 */
export function nextRelaunch(
  state: SuperviseState,
  budget: Budget,
  nowMs: number,
): { relaunch: true; waitMs: number } | { relaunch: false; reason: string } {
  const recent = relaunchesInWindow(state, budget, nowMs);
  if (recent.length >= budget.maxRelaunches) {
    return {
      relaunch: false,
      reason:
        budget.maxRelaunches === 0
          ? 'supervise.maxRelaunches is 0: the cluster is lost and is not relaunched'
          : `the relaunch budget is spent: ${recent.length} relaunches within supervise.window ${formatDuration(budget.windowMs)} (supervise.maxRelaunches ${budget.maxRelaunches})`,
    };
  }
  const loop = crashLoop(recent, budget, state.lostAtMs ?? nowMs);
  const last = loop.at(-1);
  if (!last) return { relaunch: true, waitMs: 0 };
  const backoff = budget.backoffMs * 2 ** (loop.length - 1);
  const sinceLast = nowMs - (last.endedAtMs ?? last.startedAtMs);
  return { relaunch: true, waitMs: Math.max(0, backoff - sinceLast) };
}

/** The wait before a relaunch were the cluster lost now; undefined when the budget is spent (it would degrade). */
export function backoffIfLostNow(state: SuperviseState, budget: Budget, nowMs: number): number | undefined {
  const next = nextRelaunch({ ...state, lostAtMs: nowMs }, budget, nowMs);
  return next.relaunch ? next.waitMs : undefined;
}

/** Folds a round into the state: counters, the consecutive-failure count, the bounded failure record. */
export function recordRound(state: SuperviseState, round: ProbeRound): void {
  recordRounds(state, round, 1, round.checks.length);
}

/**
 * `rounds` rounds that ended with `last`, `checks` checks in all: a watch's healthy rounds (all passed, so only
 * the last is kept), or one round.
 */
export function recordRounds(state: SuperviseState, last: ProbeRound, rounds: number, checks: number): void {
  const round = last;
  state.rounds += rounds;
  state.roundsThisRun += rounds;
  state.probes += checks;
  state.lastProbe = round;
  if (round.verdict === 'passed') state.consecutiveFailures = 0;
  if (round.verdict !== 'failed') return;
  state.failedRounds += 1;
  state.consecutiveFailures += 1;
  state.recentFailures = [...state.recentFailures, round].slice(-recentFailuresLimit);
}

/**
 * Bounds the relaunch log: at most relaunchLogLimit entries, bundles only within the budget window. The relaunches
 * the budget counts (relaunchesInWindow: at most supervise.maxRelaunches, which the schema caps at the limit) are
 * always kept, whatever came after them: refused attempts, one an interval while another deploy runs, would
 * otherwise push spent relaunches out of the log and give their budget back. The newest of the others fill the
 * rest.
 */
export function trimRelaunchLog(state: SuperviseState, budget: Budget, nowMs: number): void {
  const counted = new Set(relaunchesInWindow(state, budget, nowMs));
  const others = state.relaunches.filter((r) => !counted.has(r));
  const room = Math.max(0, relaunchLogLimit - counted.size);
  const kept = new Set([...counted, ...others.slice(Math.max(0, others.length - room))]);
  state.relaunches = state.relaunches
    .filter((r) => kept.has(r))
    .map((r) => {
      if (nowMs - r.startedAtMs < budget.windowMs || r.bundle === undefined) return r;
      const { bundle: _dropped, ...rest } = r;
      return rest;
    });
}

/** A launch's revision fields, when its deploy recorded one (at `atMs`, near enough for the metrics). */
export function revisionOf(
  revision: number | undefined,
  atMs: number,
): Pick<LaunchInfo, 'revision' | 'revisionRecordedAtMs'> {
  return revision === undefined ? {} : { revision, revisionRecordedAtMs: atMs };
}

export function initialState(cluster: string, launch: LaunchInfo, nowMs: number): SuperviseState {
  return {
    cluster,
    status: 'serving',
    supervisingSinceMs: nowMs,
    launch,
    rounds: 0,
    probes: 0,
    failedRounds: 0,
    consecutiveFailures: 0,
    roundsThisRun: 0,
    runs: 1,
    recentFailures: [],
    unreachableSinceMs: {},
    relaunches: [],
  };
}

/** The last round's failures in one line: the cause of a loss. */
export function causeOf(round: ProbeRound | undefined): string {
  if (!round || round.failures.length === 0) return 'no probe result';
  return round.failures.join('; ');
}

/** The workflow's current details, as the Temporal UI renders them (markdown): host text in code spans. */
export function detailsMarkdown(state: SuperviseState, nowMs: number): string {
  const lines = [
    `**${state.cluster}** — ${state.status}${state.reason ? `: ${markdownHostText(state.reason)}` : ''}`,
    '',
    `- uptime since the last launch: ${formatDuration(Math.max(0, nowMs - state.launch.servingSinceMs))}`,
    `- rounds: ${state.rounds} (${state.failedRounds} failed, ${state.consecutiveFailures} in a row), probes: ${state.probes}`,
  ];
  const p = state.lastProbe;
  if (p) {
    const latency = p.checks.find((c) => c.name === 'completion')?.latencyMs;
    lines.push(
      `- last probe: ${p.verdict}${latency !== undefined ? `, completion ${formatDuration(latency)}` : ''}${p.failures.length ? ` (${markdownHostText(p.failures.join('; '))})` : ''}`,
    );
  }
  for (const c of Object.values(state.companions ?? {})) {
    const last = c.lastProbe;
    const probe = last ? (last.ok ? 'passed' : `failed (${markdownHostText(last.error ?? '')})`) : 'not yet';
    lines.push(
      `- companion ${c.name} on ${c.host}: ${c.status}, last probe ${probe}, ${c.restarts.length} restart(s)`,
    );
  }
  if (state.relaunches.length > 0) {
    lines.push('', 'relaunches:', '');
    for (const r of state.relaunches.slice(-5))
      lines.push(
        `- #${r.n} ${r.outcome ?? 'running'}: ${markdownHostText(r.cause)}${r.error ? ` → ${markdownHostText(r.error)}` : ''}`,
      );
  }
  return lines.join('\n');
}
