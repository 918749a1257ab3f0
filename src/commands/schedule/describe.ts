// `liftoff schedule describe ID|CLUSTER`: what a schedule deploys (the stored spec, secrets hidden), when it runs
// next, and how its recent runs ended, as each run's workflow records it.
import { Command } from 'commander';
import type { Client } from '@temporalio/client';
import type { DeploySpec } from '../../config/schema.js';
import { formatDuration } from '../../config/duration.js';
import { table } from '../../cli/render.js';
import { printReport } from '../print-report.js';
import {
  findSchedule,
  formatInZone,
  redactSpec,
  scheduledRun,
  scheduleSummary,
  specSummary,
  storedSpec,
  type ScheduledRun,
  type ScheduleSummary,
} from './common.js';

export interface ScheduleDetails extends ScheduleSummary {
  overlap: string;
  catchupWindowMs: number;
  /** Prefix of each run's workflow id (Temporal appends the scheduled time). */
  workflowIdPrefix?: string;
  taskQueue: string;
  /** The stored spec with secret values replaced. */
  spec?: DeploySpec;
  /** ISO times of the next runs (empty while paused). */
  nextRuns: string[];
  /** Newest first. */
  recentRuns: ScheduledRun[];
  actionsTaken: number;
  /** Fires skipped because the schedule's previous run was still going (overlap policy SKIP). */
  skippedOverlap: number;
  /** Fires skipped because Temporal was unavailable for longer than the catch-up window. */
  missedCatchupWindow: number;
  createdAt: string;
}

export function renderDetails(d: ScheduleDetails): string {
  const zone = d.timezone;
  const lines = [
    `schedule ${d.scheduleId} (cluster ${d.cluster}): ${JSON.stringify(d.cron)} in ${zone}, ${d.paused ? 'PAUSED' : 'active'}${d.note ? ` — ${d.note}` : ''}`,
    `overlap ${d.overlap}, catch-up window ${formatDuration(d.catchupWindowMs)}; runs start ${d.workflowIdPrefix ?? '?'}-<time> on task queue ${d.taskQueue}`,
    `taken ${d.actionsTaken} run${d.actionsTaken === 1 ? '' : 's'}; skipped ${d.skippedOverlap} (a scheduled run was still going), ${d.missedCatchupWindow} (Temporal unavailable past the window)`,
    'spec:',
    ...(d.spec ? specSummary(d.spec).map((l) => `  ${l}`) : ['  (no spec stored)']),
    'next runs:',
    ...(d.paused
      ? ['  none while paused']
      : d.nextRuns.length > 0
        ? d.nextRuns.slice(0, 5).map((t) => `  ${formatInZone(t, zone)}  (${t})`)
        : ['  none: the cron matches no future time']),
    'recent runs:',
  ];
  if (d.recentRuns.length === 0) lines.push('  none yet');
  else
    lines.push(
      ...table([
        ['STARTED', 'WORKFLOW', 'OUTCOME'],
        ...d.recentRuns.map((r) => [
          formatInZone(r.startedAt, zone),
          r.workflowId,
          `${r.outcome}${r.message ? `: ${r.message}` : ''}`,
        ]),
      ])
        .split('\n')
        .map((l) => `  ${l}`),
    );
  return lines.join('\n');
}

async function describeSchedule(client: Client, ref: string): Promise<ScheduleDetails> {
  const { description, memo } = await findSchedule(client, ref);
  const spec = storedSpec(description);
  return {
    ...scheduleSummary(description, memo),
    overlap: description.policies.overlap ?? 'UNSPECIFIED',
    catchupWindowMs: description.policies.catchupWindow,
    workflowIdPrefix: description.action.workflowId,
    taskQueue: description.action.taskQueue,
    spec: spec ? redactSpec(spec) : undefined,
    nextRuns: description.state.paused ? [] : description.info.nextActionTimes.map((t) => t.toISOString()),
    recentRuns: await Promise.all(
      [...description.info.recentActions].reverse().map((a) => scheduledRun(client, a)),
    ),
    actionsTaken: description.info.numActionsTaken,
    skippedOverlap: description.info.numActionsSkippedOverlap,
    missedCatchupWindow: description.info.numActionsMissedCatchupWindow,
    createdAt: description.info.createdAt.toISOString(),
  };
}

export const scheduleDescribeCommand = new Command('describe')
  .description("show a schedule: its spec (no secrets), the next runs and its recent runs' outcomes")
  .argument('<schedule>', 'schedule id, or cluster name')
  .option('--json', 'print the schedule as JSON')
  .action(printReport(describeSchedule, renderDetails));
