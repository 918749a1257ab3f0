// How a workflow reads a failure: the root ApplicationFailure under activity and child-workflow wrappers, its
// message, and whether it is final. Shared by the deploy and the probe.
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/workflow';

export function rootApplicationFailure(err: unknown): ApplicationFailure | undefined {
  let e: unknown = err;
  while (e instanceof ActivityFailure || e instanceof ChildWorkflowFailure) e = e.cause;
  return e instanceof ApplicationFailure ? e : undefined;
}

export function messageOf(err: unknown): string {
  const app = rootApplicationFailure(err);
  if (app) return app.message;
  if ((err instanceof ActivityFailure || err instanceof ChildWorkflowFailure) && err.cause)
    return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** The activity said retrying cannot help (an unknown host key, a refused login, a typed fatal state). */
export function isFinal(err: unknown): boolean {
  return rootApplicationFailure(err)?.nonRetryable === true;
}

/** A failure of the load: the message ends with the serve log's tail, the details carry the load state. */
export function loadFailure(
  type: string,
  message: string,
  tail: string[],
  load: unknown,
): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message: `${message}\n--- serve log tail ---\n${tail.slice(-20).join('\n')}`,
    nonRetryable: true,
    details: [{ load, logTail: tail }],
  });
}
