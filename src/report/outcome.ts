// The one table from how Temporal says a workflow execution ended (its status, or the event that closed it) to
// liftoff's outcome words. The postmortem, `liftoff history` and `liftoff schedule` all read it. Pure.
import type { FailureReport, Outcome } from './model.js';

// Temporal's execution status (as the client names it, `WorkflowExecutionStatusName`), the history event that
// closes a run with it (HistoryEventView.kind; none while running), and liftoff's word for it.
const workflowEnds: readonly [status: string, closeEvent: string | undefined, outcome: Outcome][] = [
  ['RUNNING', undefined, 'running'],
  ['COMPLETED', 'workflowExecutionCompleted', 'succeeded'],
  ['FAILED', 'workflowExecutionFailed', 'failed'],
  ['CANCELLED', 'workflowExecutionCanceled', 'cancelled'],
  ['TERMINATED', 'workflowExecutionTerminated', 'terminated'],
  ['TIMED_OUT', 'workflowExecutionTimedOut', 'timed out'],
  ['CONTINUED_AS_NEW', 'workflowExecutionContinuedAsNew', 'continued as new'],
];

const outcomeByCloseEvent = new Map(
  workflowEnds.flatMap(([, closeEvent, outcome]) => (closeEvent ? [[closeEvent, outcome] as const] : [])),
);

/** The events that close a run: completed, failed, cancelled, terminated, timed out, continued as new. */
export const closeEventKinds: readonly string[] = [...outcomeByCloseEvent.keys()];

/**
 * A listed run's outcome: what the workflow recorded (LiftoffOutcome; a refused run is FAILED to Temporal but
 * not a failed deploy), else its status's. A run still going has none yet, whatever an earlier run of the same
 * id recorded.
 */
export function listedRunOutcome(
  status: string,
  recorded: string | undefined,
  memo?: Record<string, unknown>,
): string | undefined {
  if (status === 'RUNNING') return 'running';
  const rolledBackTo = rolledBackToOf(status, memo);
  if (rolledBackTo !== undefined) return `failed (rolled back to ${rolledBackTo})`;
  return recorded ?? workflowEnds.find(([s]) => s === status)?.[2];
}

/**
 * The revision a failed deploy rolled back to: it went on as the rollback's deploy (continue-as-new, so Temporal
 * calls it CONTINUED_AS_NEW, not FAILED) after recording `rolledBackTo` in its memo (src/workflows/revisions.ts).
 */
export function rolledBackToOf(
  status: string | undefined,
  memo: Record<string, unknown> | undefined,
): number | undefined {
  const to = memo?.rolledBackTo;
  return status === 'CONTINUED_AS_NEW' && typeof to === 'number' && Number.isInteger(to) ? to : undefined;
}

/**
 * A run's outcome from its close event (none yet: running); a failure that was a refusal is `refused`, and a
 * run that continued as its own rollback (memo `rolledBackTo`) is `failed`.
 */
export function outcomeOfClose(
  closeEvent: string | undefined,
  failure: FailureReport | undefined,
  searchAttrs: Record<string, unknown>,
  memo: Record<string, unknown> = {},
): Outcome {
  const outcome = outcomeByCloseEvent.get(closeEvent ?? '') ?? 'running';
  if (outcome === 'continued as new' && rolledBackToOf('CONTINUED_AS_NEW', memo) !== undefined)
    return 'failed';
  if (outcome !== 'failed') return outcome;
  return failure?.type === 'DeployAlreadyRunning' || searchAttrs.LiftoffOutcome === 'refused'
    ? 'refused'
    : 'failed';
}
