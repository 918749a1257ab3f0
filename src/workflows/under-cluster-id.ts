// One deploy per cluster, whatever started it: a run started under another id (the Temporal UI's form, a
// schedule) holds only the trigger, and the deploy itself runs as a child under `liftoff-<cluster>`, so Temporal
// refuses it while another deploy of the cluster runs.
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowFailure,
  isCancellation,
  startChild,
  type ChildWorkflowHandle,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { deployStartAttributes, deployWorkflowId, searchAttributes } from '../shared/constants.js';
import { deployAlreadyRunningMessage, FailureType, type DeployTriggerName } from '../shared/failures.js';
import { messageOf, rootApplicationFailure } from './failures.js';
import { publishDetails } from './step-tracker.js';
import type { DeployProgress, DeployResult } from './steps.js';
import { deployWorkflowType, type DeployOptions, type DeployWorkflow } from './supervise-api.js';

export async function runUnderClusterId(
  input: unknown,
  trigger: DeployTriggerName,
  workflowId: string,
  progress: DeployProgress,
  options: DeployOptions = {},
): Promise<DeployResult> {
  progress.deployWorkflowId = workflowId;
  // Lets `liftoff history` show the deploy once (the child), not once more for the run that only started it.
  upsertMemo({ deployWorkflowId: workflowId });
  publishDetails(progress);
  const child = await startDeployChild(progress.cluster, input, trigger, undefined, { options });
  if (!child) {
    progress.status = 'refused';
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'refused' }]);
    publishDetails(progress);
    throw ApplicationFailure.create({
      type: FailureType.deployAlreadyRunning,
      message: deployAlreadyRunningMessage(progress.cluster, workflowId, trigger),
      nonRetryable: true,
    });
  }
  try {
    const result = await child.result();
    progress.status = 'succeeded';
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'succeeded' }]);
    return result;
  } catch (err) {
    const cancelled = err instanceof ChildWorkflowFailure && isCancellation(err.cause);
    progress.status = cancelled ? 'cancelled' : 'failed';
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: progress.status }]);
    publishDetails(progress);
    // This run was cancelled (from the UI), and the child with it: end as cancelled too.
    if (CancellationScope.current().consideredCancelled)
      throw new CancelledFailure(`${workflowId} was cancelled`);
    const cause = rootApplicationFailure(err);
    throw ApplicationFailure.create({
      type: cancelled ? FailureType.deployCancelled : (cause?.type ?? FailureType.deployFailed),
      message: `${workflowId} ${cancelled ? 'was cancelled' : `failed: ${messageOf(err)}`}`,
      nonRetryable: true,
      details: cause?.details ?? [],
    });
  }
}

/** The deploy as a child under the cluster's id; undefined when Temporal refuses it: another deploy of it runs. */
export async function startDeployChild(
  cluster: string,
  input: unknown,
  trigger: DeployTriggerName,
  memo?: Record<string, unknown>,
  more: { options?: DeployOptions; abandon?: boolean } = {},
): Promise<ChildWorkflowHandle<DeployWorkflow> | undefined> {
  try {
    return await startChild<DeployWorkflow>(deployWorkflowType, {
      workflowId: deployWorkflowId(cluster),
      args: [input, { ...more.options, trigger }],
      // A rollback the supervisor starts outlives it: the rollback's deploy starts the next supervisor.
      parentClosePolicy: more.abandon ? 'ABANDON' : 'REQUEST_CANCEL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: deployStartAttributes(cluster, trigger),
      ...(memo ? { memo } : {}),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return undefined;
    throw err;
  }
}
