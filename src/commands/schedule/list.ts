// `liftoff schedule list`: every liftoff schedule, with its next run and how its last run ended.
import { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { emit, table } from '../../cli/render.js';
import { runCommand } from '../../cli/run-command.js';
import { withClient } from '../../temporal/connection.js';
import {
  describeIfExists,
  formatInZone,
  memoOf,
  scheduledRun,
  scheduleSummary,
  type ScheduledRun,
  type ScheduleSummary,
} from './common.js';

export interface ScheduleListEntry extends ScheduleSummary {
  /** ISO time of the next run; absent when paused or when the cron matches no future time. */
  nextRun?: string;
  lastRun?: ScheduledRun;
}

export function renderList(entries: ScheduleListEntry[]): string {
  if (entries.length === 0) return 'no liftoff schedules (create one with `liftoff schedule create`)';
  return table([
    ['CLUSTER', 'SCHEDULE', 'CRON', 'PAUSED', 'NEXT RUN', 'LAST OUTCOME'],
    ...entries.map((e) => [
      e.cluster,
      e.scheduleId,
      `${e.cron} (${e.timezone})`,
      e.paused ? 'yes' : 'no',
      e.paused ? '-' : e.nextRun ? formatInZone(e.nextRun, e.timezone) : 'never',
      e.lastRun ? `${e.lastRun.outcome} (${formatInZone(e.lastRun.startedAt, e.timezone)})` : '-',
    ]),
  ]);
}

async function listSchedules(client: Client): Promise<ScheduleListEntry[]> {
  const ids: string[] = [];
  for await (const summary of client.schedule.list()) {
    if (memoOf(summary)) ids.push(summary.scheduleId);
  }
  // The listing is eventually consistent; describing each schedule gives its state as of now.
  const entries = await Promise.all(
    ids.map(async (scheduleId): Promise<ScheduleListEntry | undefined> => {
      const description = await describeIfExists(client, scheduleId);
      const memo = description && memoOf(description);
      if (!description || !memo) return undefined;
      const last = description.info.recentActions.at(-1);
      return {
        ...scheduleSummary(description, memo),
        nextRun: description.state.paused ? undefined : description.info.nextActionTimes[0]?.toISOString(),
        lastRun: last ? await scheduledRun(client, last) : undefined,
      };
    }),
  );
  return entries
    .filter((e): e is ScheduleListEntry => e !== undefined)
    .sort((a, b) => a.cluster.localeCompare(b.cluster) || a.scheduleId.localeCompare(b.scheduleId));
}

export const scheduleListCommand = new Command('list')
  .description('list liftoff schedules: cluster, cron, paused, next run, last outcome')
  .option('--json', 'print the schedules as JSON')
  .action((opts: { json?: boolean }) =>
    runCommand(opts, async () => {
      const entries = await withClient(listSchedules);
      emit(opts, entries, renderList);
    }),
  );
