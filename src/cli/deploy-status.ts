// Reading a deploy back: its workflow id, its latest run, and a failure flattened for people and for --json.
import {
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, type TemporalFailure } from '@temporalio/common';
import { deployWorkflowId } from '../shared/constants.js';
import { UsageError } from './run-command.js';
import { emit, type OutputOptions } from './render.js';
import { ExitCode } from './exit-codes.js';

/** The cluster's latest deploy run; a cluster never deployed is a usage error (exit 2) naming the workflow. */
export async function describeClusterDeploy(
  client: Client,
  cluster: string,
): Promise<{ workflowId: string; handle: WorkflowHandle; described: WorkflowExecutionDescription }> {
  const workflowId = deployWorkflowId(cluster);
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError)
      throw new UsageError(`no deploy of cluster ${cluster} found (workflow ${workflowId})`);
    throw err;
  });
  return { workflowId, handle, described };
}

export function describeFailure(err: WorkflowFailedError): {
  type: string;
  message: string;
  details: unknown[];
} {
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

/**
 * A run the command waited for that failed (deploy, down): `{ failed: true, workflowId, runId?, type, message,
 * details }` under --json, else `text` of the message; exit 1. Any other error is not a failed run: rethrown.
 */
export function emitFailedRun(
  opts: OutputOptions,
  err: unknown,
  run: { workflowId: string; runId?: string },
  text: (message: string) => string,
): number {
  if (!(err instanceof WorkflowFailedError)) throw err;
  emit(opts, { failed: true, ...run, ...describeFailure(err) }, (f) => text(f.message));
  return ExitCode.deployFailed;
}
