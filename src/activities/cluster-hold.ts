// Host ownership as the deploy and `down` see it: which cluster holds these hosts (Temporal's visibility, by
// the LiftoffHostIds of running cluster workflows), taking them over, holding them, releasing them. These talk to
// Temporal, not to hosts, with the worker's own client.
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { searchAttributes, deployWorkflowId, superviseWorkflowId } from '../shared/constants.js';
import {
  clusterQuery,
  clusterWorkflowId,
  clusterWorkflowType,
  handOverUpdate,
  holdUpdate,
  releaseUpdate,
  type ClusterRecord,
  type HeldCluster,
  type HoldInput,
} from '../shared/cluster-api.js';
import { keepHeartbeating } from './heartbeat.js';

function client(): Client {
  return Context.current().client;
}

/** Visibility's string literal: machine ids and cluster names are validated, so this only guards the quotes. */
const literal = (value: string): string => `'${value.replace(/[\\']/g, '\\$&')}'`;

/** The other clusters holding any of these machines, with their records (as their memo last said). */
export async function findHostOwners(input: {
  cluster: string;
  machineIds: string[];
}): Promise<ClusterRecord[]> {
  if (input.machineIds.length === 0) return [];
  const query = [
    `WorkflowType = ${literal(clusterWorkflowType)}`,
    `ExecutionStatus = 'Running'`,
    `${searchAttributes.hostIds.name} IN (${input.machineIds.map(literal).join(', ')})`,
    `${searchAttributes.cluster.name} != ${literal(input.cluster)}`,
  ].join(' AND ');
  const owners: ClusterRecord[] = [];
  for await (const wf of client().workflow.list({ query })) {
    const record = wf.memo?.record as ClusterRecord | undefined;
    if (record) owners.push(record);
  }
  return owners;
}

/** How long a handover waits for the old cluster's supervisor and deploy to end. */
const endWaitMs = 5 * 60_000;

/**
 * Takes each owner's hosts: its workflow records the handover, stops its supervisor and cancels its deploy; this
 * waits until both have ended, so nothing of the old cluster acts on the hosts once this returns. Returns the
 * owners' records: their containers are the new deploy's to remove.
 */
export async function handOverHosts(input: {
  to: string;
  by: string;
  owners: string[];
}): Promise<ClusterRecord[]> {
  return keepHeartbeating(async () => {
    const records: ClusterRecord[] = [];
    for (const owner of input.owners) {
      const handle = client().workflow.getHandle(clusterWorkflowId(owner));
      let held: HeldCluster;
      try {
        held = await handle.executeUpdate(handOverUpdate, { args: [{ to: input.to, by: input.by }] });
      } catch (err) {
        // A retry after the update went through: the owner has already ended, handed over.
        const ended = (await handle.result().catch(() => undefined)) as ClusterRecord | undefined;
        if (ended?.handedOver?.to !== input.to) throw err;
        held = { record: ended, spec: undefined };
      }
      await Promise.all([
        waitClosed(deployWorkflowId(owner)),
        waitClosed(superviseWorkflowId(owner)),
      ]);
      records.push(held.record);
    }
    return records;
  });
}

/** Records that this deploy holds the hosts, starting the cluster's workflow when none runs. */
export async function holdHosts(input: HoldInput & { cluster: string }): Promise<void> {
  const { cluster, ...hold } = input;
  await client().workflow.executeUpdateWithStart(holdUpdate, {
    args: [hold],
    startWorkflowOperation: new WithStartWorkflowOperation(clusterWorkflowType, {
      workflowId: clusterWorkflowId(cluster),
      taskQueue: Context.current().info.taskQueue,
      args: [{ cluster }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [{ key: searchAttributes.cluster, value: cluster }],
    }),
  });
}

/** What `down` starts from: the cluster's record and spec, whether it still holds, and what of it runs. */
export interface ClusterLook {
  held?: HeldCluster;
  /** The cluster's workflow runs: the hosts are held. */
  holding: boolean;
  deployRunning: boolean;
  superviseRunning: boolean;
}

export async function lookAtCluster(input: { cluster: string }): Promise<ClusterLook> {
  const c = client();
  const running = async (workflowId: string): Promise<boolean> =>
    (await describe(c, workflowId))?.status.name === 'RUNNING';
  const entity = c.workflow.getHandle(clusterWorkflowId(input.cluster));
  const described = await describe(c, clusterWorkflowId(input.cluster));
  const holding = described?.status.name === 'RUNNING';
  const held = holding ? await entity.query(clusterQuery) : undefined;
  return {
    ...(held ? { held } : {}),
    holding,
    deployRunning: await running(deployWorkflowId(input.cluster)),
    superviseRunning: await running(superviseWorkflowId(input.cluster)),
  };
}

/** Ends what runs of the cluster: its supervisor (told why) and its deploy (cancelled); waits until both ended. */
export async function endClusterRuns(input: { cluster: string; reason: string }): Promise<string[]> {
  return keepHeartbeating(async () => {
    const c = client();
    const ended: string[] = [];
    const supervisor = superviseWorkflowId(input.cluster);
    if ((await describe(c, supervisor))?.status.name === 'RUNNING') {
      await c.workflow
        .getHandle(supervisor)
        .signal('stopSupervision', { reason: input.reason })
        .catch(() => undefined);
      ended.push(`supervisor ${supervisor} stopped`);
    }
    const deploy = deployWorkflowId(input.cluster);
    if ((await describe(c, deploy))?.status.name === 'RUNNING') {
      await c.workflow
        .getHandle(deploy)
        .cancel()
        .catch(() => undefined);
      ended.push(`deploy ${deploy} cancelled`);
    }
    await Promise.all([waitClosed(supervisor), waitClosed(deploy)]);
    return ended;
  });
}

/** Ends the cluster's workflow as down; nothing to do when it does not run. */
export async function releaseHosts(input: { cluster: string; by: string }): Promise<void> {
  const handle = client().workflow.getHandle(clusterWorkflowId(input.cluster));
  try {
    await handle.executeUpdate(releaseUpdate, { args: [{ by: input.by }] });
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) {
      const described = await handle.describe().catch(() => undefined);
      if (described?.status.name === 'RUNNING') throw err;
    }
  }
}

async function describe(c: Client, workflowId: string) {
  try {
    return await c.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/** Waits until the workflow's latest run has closed, however it ends; a workflow that never ran is closed. */
async function waitClosed(workflowId: string): Promise<void> {
  const deadline = Date.now() + endWaitMs;
  const handle = client().workflow.getHandle(workflowId);
  while (Date.now() < deadline) {
    const d = await describe(client(), workflowId);
    if (!d || d.status.name !== 'RUNNING') return;
    await Promise.race([handle.result().catch(() => undefined), delay(2_000)]);
  }
  throw new Error(`${workflowId} still runs ${endWaitMs / 60_000} min after it was told to end`);
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
