// A deploy that must fail: run to its end on the test's server, and read back the failure it ended with, for the
// test to check its type and message.
import assert from 'node:assert/strict';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import { rejectionOf } from './rejection.js';

/** The ApplicationFailure the deploy of `spec` (as the CLI starts it, cluster `cluster`) failed with. */
export async function deployFailureOf(
  client: Client,
  cluster: string,
  spec: Parameters<typeof deploy>[0],
): Promise<ApplicationFailure> {
  const error = await rejectionOf(
    client.workflow.execute(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: deployWorkflowId(cluster),
      args: [spec, { trigger: 'cli' }],
    }),
    WorkflowFailedError,
  );
  assert.ok(error.cause instanceof ApplicationFailure, `the deploy failed with: ${String(error.cause)}`);
  return error.cause;
}
