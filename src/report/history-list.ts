// `liftoff history` rows from what Temporal's visibility store lists: search attributes and memo, never the
// events. Pure, so the rules (newest first; delegating runs only when refused) are tested without a server.
import { isRecord } from './events.js';
import { listedRunOutcome, rolledBackToOf } from './outcome.js';
import { dropUndefined, numberOr, stringOr } from './values.js';

/** One listed workflow execution, as the client's list() gives it, reduced to what history needs. */
export interface ListedRun {
  workflowId: string;
  runId: string;
  /** Temporal's status name: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, CONTINUED_AS_NEW. */
  status: string;
  startTime: Date;
  closeTime?: Date;
  trigger?: string;
  outcome?: string;
  loadSeconds?: number;
  memo?: Record<string, unknown>;
}

export interface HistoryEntry {
  workflowId: string;
  runId: string;
  startedAt: string;
  closedAt?: string;
  trigger: string;
  outcome: string;
  totalSeconds?: number;
  loadSeconds?: number;
  tokensPerSecond?: number;
  /** A relaunch by the cluster's supervisor (trigger supervise): which one, and what it answered. */
  relaunch?: { n?: number; cause?: string; supervisorWorkflowId?: string };
  /** A failed deploy that went on as its rollback: the revision the rollback restores. */
  rolledBackTo?: number;
  /** A rollback's deploy (trigger rollback): the run it rolls back, `workflowId:runId` (a deploy or a supervisor). */
  rollbackOf?: string;
}

/**
 * Newest first, at most `limit`. A UI or schedule run that started the deploy as a child (memo
 * `deployWorkflowId`) would list the same deploy twice, so it is left out, except when it was refused: then
 * it is the only record that the trigger fired and started nothing.
 */
export function historyEntries(runs: readonly ListedRun[], limit: number): HistoryEntry[] {
  return runs
    .filter((r) => r.memo?.deployWorkflowId === undefined || outcomeOf(r) === 'refused')
    .sort((a, b) => b.startTime.getTime() - a.startTime.getTime())
    .slice(0, Math.max(0, limit))
    .map((r): HistoryEntry => {
      const summary = isRecord(r.memo?.summary) ? r.memo.summary : {};
      const relaunch = isRecord(r.memo?.relaunch) ? r.memo.relaunch : undefined;
      return dropUndefined({
        workflowId: r.workflowId,
        runId: r.runId,
        startedAt: r.startTime.toISOString(),
        trigger: r.trigger ?? 'unknown',
        outcome: outcomeOf(r),
        closedAt: r.closeTime?.toISOString(),
        totalSeconds:
          numberOr(summary.totalSeconds) ??
          (r.closeTime ? (r.closeTime.getTime() - r.startTime.getTime()) / 1000 : undefined),
        loadSeconds: r.loadSeconds ?? numberOr(summary.loadSeconds),
        tokensPerSecond: numberOr(summary.tokensPerSecond),
        relaunch:
          relaunch &&
          dropUndefined({
            n: numberOr(relaunch.n),
            cause: stringOr(relaunch.cause),
            supervisorWorkflowId: stringOr(relaunch.supervisorWorkflowId),
          }),
        rolledBackTo: rolledBackToOf(r.status, r.memo),
        rollbackOf: stringOr(r.memo?.rollbackOf),
      });
    });
}

function outcomeOf(r: ListedRun): string {
  return listedRunOutcome(r.status, r.outcome, r.memo) ?? r.status.toLowerCase();
}

/** The median of the values (the mean of the middle two for an even count); undefined when empty. */
export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
