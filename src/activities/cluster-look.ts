// What `down` reads and ends before it touches a host: the cluster's record and spec, what of it runs, and its
// last deploy and last down (a cluster deployed before clusters held hosts has no record, only its deploys).
import { deployWorkflowId, searchAttributes, superviseWorkflowId } from '../shared/constants.js';
import {
  clusterQuery,
  clusterWorkflowId,
  type ClusterRecord,
  type HeldCluster,
} from '../shared/cluster-api.js';
import { keepHeartbeating } from './heartbeat.js';
import { endedRecord } from './cluster-hold.js';
import { client, describe, isRunning, startInput, waitClosed } from './temporal-client.js';

export interface ClusterLook {
  /** The cluster's workflow runs (it holds the hosts): its record and the spec it holds them with. */
  held?: HeldCluster;
  /** Its workflow's last run ended: how (down, handed over) and when. */
  lastRecord?: ClusterRecord;
  deployRunning: boolean;
  superviseRunning: boolean;
  /** The latest deploy's spec (its start input) and start; absent when the cluster was never deployed. */
  lastDeploy?: { spec: unknown; startedAtMs: number };
  /** When the latest completed `down` of the cluster closed. */
  lastDownAtMs?: number;
}

export async function lookAtCluster(input: { cluster: string }): Promise<ClusterLook> {
  const entityId = clusterWorkflowId(input.cluster);
  const entity = await describe(entityId);
  const holding = entity?.status.name === 'RUNNING';
  const held = holding ? await client().workflow.getHandle(entityId).query(clusterQuery) : undefined;
  const lastRecord = entity && !holding ? await endedRecord(input.cluster) : undefined;
  const deploy = await describe(deployWorkflowId(input.cluster));
  const spec = deploy && !held ? await startInput(deployWorkflowId(input.cluster)) : undefined;
  return {
    ...(held ? { held } : {}),
    ...(lastRecord ? { lastRecord } : {}),
    deployRunning: deploy?.status.name === 'RUNNING',
    superviseRunning: await isRunning(superviseWorkflowId(input.cluster)),
    ...(deploy && spec !== undefined
      ? { lastDeploy: { spec, startedAtMs: deploy.startTime.getTime() } }
      : {}),
    ...(await lastDown(input.cluster)),
  };
}

async function lastDown(cluster: string): Promise<{ lastDownAtMs?: number }> {
  const query = `WorkflowType = 'down' AND ${searchAttributes.cluster.name} = '${cluster}' AND ExecutionStatus = 'Completed'`;
  let latest: number | undefined;
  for await (const wf of client().workflow.list({ query, pageSize: 20 })) {
    const closed = wf.closeTime?.getTime();
    if (closed !== undefined && (latest === undefined || closed > latest)) latest = closed;
  }
  return latest === undefined ? {} : { lastDownAtMs: latest };
}

/** Ends what runs of the cluster: its supervisor (told why) and its deploy (cancelled); waits until both ended. */
export async function endClusterRuns(input: { cluster: string; reason: string }): Promise<string[]> {
  return keepHeartbeating(async () => {
    const c = client();
    const ended: string[] = [];
    const supervisor = superviseWorkflowId(input.cluster);
    if (await isRunning(supervisor)) {
      await c.workflow.getHandle(supervisor).signal('stopSupervision', { reason: input.reason });
      ended.push(`supervisor ${supervisor} stopped`);
    }
    const deploy = deployWorkflowId(input.cluster);
    if (await isRunning(deploy)) {
      await c.workflow.getHandle(deploy).cancel();
      ended.push(`deploy ${deploy} cancelled`);
    }
    await Promise.all([waitClosed(supervisor), waitClosed(deploy)]);
    return ended;
  });
}
