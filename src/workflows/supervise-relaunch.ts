// The supervisor's two actions on a lost cluster: keep the evidence (a failure bundle from every host, into
// history before anything is removed), and relaunch the whole cluster by running the normal deploy as a child
// under `liftoff-<cluster>`, so one deploy per cluster holds against every other trigger too.
import { CancellationScope, isCancellation, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { FailureBundle } from '../activities/types.js';
import type { DeploySpec } from '../config/schema.js';
import { heartbeatTimeout, type Activities } from './activity-options.js';
import { messageOf, rootApplicationFailure } from './failures.js';
import type { ClusterRun } from './cluster-run.js';
import type { DeployResult } from './steps.js';
import { startDeployChild } from './under-cluster-id.js';
import type { RelaunchEntry } from './supervise-state.js';

const bundleActivities = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout,
  retry: { initialInterval: '2s', maximumAttempts: 2 },
});

/** Never fails: a bundle that could not be collected says why. */
export async function collectBundle({ spec, hosts, head }: ClusterRun): Promise<FailureBundle> {
  try {
    return await bundleActivities.collectFailureBundle({
      hosts,
      headName: head.name,
      container: spec.ray.container,
      logPath: spec.serve.logPath,
      secretEnv: [spec.ray.env, spec.serve.env],
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    return {
      collectedAtMs: Date.now(),
      hosts: [
        { host: '(all)', reachable: false, errors: [`collecting the bundle failed: ${messageOf(err)}`] },
      ],
    };
  }
}

export type RelaunchOutcome =
  | { kind: 'serving'; result: DeployResult }
  | { kind: 'failed'; error: string; type?: string }
  /** Another deploy of the cluster runs: this one started nothing. */
  | { kind: 'refused'; error: string };

/**
 * Runs the deploy of `spec` as a child under the cluster's id, with trigger `supervise`. Its memo names this
 * supervisor and the relaunch, so the deploy's postmortem links the bundle that caused it. A cancel of this
 * workflow (or of the scope it runs in) cancels the child, which tears down what it started.
 */
export async function relaunchCluster(spec: DeploySpec, entry: RelaunchEntry): Promise<RelaunchOutcome> {
  const info = workflowInfo();
  const { n, cause, lostAtMs } = entry;
  const child = await startDeployChild(spec.cluster, spec, 'supervise', {
    relaunch: { supervisorWorkflowId: info.workflowId, supervisorRunId: info.runId, n, cause, lostAtMs },
  });
  if (!child) return { kind: 'refused', error: `another deploy of ${spec.cluster} is running` };
  entry.deployRunId = child.firstExecutionRunId;
  try {
    return { kind: 'serving', result: await child.result() };
  } catch (err) {
    // This supervisor was cancelled or stopped: the child went with it.
    if (CancellationScope.current().consideredCancelled) throw err;
    if (isCancellation(err)) return { kind: 'failed', error: 'the relaunch deploy was cancelled' };
    const cause = rootApplicationFailure(err);
    return { kind: 'failed', error: messageOf(err), ...(cause?.type ? { type: cause.type } : {}) };
  }
}
