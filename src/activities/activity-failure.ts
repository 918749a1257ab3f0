import { ApplicationFailure } from '@temporalio/common';

/** An activity's failure of a named type (shared/failures.ts), with its details as the one details entry. */
export function activityFailure(
  type: string,
  message: string,
  nonRetryable: boolean,
  details?: object,
): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable,
    ...(details ? { details: [details] } : {}),
  });
}
