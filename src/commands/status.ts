// `liftoff status CLUSTER`: the latest deploy of a cluster: state, steps with timings, load progress, result.
import { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { progressQuery } from '../workflows/deploy.js';
import {
  companionDuration,
  type CompanionProgress,
  type DeployProgress,
  type DeployResult,
} from '../workflows/steps.js';
import { formatDuration } from '../config/duration.js';
import { table } from '../cli/render.js';
import { printReport } from './print-report.js';
import { fleetStatus, renderFleet } from './fleet-status.js';
import type { OutputOptions } from '../cli/render.js';
import { describeClusterDeploy } from '../cli/deploy-status.js';
import { loadLine } from '../cli/follow.js';
import { describeSupervision, renderSupervision, type SupervisionReport } from './supervise/common.js';
import { listNotifications, renderNotifications, type NotificationsReport } from './notifications.js';
import { clusterWorkflowId, type ClusterRecord, type RollbackRecord } from '../shared/cluster-api.js';

export interface StatusReport {
  cluster: string;
  workflowId: string;
  runId: string;
  status: string;
  startTime: string;
  closeTime?: string;
  progress?: DeployProgress;
  result?: DeployResult;
  /** The cluster's supervisor, when one ever ran: serving, lost, relaunching, degraded or stopped. */
  supervision?: SupervisionReport;
  /** The cluster's recent webhook notifications: the ones that failed, with why. */
  notifications?: NotificationsReport;
  /** The revision serving (or last served), and the last rollback: what failed, why, and what came back. */
  revision?: RevisionStatus;
}

export interface RevisionStatus {
  current?: number;
  lastRollback?: RollbackRecord;
}

export function renderRevision(r: RevisionStatus): string[] {
  const lines = r.current !== undefined ? [`revision: ${r.current} (liftoff revisions for the others)`] : [];
  const rb = r.lastRollback;
  if (rb) {
    const failed =
      rb.bad !== undefined ? `revision ${rb.bad} failed: ${rb.cause.split('\n')[0] ?? ''}; ` : '';
    const outcome =
      rb.outcome === 'serving'
        ? `serving again${rb.revision !== undefined ? ` as revision ${rb.revision}` : ''}`
        : rb.outcome === 'failed'
          ? `the rollback failed too: ${(rb.error ?? '').split('\n')[0] ?? ''}`
          : 'running';
    lines.push(`rollback: ${failed}rolled back to revision ${rb.restores}, ${outcome}`);
  }
  return lines;
}

/** The companions under their step, a row each: `  embeddings@spark1`, its status, time so far, its detail. */
function companionRows(companions: readonly CompanionProgress[]): string[][] {
  const now = Date.now();
  return companions.map((c) => {
    const ms = companionDuration(c, now);
    return [
      `  ${c.name}@${c.host}`,
      c.status,
      ms !== undefined ? formatDuration(ms) : '',
      (c.detail ?? '').split('\n')[0]?.slice(0, 200) ?? '',
    ];
  });
}

export function renderStatus(r: StatusReport): string {
  const lines = [
    `${r.workflowId} (run ${r.runId}): ${r.status}, started ${r.startTime}${r.closeTime ? `, closed ${r.closeTime}` : ''}`,
  ];
  if (r.progress) {
    lines.push(
      table([
        ['STEP', 'STATUS', 'DURATION', 'DETAIL'],
        ...r.progress.steps.flatMap((s) => [
          [
            s.name,
            s.status,
            s.durationMs !== undefined ? formatDuration(s.durationMs) : '',
            (s.error ?? s.detail ?? '').split('\n')[0] ?? '',
          ],
          ...(s.name === 'startCompanions' ? companionRows(r.progress?.companions ?? []) : []),
        ]),
      ]),
    );
    if (r.progress.load) lines.push(`load: ${loadLine(r.progress.load)}`);
    // As the deploy left them; under supervision, the supervisor's part shows them as its rounds see them.
    if (r.progress.companions?.length && !r.supervision?.state?.companions) {
      lines.push('companions (as the deploy started them):');
      for (const c of r.progress.companions)
        lines.push(
          `  ${c.name} on ${c.host}: ${c.status}${c.detail ? ` (${c.detail.split('\n')[0] ?? ''})` : ''}`,
        );
    }
  } else {
    lines.push('(progress unavailable: no worker answered the query)');
  }
  if (r.result)
    lines.push(
      `endpoint: ${r.result.endpoint}  model: ${r.result.model}  load: ${formatDuration(r.result.loadSeconds * 1000)}`,
    );
  if (r.revision) lines.push(...renderRevision(r.revision));
  if (r.supervision) lines.push(renderSupervision(r.supervision, Date.now()));
  if (r.notifications) lines.push(renderNotifications(r.notifications));
  return lines.join('\n');
}

export async function clusterStatus(client: Client, cluster: string): Promise<StatusReport> {
  const { workflowId, handle, described } = await describeClusterDeploy(client, cluster);
  const progress = await handle.query(progressQuery).catch(() => undefined);
  const result =
    described.status.name === 'COMPLETED' ? ((await handle.result()) as DeployResult) : undefined;
  const supervision = await describeSupervision(client, cluster);
  const notifications = await listNotifications(client, cluster);
  const revision = await revisionStatus(client, cluster);
  return {
    cluster,
    workflowId,
    runId: described.runId,
    status: described.status.name,
    startTime: described.startTime.toISOString(),
    closeTime: described.closeTime?.toISOString(),
    progress,
    result,
    ...(supervision ? { supervision: supervision.report } : {}),
    ...(notifications ? { notifications } : {}),
    ...(revision ? { revision } : {}),
  };
}

/** From the memo of the cluster's latest workflow run: no worker needed. */
async function revisionStatus(client: Client, cluster: string): Promise<RevisionStatus | undefined> {
  const described = await client.workflow
    .getHandle(clusterWorkflowId(cluster))
    .describe()
    .catch(() => undefined);
  const memo = described?.memo as { record?: ClusterRecord } | undefined;
  const record = memo?.record;
  if (!record || (record.revision === undefined && !record.lastRollback)) return undefined;
  return {
    ...(record.revision !== undefined ? { current: record.revision } : {}),
    ...(record.lastRollback ? { lastRollback: record.lastRollback } : {}),
  };
}

const oneCluster = printReport(clusterStatus, renderStatus);
const everyCluster = printReport(fleetStatus, renderFleet);

export const statusCommand = new Command('status')
  .description(
    "show a cluster's latest deploy (state, steps, load progress), or without a cluster, every cluster a line each",
  )
  .argument('[cluster]', 'cluster name from the spec; none: every cluster')
  .option('--json', 'print the status as JSON')
  .action((cluster: string | undefined, opts: OutputOptions) =>
    cluster === undefined ? everyCluster('', opts) : oneCluster(cluster, opts),
  );
