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
export function listedRunOutcome(status: string, recorded: string | undefined): string | undefined {
  if (status === 'RUNNING') return 'running';
  return recorded ?? workflowEnds.find(([s]) => s === status)?.[2];
}

/** A run's outcome from its close event (none yet: running); a failure that was a refusal is `refused`. */
export function outcomeOfClose(
  closeEvent: string | undefined,
  failure: FailureReport | undefined,
  searchAttrs: Record<string, unknown>,
): Outcome {
  const outcome = outcomeByCloseEvent.get(closeEvent ?? '') ?? 'running';
  if (outcome !== 'failed') return outcome;
  return failure?.type === 'DeployAlreadyRunning' || searchAttrs.LiftoffOutcome === 'refused'
    ? 'refused'
    : 'failed';
}
