// How the rest of liftoff talks to a cluster's own workflow (src/workflows/cluster.ts): its id, its record, and the messages
// that change it. No workflow code here, so the deploy, the supervisor, the down workflow, activities and the CLI
// all import it without importing each other.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DeployTriggerName } from './failures.js';
import type { Revision } from './revisions.js';

export const clusterWorkflowType = 'cluster';

/**
 * One run of it per tenure: from the first deploy that holds the hosts to `down` or a handover. The colon keeps
 * it apart from every deploy's id (a cluster name has none).
 */
export function clusterWorkflowId(cluster: string): string {
  return `liftoff-cluster:${cluster}`;
}

export type ClusterState =
  'deploying' | 'serving' | 'lost' | 'relaunching' | 'degraded' | 'failed' | 'handed over' | 'down';

/** A host as the cluster holds it: by the id the host itself reports, since addresses differ between specs. */
export interface HeldHost {
  name: string;
  address: string;
  /** /etc/machine-id, 32 hex digits. */
  machineId: string;
}

export interface DeployRecord {
  workflowId: string;
  trigger: DeployTriggerName;
  outcome: 'running' | 'succeeded' | 'failed' | 'cancelled';
  startedAtMs: number;
  endedAtMs?: number;
  error?: string;
}

/** What `liftoff status` shows of a cluster without asking a worker: the memo of its workflow. */
export interface ClusterRecord {
  cluster: string;
  state: ClusterState;
  /** Why it is degraded, failed, handed over or down. */
  reason?: string;
  hosts: HeldHost[];
  heldSinceMs: number;
  model?: string;
  endpoint?: string;
  /** When the last launch started serving: uptime counts from here. */
  servingSinceMs?: number;
  lastDeploy?: DeployRecord;
  /**
   * Containers the cluster runs, by host name: the names its spec gives them. Whoever takes the hosts over removes
   * them (and every container labelled with the cluster), whatever its own spec names.
   */
  containers: Record<string, string[]>;
  /** The supervisor's wait before its next relaunch, were the cluster lost now. */
  nextBackoffMs?: number;
  handedOver?: { to: string; by: string; atMs: number };
  endedAtMs?: number;
  /** The number of the revision serving now (or last served), when the cluster has one. */
  revision?: number;
  /** The last this many revisions (src/shared/revisions.ts), oldest first; kept out of the memo. */
  revisions?: Revision[];
  /** The last rollback, automatic or asked for: what failed, what it restores, and how it went. */
  lastRollback?: RollbackRecord;
}

export interface RollbackRecord {
  /** The revision that failed (absent for a rollback a person asked for with no failure behind it). */
  bad?: number;
  /** The revision it deploys again. */
  restores: number;
  cause: string;
  atMs: number;
  outcome: 'running' | 'serving' | 'failed';
  /** The revision the rollback recorded once it served. */
  revision?: number;
  error?: string;
}

export interface HoldInput {
  hosts: HeldHost[];
  /** The deploy's spec (secrets only as references): `down` reaches the hosts with it. */
  spec: unknown;
  model: string;
  containers: Record<string, string[]>;
  deploy: Pick<DeployRecord, 'workflowId' | 'trigger' | 'startedAtMs'>;
  /** Set by a rollback's deploy: what it restores and why. */
  rollback?: Omit<RollbackRecord, 'atMs' | 'outcome' | 'revision' | 'error'>;
}

/** A revision to record: the cluster's workflow numbers it. `bad`: the deploy failed, with why. */
export type RevisionToRecord = Omit<Revision, 'number' | 'status'> & { bad?: string };

export interface DeployEnded {
  workflowId: string;
  outcome: 'succeeded' | 'failed' | 'cancelled';
  error?: string;
  endpoint?: string;
}

export interface SupervisionChange {
  state: Extract<ClusterState, 'serving' | 'lost' | 'relaunching' | 'degraded'>;
  reason?: string;
  servingSinceMs?: number;
  nextBackoffMs?: number;
}

/** The record with the spec the hosts are reached with: what `down` and a handover need. */
export interface HeldCluster {
  record: ClusterRecord;
  spec: unknown;
}

export const holdUpdate = defineUpdate<HeldCluster, [HoldInput]>('hold');
/** Another cluster's deploy takes the hosts: this one stops supervising and ends, handing back what it ran. */
export const handOverUpdate = defineUpdate<HeldCluster, [{ to: string; by: string }]>('handOver');
/** `liftoff down` is done with the hosts: the cluster ends as down. */
export const releaseUpdate = defineUpdate<ClusterRecord, [{ by: string }]>('release');
export const deployEndedSignal = defineSignal<[DeployEnded]>('deployEnded');
export const supervisionChangedSignal = defineSignal<[SupervisionChange]>('supervisionChanged');
export const clusterQuery = defineQuery<HeldCluster>('cluster');
/** Records a deploy's revision; returns its number. The previous serving one becomes replaced, unless it is bad. */
export const recordRevisionUpdate = defineUpdate<number, [RevisionToRecord]>('recordRevision');
/** The bake window failed: the revision is bad, with why. */
export const markRevisionBadUpdate = defineUpdate<void, [{ number: number; reason: string }]>(
  'markRevisionBad',
);
/** The revisions kept, oldest first. */
export const revisionsQuery = defineQuery<Revision[]>('revisions');
