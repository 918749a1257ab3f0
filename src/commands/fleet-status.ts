// `liftoff status` without a cluster: every cluster this namespace knows, a line each, from Temporal's visibility
// alone (no SSH, no worker): the memo each cluster's workflow keeps (src/workflows/cluster.ts), newest run per
// cluster. A cluster deployed before clusters held hosts has no such workflow: its running supervisor or deploy
// stands in for it.
import type { Client } from '@temporalio/client';
import { formatDuration } from '../config/duration.js';
import { table } from '../cli/render.js';
import { clusterWorkflowType, type ClusterRecord } from '../shared/cluster-api.js';
import { searchAttributes } from '../shared/constants.js';

export interface FleetLine {
  cluster: string;
  state: string;
  reason?: string;
  endpoint?: string;
  model?: string;
  hosts: string[];
  /** Since the last launch started serving; absent unless serving (or lost, degraded, relaunching since). */
  servingSinceMs?: number;
  lastDeploy?: { outcome: string; endedAtMs?: number; startedAtMs: number; workflowId: string };
  nextBackoffMs?: number;
  /** The revision serving (or last served); `rolledBack` when the last rollback restored it. */
  revision?: number;
  rolledBack?: { from?: number; to: number; outcome: string };
  workflowId: string;
}

export interface FleetReport {
  atMs: number;
  clusters: FleetLine[];
}

/** A cluster's record as the memo of its workflow's newest run keeps it. */
export interface FleetRecord {
  record: ClusterRecord;
  workflowId: string;
  startMs: number;
}

/** Every cluster's record, from the memo of its workflow's newest run (visibility alone: no worker needed). */
export async function fleetRecords(client: Client): Promise<FleetRecord[]> {
  const newest = new Map<string, FleetRecord>();
  for await (const wf of client.workflow.list({ query: `WorkflowType = '${clusterWorkflowType}'` })) {
    const record = wf.memo?.record as ClusterRecord | undefined;
    if (!record) continue;
    const startMs = wf.startTime.getTime();
    const seen = newest.get(record.cluster);
    if (!seen || seen.startMs < startMs)
      newest.set(record.cluster, { record, workflowId: wf.workflowId, startMs });
  }
  return [...newest.values()];
}

export async function fleetStatus(client: Client): Promise<FleetReport> {
  const newest = new Map<string, { startMs: number; line: FleetLine }>();
  for (const { record, workflowId, startMs } of await fleetRecords(client))
    newest.set(record.cluster, { startMs, line: lineOf(record, workflowId) });
  // Clusters that only a supervisor or a deploy started before the upgrade stand for.
  const legacy = `WorkflowType IN ('supervise', 'deploy') AND ExecutionStatus = 'Running'`;
  for await (const wf of client.workflow.list({ query: legacy })) {
    const cluster = wf.searchAttributes?.[searchAttributes.cluster.name]?.[0];
    if (typeof cluster !== 'string' || newest.has(cluster)) continue;
    const state = wf.type === 'supervise' ? 'serving' : 'deploying';
    newest.set(cluster, {
      startMs: wf.startTime.getTime(),
      line: {
        cluster,
        state,
        reason: `no record (deployed before clusters held hosts)`,
        hosts: [],
        workflowId: wf.workflowId,
      },
    });
  }
  const clusters = [...newest.values()].map((v) => v.line).sort((a, b) => a.cluster.localeCompare(b.cluster));
  return { atMs: Date.now(), clusters };
}

function lineOf(r: ClusterRecord, workflowId: string): FleetLine {
  return {
    cluster: r.cluster,
    state: r.state,
    ...(r.reason ? { reason: r.reason } : {}),
    ...(r.endpoint ? { endpoint: r.endpoint } : {}),
    ...(r.model ? { model: r.model } : {}),
    hosts: r.hosts.map((h) => h.name),
    ...(r.servingSinceMs !== undefined && isUp(r.state) ? { servingSinceMs: r.servingSinceMs } : {}),
    ...(r.lastDeploy ? { lastDeploy: r.lastDeploy } : {}),
    ...(r.nextBackoffMs !== undefined ? { nextBackoffMs: r.nextBackoffMs } : {}),
    ...(r.revision !== undefined ? { revision: r.revision } : {}),
    ...(r.lastRollback
      ? {
          rolledBack: {
            to: r.lastRollback.restores,
            outcome: r.lastRollback.outcome,
            ...(r.lastRollback.bad !== undefined ? { from: r.lastRollback.bad } : {}),
          },
        }
      : {}),
    workflowId,
  };
}

/** The states in which a cluster has a launch whose endpoint serves (or should). */
export const isUp = (state: string): boolean =>
  ['serving', 'lost', 'relaunching', 'degraded'].includes(state);

export function renderFleet(report: FleetReport): string {
  if (report.clusters.length === 0)
    return 'no cluster is known to this Temporal namespace yet (liftoff deploy -c SPEC)';
  const ago = (ms: number | undefined): string =>
    ms === undefined ? '' : formatDuration(Math.max(0, report.atMs - ms));
  return table([
    ['CLUSTER', 'STATE', 'REV', 'ENDPOINT', 'MODEL', 'HOSTS', 'UPTIME', 'LAST DEPLOY', 'NEXT BACKOFF'],
    ...report.clusters.map((c) => [
      c.cluster,
      c.state,
      revisionCell(c),
      c.endpoint ?? '',
      c.model ?? '',
      c.hosts.join(',') || '-',
      ago(c.servingSinceMs),
      c.lastDeploy
        ? `${c.lastDeploy.outcome} ${ago(c.lastDeploy.endedAtMs ?? c.lastDeploy.startedAtMs)} ago`
        : '',
      c.nextBackoffMs !== undefined ? formatDuration(c.nextBackoffMs) : '',
    ]),
  ]);
}

/** `3`, or `3 (↩ from 4)` while the revision serving is a rollback's. */
function revisionCell(c: FleetLine): string {
  if (c.revision === undefined) return '';
  const rb = c.rolledBack;
  return rb?.from !== undefined && rb.outcome === 'serving'
    ? `${c.revision} (↩ from ${rb.from})`
    : String(c.revision);
}
