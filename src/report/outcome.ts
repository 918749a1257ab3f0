// The one table from how Temporal says a workflow execution ended (its status, or the event that closed it) to
// liftoff's outcome words. The postmortem, `liftoff history` and `liftoff schedule` all read it. Pure.
import type { FailureReport, Outcome } from './model.js';

interface WorkflowEnd {
  /** The execution status as the client names it (`WorkflowExecutionStatusName`). */
  status: string;
  /** The history event that closes a run with this status (HistoryEventView.kind); none while running. */
  closeEvent?: string;
  outcome: Outcome;
}

const workflowEnds: readonly WorkflowEnd[] = [
  { status: 'RUNNING', outcome: 'running' },
  { status: 'COMPLETED', closeEvent: 'workflowExecutionCompleted', outcome: 'succeeded' },
  { status: 'FAILED', closeEvent: 'workflowExecutionFailed', outcome: 'failed' },
  { status: 'CANCELLED', closeEvent: 'workflowExecutionCanceled', outcome: 'cancelled' },
  { status: 'TERMINATED', closeEvent: 'workflowExecutionTerminated', outcome: 'terminated' },
  { status: 'TIMED_OUT', closeEvent: 'workflowExecutionTimedOut', outcome: 'timed out' },
  {
    status: 'CONTINUED_AS_NEW',
    closeEvent: 'workflowExecutionContinuedAsNew',
    outcome: 'continued as new',
  },
];

const outcomeByStatus = new Map(workflowEnds.map((e) => [e.status, e.outcome]));

const outcomeByCloseEvent = new Map(
  workflowEnds.flatMap((e) => (e.closeEvent ? [[e.closeEvent, e.outcome] as const] : [])),
);

/** The outcome a workflow execution status stands for; undefined for a status liftoff has no word for. */
export function outcomeOfStatus(status: string): Outcome | undefined {
  return outcomeByStatus.get(status);
}

/** The events that close a run: completed, failed, cancelled, terminated, timed out, continued as new. */
export const closeEventKinds: readonly string[] = [...outcomeByCloseEvent.keys()];

/**
 * A listed run's outcome: what the workflow recorded (LiftoffOutcome; a refused run is FAILED to Temporal but
 * not a failed deploy), else its status's. A run still going has none yet, whatever an earlier run of the same
 * id recorded.
 */
export function listedRunOutcome(status: string, recorded: string | undefined): string | undefined {
  if (status === 'RUNNING') return 'running';
  return recorded ?? outcomeOfStatus(status);
}

/** A run's outcome from its close event (none yet: running); a failure that was a refusal is `refused`. */
export function outcomeOfClose(
  closeEvent: string | undefined,
  failure: FailureReport | undefined,
  searchAttrs: Record<string, unknown>,
): Outcome {
  const outcome = closeEvent === undefined ? 'running' : (outcomeByCloseEvent.get(closeEvent) ?? 'running');
  if (outcome !== 'failed') return outcome;
  return failure?.type === 'DeployAlreadyRunning' || searchAttrs.LiftoffOutcome === 'refused'
    ? 'refused'
    : 'failed';
}
