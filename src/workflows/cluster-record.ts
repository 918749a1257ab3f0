// The rules of a cluster's record, pure: what each message does to it. cluster.ts does the waiting and the
// messaging; these are tested without a server.
import type { ClusterRecord, DeployEnded, HoldInput, SupervisionChange } from '../shared/cluster-api.js';

export function newRecord(cluster: string, nowMs: number): ClusterRecord {
  return { cluster, state: 'deploying', hosts: [], heldSinceMs: nowMs, containers: {} };
}

export function hold(record: ClusterRecord, input: HoldInput, nowMs: number): void {
  const firstHold = record.hosts.length === 0;
  Object.assign(record, {
    state: 'deploying',
    hosts: input.hosts,
    model: input.model,
    // The names this deploy's spec gives; what an earlier one ran under other names carries the cluster's label.
    containers: input.containers,
    lastDeploy: { ...input.deploy, outcome: 'running' },
  });
  if (firstHold) record.heldSinceMs = nowMs;
  delete record.reason;
}

export function deployEnded(record: ClusterRecord, ended: DeployEnded, nowMs: number): void {
  const last = record.lastDeploy;
  if (!last || last.workflowId !== ended.workflowId || last.outcome !== 'running') return;
  Object.assign(last, { outcome: ended.outcome, endedAtMs: nowMs });
  if (ended.error !== undefined) last.error = ended.error;
  if (ended.outcome === 'succeeded') {
    Object.assign(record, { state: 'serving', endpoint: ended.endpoint, servingSinceMs: nowMs });
    delete record.reason;
  } else if (record.state === 'deploying') {
    // A failed deploy keeps the hosts it took: nothing else relaunches into them half torn down.
    record.state = 'failed';
    record.reason = ended.error ?? ended.outcome;
  }
}

export function supervisionChanged(record: ClusterRecord, change: SupervisionChange): void {
  // A relaunch is a deploy of this cluster too: its `hold` says deploying, the supervisor says relaunching.
  record.state = change.state;
  if (change.reason !== undefined) record.reason = change.reason;
  else delete record.reason;
  if (change.servingSinceMs !== undefined) record.servingSinceMs = change.servingSinceMs;
  if (change.nextBackoffMs !== undefined) record.nextBackoffMs = change.nextBackoffMs;
}

export function handedOver(record: ClusterRecord, to: string, by: string, nowMs: number): void {
  Object.assign(record, {
    state: 'handed over',
    reason: `handed over to ${to} by ${by}`,
    handedOver: { to, by, atMs: nowMs },
    endedAtMs: nowMs,
  });
}

export function released(record: ClusterRecord, by: string, nowMs: number): void {
  Object.assign(record, { state: 'down', reason: `taken down by ${by}`, endedAtMs: nowMs });
}
