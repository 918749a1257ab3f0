// What the `liftoff supervise` commands and `liftoff status` share: a cluster's supervisor read back, its latest
// run and its state, from the query (a worker answers, also for a closed run) or else the memo it leaves.
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time.js';
import { superviseWorkflowId } from '../../shared/constants.js';
import { supervisionQuery, type SuperviseState } from '../../workflows/supervise-api.js';
import { formatDuration } from '../../config/duration.js';
import type { CompanionState } from '../../workflows/supervise-companion-state.js';

export interface SupervisionReport {
  workflowId: string;
  runId: string;
  /** Temporal's status of the latest run: RUNNING, COMPLETED, FAILED, CANCELLED, … */
  runStatus: string;
  state?: SuperviseState;
  /** What the ended run left in its memo, when no worker answered the query. */
  ended?: { status?: string; reason?: string };
  /**
   * The watch running now (supervise.reportEvery): the worker runs the healthy rounds and reports them together,
   * so the state's last probe can be that old. Since when, and its last heartbeat (a sign of life, at most one a
   * minute).
   */
  watch?: { sinceMs: number; lastHeartbeatMs?: number };
}

/** The supervisor's running watch, from the pending activities Temporal describes. */
type PendingActivity = NonNullable<
  Awaited<ReturnType<WorkflowHandle['describe']>>['raw']['pendingActivities']
>[number];

function watchOf(pending: readonly PendingActivity[]): SupervisionReport['watch'] {
  const watch = pending.find((a) => a.activityType?.name === 'watchServingCluster');
  const sinceMs = optionalTsToMs(watch?.lastStartedTime);
  if (sinceMs === undefined) return undefined;
  const lastHeartbeatMs = optionalTsToMs(watch?.lastHeartbeatTime);
  return { sinceMs, ...(lastHeartbeatMs !== undefined ? { lastHeartbeatMs } : {}) };
}

export async function describeSupervision(
  client: Client,
  cluster: string,
): Promise<{ handle: WorkflowHandle; report: SupervisionReport } | undefined> {
  const workflowId = superviseWorkflowId(cluster);
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  });
  if (!described) return undefined;
  const state = await handle.query(supervisionQuery).catch(() => undefined);
  const memo = (described.memo ?? {}) as { supervise?: { status?: string; reason?: string } };
  return {
    handle,
    report: {
      workflowId,
      runId: described.runId,
      runStatus: described.status.name,
      ...(state ? { state } : {}),
      ...(memo.supervise ? { ended: memo.supervise } : {}),
      ...withWatch(watchOf(described.raw.pendingActivities ?? [])),
    },
  };
}

function withWatch(watch: SupervisionReport['watch']): { watch?: SupervisionReport['watch'] } {
  return watch ? { watch } : {};
}

/** The supervision part of `liftoff status`: state, uptime, last probe with latency, relaunches with causes. */
export function renderSupervision(r: SupervisionReport, nowMs: number): string {
  const s = r.state;
  const head = `supervisor ${r.workflowId} (run ${r.runId}, ${r.runStatus})`;
  if (!s) {
    return `${head}: ${r.ended?.status ?? 'state unavailable (no worker answered the query)'}${r.ended?.reason ? `: ${r.ended.reason}` : ''}`;
  }
  const lines = [
    `${head}: ${s.status}${s.reason ? ` (${s.reason.split('\n')[0] ?? ''})` : ''}`,
    `  uptime since last launch: ${formatDuration(Math.max(0, nowMs - s.launch.servingSinceMs))} (launch ${s.launch.launchId})`,
    `  rounds: ${s.rounds}, failed ${s.failedRounds} (${s.consecutiveFailures} in a row), probes ${s.probes}, runs ${s.runs}`,
  ];
  const p = s.lastProbe;
  if (p) {
    const latency = p.checks
      .filter((c) => c.latencyMs !== undefined && (c.name === 'health' || c.name === 'completion'))
      .map((c) => `${c.name} ${formatDuration(c.latencyMs ?? 0)}`)
      .join(', ');
    lines.push(
      `  last probe: ${p.verdict} at ${new Date(p.atMs).toISOString()}${latency ? ` (${latency})` : ''}`,
      ...p.failures.map((f) => `    ✗ ${f}`),
    );
  }
  if (r.watch) {
    const alive =
      r.watch.lastHeartbeatMs !== undefined
        ? `, last heard ${formatDuration(Math.max(0, nowMs - r.watch.lastHeartbeatMs))} ago`
        : '';
    lines.push(
      `  watching: the worker runs the healthy rounds since ${new Date(r.watch.sinceMs).toISOString()} and reports them every supervise.reportEvery, or at once when one fails${alive}`,
    );
  }
  const companions = Object.values(s.companions ?? {});
  if (companions.length > 0) {
    lines.push('  companions:');
    for (const c of companions) lines.push(`    ${companionLine(c, nowMs)}`);
  }
  if (s.relaunches.length > 0) {
    lines.push('  relaunches:');
    for (const x of s.relaunches) {
      lines.push(
        `    #${x.n} ${new Date(x.startedAtMs).toISOString()} ${x.outcome ?? 'running'}: ${x.cause}${x.error ? ` → ${x.error.split('\n')[0] ?? ''}` : ''}`,
      );
    }
  }
  return lines.join('\n');
}

/** One companion: state, endpoint, last probe (its age, and its latency or error), restarts with the last one. */
export function companionLine(c: CompanionState, nowMs: number): string {
  const p = c.lastProbe;
  const probe = !p
    ? 'not probed yet'
    : `${formatDuration(Math.max(0, nowMs - p.atMs))} ago ${p.ok ? `passed${p.latencyMs !== undefined ? ` in ${formatDuration(p.latencyMs)}` : ''}` : `failed: ${(p.error ?? '').split('\n')[0] ?? ''}`}`;
  const last = c.restarts.at(-1);
  const restarts =
    c.restarts.length === 0
      ? 'no restarts'
      : `${c.restarts.length} restart(s), last ${new Date(last?.atMs ?? 0).toISOString()} ${last?.outcome ?? 'running'}${last?.error ? `: ${last.error.split('\n')[0] ?? ''}` : ''}`;
  return `${c.name} on ${c.host}: ${c.status}, ${c.endpoint}, last probe ${probe}, ${restarts}`;
}
