// Starting the deploy workflow under the cluster's id, as `liftoff deploy` does. Shared by the CLI and the
// scripts that record or measure a deploy, so they start the same workflow the same way.
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { DeploySpecInput } from '../config/schema.js';
import { TASK_QUEUE, deployStartAttributes, deployWorkflowId } from '../shared/constants.js';
import { deploy, type DeployOptions, type DeployTrigger } from '../workflows/index.js';

/**
 * Starts the deploy of `spec` under the cluster's workflow id. Refused by Temporal (WorkflowExecutionAlreadyStartedError)
 * while a deploy of the same cluster runs: one deploy per cluster.
 */
export function startDeploy(
  client: Client,
  spec: DeploySpecInput,
  trigger: DeployTrigger,
  options: Omit<DeployOptions, 'trigger'> = {},
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof deploy>> {
  return client.workflow.start(deploy, {
    taskQueue: TASK_QUEUE,
    workflowId: deployWorkflowId(spec.cluster),
    args: [spec, { trigger, ...options }],
    workflowIdConflictPolicy: 'FAIL',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: deployStartAttributes(spec.cluster, trigger),
  });
}
