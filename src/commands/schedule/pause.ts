// `liftoff schedule pause ID|CLUSTER [--note TEXT]`: no scheduled run starts until it is unpaused; a run already
// going is not touched (`liftoff cancel CLUSTER` stops a deploy). `liftoff schedule unpause`: scheduled runs start
// again from the next matching time; fires missed while paused are not made up.
import { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { emit } from '../../cli/render.js';
import { runCommand } from '../../cli/run-command.js';
import { withClient } from '../../temporal/connection.js';
import { findSchedule, formatInZone, type ScheduleSummary } from './common.js';

export interface SchedulePauseReport extends Pick<
  ScheduleSummary,
  'scheduleId' | 'cluster' | 'paused' | 'note' | 'timezone'
> {
  /** ISO time of the next run once unpaused. */
  nextRun?: string;
}

export function renderPause(r: SchedulePauseReport): string {
  const head = `schedule ${r.scheduleId} (cluster ${r.cluster}) is ${r.paused ? 'paused' : 'active'}${r.note ? `: ${r.note}` : ''}`;
  if (r.paused) return `${head}\nno run starts until \`liftoff schedule unpause ${r.scheduleId}\``;
  return `${head}\nnext run: ${r.nextRun ? formatInZone(r.nextRun, r.timezone) : 'none (the cron matches no future time)'}`;
}

/** Pauses or unpauses, then reads the schedule back so the report shows what Temporal now holds. */
async function setPaused(
  client: Client,
  ref: string,
  paused: boolean,
  note: string,
): Promise<SchedulePauseReport> {
  const { handle, memo } = await findSchedule(client, ref);
  if (paused) await handle.pause(note);
  else await handle.unpause(note);
  const now = await handle.describe();
  return {
    scheduleId: handle.scheduleId,
    cluster: memo.cluster,
    paused: now.state.paused,
    note: now.state.note || undefined,
    nextRun: now.info.nextActionTimes[0]?.toISOString(),
    timezone: memo.timezone,
  };
}

/** `pause` and `unpause`: one command but for the state it sets. */
function setPausedCommand(paused: boolean): Command {
  const verb = paused ? 'pause' : 'unpause';
  return new Command(verb)
    .description(
      paused
        ? 'pause a schedule: no scheduled run starts until it is unpaused'
        : 'unpause a schedule: runs start again at the next matching time',
    )
    .argument('<schedule>', 'schedule id, or cluster name')
    .option(
      '--note <text>',
      'why (shown by describe and in the Temporal UI)',
      `${verb}d with liftoff schedule ${verb}`,
    )
    .option('--json', 'print the new state as JSON')
    .action((ref: string, opts: { note: string; json?: boolean }) =>
      runCommand(opts, async () => {
        const report = await withClient((client) => setPaused(client, ref, paused, opts.note));
        emit(opts, report, renderPause);
      }),
    );
}

export const schedulePauseCommand = setPausedCommand(true);
export const scheduleUnpauseCommand = setPausedCommand(false);
