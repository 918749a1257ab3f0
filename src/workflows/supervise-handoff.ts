// The deploy's side of supervision: a deploy that is about to change the cluster ends the running supervisor
// (it would see the cluster go down and relaunch the old spec), and a successful deploy starts the new one.
// The supervisor's own relaunch (a child of the supervisor) does neither: its parent goes on supervising.
import { getExternalWorkflowHandle, sleep, startChild, workflowInfo } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { superviseWorkflowId } from '../shared/constants.js';
import { messageOf } from './failures.js';
import {
  stopSupervisionSignal,
  superviseWorkflowType,
  type BakeWindow,
  type LaunchInfo,
  type SuperviseInput,
} from './supervise-api.js';
import type { DeployTriggerName } from '../shared/failures.js';

/** A relaunch by the cluster's supervisor; a rollback it started after a failed bake window is not one. */
export function isSupervisorRelaunch(cluster: string, trigger: DeployTriggerName): boolean {
  return trigger !== 'rollback' && workflowInfo().parent?.workflowId === superviseWorkflowId(cluster);
}

/** Signals the running supervisor of the cluster, if any, to end; a deploy with none has nothing to do. */
export async function takeOverSupervision(cluster: string, trigger: DeployTriggerName): Promise<void> {
  if (isSupervisorRelaunch(cluster, trigger)) return;
  const info = workflowInfo();
  try {
    await getExternalWorkflowHandle(superviseWorkflowId(cluster)).signal(stopSupervisionSignal, {
      reason: `taken over by a new deploy (trigger ${trigger}, ${info.workflowId} run ${info.runId})`,
    });
  } catch {
    // No supervisor runs: nothing to take over.
  }
}

// The old supervisor ends on its next turn after the takeover signal; a deploy that is faster than that waits.
const startAttempts = 30;

/** Starts the cluster's supervisor, abandoned (it outlives this deploy). Says what happened, for the record. */
export async function startSupervision(
  cluster: string,
  spec: unknown,
  launch: LaunchInfo,
  enabled: { spec: boolean; option: boolean },
  trigger: DeployTriggerName,
  bake?: BakeWindow,
): Promise<string> {
  const workflowId = superviseWorkflowId(cluster);
  if (isSupervisorRelaunch(cluster, trigger)) return `supervised by ${workflowId} (this is its relaunch)`;
  if (!enabled.option) return 'not supervised (--no-supervise)';
  if (!enabled.spec) return 'not supervised (supervise.enabled: false)';
  let last = '';
  for (let attempt = 1; attempt <= startAttempts; attempt++) {
    try {
      await startChild(superviseWorkflowType, {
        workflowId,
        args: [{ spec, launch, ...(bake ? { bake } : {}) } satisfies SuperviseInput],
        parentClosePolicy: 'ABANDON',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
      return `supervised by ${workflowId}`;
    } catch (err) {
      // The deploy itself succeeded; a supervisor that cannot start is reported, not a failure of it.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) return `not supervised: ${messageOf(err)}`;
      last = messageOf(err);
      await sleep('2s');
    }
  }
  return `not supervised: ${workflowId} is still running (${last})`;
}
