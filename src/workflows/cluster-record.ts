// The rules of a cluster's record, pure: what each message does to it. cluster.ts does the waiting and the
// messaging; these are tested without a server.
import type {
  ClusterRecord,
  DeployEnded,
  HoldInput,
  RevisionToRecord,
  SupervisionChange,
} from '../shared/cluster-api.js';
import { revisionsKept, type Revision } from '../shared/revisions.js';

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
  if (input.rollback) record.lastRollback = { ...input.rollback, atMs: nowMs, outcome: 'running' };
}

export function deployEnded(record: ClusterRecord, ended: DeployEnded, nowMs: number): void {
  const last = record.lastDeploy;
  if (!last || last.workflowId !== ended.workflowId || last.outcome !== 'running') return;
  Object.assign(last, { outcome: ended.outcome, endedAtMs: nowMs });
  if (ended.error !== undefined) last.error = ended.error;
  const rollback = last.trigger === 'rollback' ? record.lastRollback : undefined;
  if (rollback?.outcome === 'running') {
    rollback.outcome = ended.outcome === 'succeeded' ? 'serving' : 'failed';
    if (ended.error !== undefined) rollback.error = ended.error;
  }
  if (ended.outcome === 'succeeded') {
    Object.assign(record, { state: 'serving', endpoint: ended.endpoint, servingSinceMs: nowMs });
    delete record.reason;
  } else if (rollback && ended.outcome === 'failed') {
    // The rollback was the last try: nothing relaunches it, and the record says what failed twice.
    record.state = 'degraded';
    record.reason = `rollback to revision ${rollback.restores} failed too: ${ended.error ?? 'failed'}`;
    // Nothing serves: the revision the rollback meant to bring back stays known-good, but no longer serving.
    retireServing(record);
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
  retireServing(record);
}

export function released(record: ClusterRecord, by: string, nowMs: number): void {
  Object.assign(record, { state: 'down', reason: `taken down by ${by}`, endedAtMs: nowMs });
  retireServing(record);
}

/**
 * Numbers and keeps a deploy's revision (the last revisionsKept). A good one is serving from now, and the one that
 * served before is replaced; a bad one leaves the serving revision as it was. The same run's revision again (good
 * or bad alike) is the same recording retried, and gets the number it got the first time: the activity that sends
 * it is retried when its worker dies after the update was applied and before the activity's completion reached
 * the server, and that retry sends a second update of its own.
 */
export function recordRevision(record: ClusterRecord, input: RevisionToRecord, nowMs: number): number {
  const revisions = (record.revisions ??= []);
  const recorded = revisions.find(
    (r) => r.launchId === input.launchId && (r.badReason !== undefined) === (input.bad !== undefined),
  );
  if (recorded) return recorded.number;
  const number = (revisions.at(-1)?.number ?? 0) + 1;
  const { bad, ...fields } = input;
  const revision: Revision = {
    ...fields,
    atMs: nowMs,
    number,
    status: bad === undefined ? 'serving' : 'bad',
  };
  if (bad !== undefined) revision.badReason = bad;
  else {
    retireServing(record);
    record.revision = number;
    if (input.restores !== undefined && record.lastRollback?.outcome === 'running')
      record.lastRollback.revision = number;
  }
  revisions.push(revision);
  revisions.splice(0, Math.max(0, revisions.length - revisionsKept));
  return number;
}

/** The bake window failed: the revision is bad from now, whatever it was. */
export function markRevisionBad(record: ClusterRecord, number: number, reason: string): void {
  const revision = record.revisions?.find((r) => r.number === number);
  if (!revision) return;
  revision.status = 'bad';
  revision.badReason = reason;
}

/** The revision that served no longer does (a new one serves, or the cluster is down or handed over). */
function retireServing(record: ClusterRecord): void {
  for (const r of record.revisions ?? []) if (r.status === 'serving') r.status = 'replaced';
}
