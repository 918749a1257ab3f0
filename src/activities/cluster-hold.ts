// Host ownership as the deploy and `down` see it: which cluster holds these hosts (Temporal's visibility, by
// the LiftoffHostIds of running cluster workflows: shared/host-digest.ts), taking them over, holding them, releasing them. These talk to
// Temporal, not to hosts, with the worker's own client.
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { searchAttributes, deployWorkflowId, superviseWorkflowId } from '../shared/constants.js';
import {
  clusterWorkflowId,
  clusterWorkflowType,
  handOverUpdate,
  holdUpdate,
  releaseUpdate,
  type ClusterRecord,
  type HeldCluster,
  type HoldInput,
} from '../shared/cluster-api.js';
import { hostDigests } from '../shared/host-digest.js';
import { keepHeartbeating } from './heartbeat.js';
import { client, isRunning, waitClosed } from './temporal-client.js';

/** Visibility's string literal: machine ids and cluster names are validated, so this only guards the quotes. */
const literal = (value: string): string => `'${value.replace(/[\\']/g, '\\$&')}'`;

/** The other clusters holding any of these machines, and why they could not be looked for, if they could not. */
export interface HostOwners {
  /** Their records, as their memo last said. */
  owners: ClusterRecord[];
  unchecked?: string;
}

/**
 * Temporal's time-skipping test server implements no visibility and no multi-operation: there, hosts are neither
 * looked up nor held, and the deploy says so. Any other server does both; its errors are errors.
 */
function unimplemented(err: unknown): boolean {
  const cause = err instanceof Error && 'cause' in err ? err.cause : undefined;
  return typeof cause === 'object' && cause !== null && 'code' in cause && cause.code === 12;
}

export async function findHostOwners(input: { cluster: string; machineIds: string[] }): Promise<HostOwners> {
  if (input.machineIds.length === 0) return { owners: [] };
  // Clusters list their hosts by digest; those begun before digests, by machine id. A digest can be shared by
  // two machines, so a candidate counts only when its memo holds one of these very ids.
  const wanted = new Set(input.machineIds);
  const keys = [...hostDigests(input.machineIds), ...input.machineIds];
  const query = [
    `WorkflowType = ${literal(clusterWorkflowType)}`,
    `ExecutionStatus = 'Running'`,
    `${searchAttributes.hostIds.name} IN (${keys.map(literal).join(', ')})`,
    `${searchAttributes.cluster.name} != ${literal(input.cluster)}`,
  ].join(' AND ');
  const owners: ClusterRecord[] = [];
  try {
    for await (const wf of client().workflow.list({ query })) {
      const record = wf.memo?.record as ClusterRecord | undefined;
      if (record?.hosts.some((h) => wanted.has(h.machineId))) owners.push(record);
    }
  } catch (err) {
    if (!unimplemented(err)) throw err;
    return {
      owners,
      unchecked: 'this Temporal server lists no workflows: who holds the hosts was not checked',
    };
  }
  return { owners };
}

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
        const ended = await endedRecord(owner);
        if (ended?.handedOver?.to !== input.to) throw err;
        held = { record: ended, spec: undefined };
      }
      await Promise.all([waitClosed(deployWorkflowId(owner)), waitClosed(superviseWorkflowId(owner))]);
      records.push(held.record);
    }
    return records;
  });
}

/** Records that this deploy holds the hosts, starting the cluster's workflow when none runs; false where it cannot. */
export async function holdHosts(input: HoldInput & { cluster: string }): Promise<boolean> {
  const { cluster, ...hold } = input;
  const id = clusterWorkflowId(cluster);
  // A new tenure carries the revisions the last one ended with; a running workflow keeps its own.
  const revisions = (await isRunning(id)) ? undefined : (await endedRecord(cluster))?.revisions;
  try {
    await client().workflow.executeUpdateWithStart(holdUpdate, {
      args: [hold],
      startWorkflowOperation: new WithStartWorkflowOperation(clusterWorkflowType, {
        workflowId: id,
        taskQueue: Context.current().info.taskQueue,
        args: [{ cluster, ...(revisions ? { revisions } : {}) }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [{ key: searchAttributes.cluster, value: cluster }],
      }),
    });
    return true;
  } catch (err) {
    if (!unimplemented(err)) throw err;
    return false;
  }
}

/** Ends the cluster's workflow as down, returning its record; undefined when none runs. */
export async function releaseHosts(input: {
  cluster: string;
  by: string;
}): Promise<ClusterRecord | undefined> {
  const handle = client().workflow.getHandle(clusterWorkflowId(input.cluster));
  try {
    return await handle.executeUpdate(releaseUpdate, { args: [{ by: input.by }] });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    // It ended meanwhile (a retry after the update went through, or a handover): its result is the record.
    if (await isRunning(clusterWorkflowId(input.cluster))) throw err;
    return endedRecord(input.cluster);
  }
}

/** The record the cluster's last workflow run ended with (down, handed over); undefined when it did not end so. */
export async function endedRecord(cluster: string): Promise<ClusterRecord | undefined> {
  const run = client().workflow.getHandle(clusterWorkflowId(cluster)).result();
  return (await run.catch(() => undefined)) as ClusterRecord | undefined;
}
