// Reading a deploy back: its workflow id, and a failure flattened for people and for --json.
import type { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, type TemporalFailure } from '@temporalio/common';

export { deployWorkflowId } from '../shared/constants.js';

export interface FailureSummary {
  type: string;
  message: string;
  details: unknown[];
}

export function describeFailure(err: WorkflowFailedError): FailureSummary {
  let cause: TemporalFailure | Error | undefined = err.cause;
  while (
    cause &&
    !(cause instanceof ApplicationFailure) &&
    'cause' in cause &&
    cause.cause instanceof Error
  ) {
    cause = cause.cause;
  }
  if (cause instanceof ApplicationFailure) {
    return {
      type: cause.type ?? 'Error',
      message: cause.message,
      details: (cause.details as unknown[] | undefined) ?? [],
    };
  }
  return { type: cause?.name ?? 'Error', message: cause?.message ?? err.message, details: [] };
}
