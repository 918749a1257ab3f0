// A cluster's revisions as the deploy and the supervisor reach them: read (from the cluster's running workflow, or
// the record its last tenure ended with), record, mark bad. These talk to Temporal, not to hosts.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  clusterWorkflowId,
  markRevisionBadUpdate,
  recordRevisionUpdate,
  revisionsQuery,
  type RevisionToRecord,
} from '../shared/cluster-api.js';
import type { ClusterRecord } from '../shared/cluster-api.js';
import type { Revision } from '../shared/revisions.js';
import { currentRevisionOf } from '../shared/rollback.js';
import { client, isRunning } from './temporal-client.js';

export interface ClusterRevisions {
  revisions: Revision[];
  /** The revision serving now, or that served last. */
  current?: number;
}

export async function readRevisions(input: { cluster: string }): Promise<ClusterRevisions> {
  return readClusterRevisions(client(), input.cluster);
}

/**
 * The running cluster workflow's revisions, else those its last run ended with (down, handed over): one reader for
 * the deploy's activity and the CLI, each with its own client.
 */
export async function readClusterRevisions(temporal: Client, cluster: string): Promise<ClusterRevisions> {
  const handle = temporal.workflow.getHandle(clusterWorkflowId(cluster));
  const status = await handle.describe().then(
    (d) => d.status.name,
    (err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    },
  );
  if (status === undefined) return { revisions: [] };
  if (status === 'RUNNING') {
    try {
      const revisions = await handle.query(revisionsQuery);
      return withCurrent(revisions);
    } catch (err) {
      // Ended between the two calls: its result is the record.
      if ((await handle.describe()).status.name === 'RUNNING') throw err;
    }
  }
  const record = (await handle.result().catch(() => undefined)) as ClusterRecord | undefined;
  const revisions = record?.revisions ?? [];
  return withCurrent(revisions);
}

/** The revisions with the one serving now, or that served last. */
export function withCurrent(revisions: Revision[]): ClusterRevisions {
  const current = currentRevisionOf(revisions);
  return current === undefined ? { revisions } : { revisions, current };
}

/** The revision's number; the cluster's workflow must run (the deploy holds its hosts). */
export async function recordRevision(input: {
  cluster: string;
  revision: RevisionToRecord;
}): Promise<number> {
  return client()
    .workflow.getHandle(clusterWorkflowId(input.cluster))
    .executeUpdate(recordRevisionUpdate, {
      args: [input.revision],
      // A retry after the update went through is answered with the first one's number by the server itself (the
      // record's rule, recordRevision, also keeps one revision per launch and kind, across a continue-as-new).
      updateId: `revision:${input.revision.launchId}:${input.revision.bad === undefined ? 'good' : 'bad'}`,
    });
}

/** False when the cluster's workflow no longer runs (taken down, handed over): nothing to mark. */
export async function markRevisionBad(input: {
  cluster: string;
  number: number;
  reason: string;
}): Promise<boolean> {
  try {
    await client()
      .workflow.getHandle(clusterWorkflowId(input.cluster))
      .executeUpdate(markRevisionBadUpdate, { args: [{ number: input.number, reason: input.reason }] });
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || !(await isRunning(clusterWorkflowId(input.cluster))))
      return false;
    throw err;
  }
}
