// `liftoff schedule delete ID|CLUSTER`: removes the schedule (and the spec it stored). A run it started that is
// still going carries on: say so, and how to stop it.
import { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { printReport } from '../print-report.js';
import { findSchedule } from './common.js';

export interface ScheduleDeleteReport {
  scheduleId: string;
  cluster: string;
  deleted: true;
  /** Workflow ids of runs it started that are still going. */
  stillRunning: string[];
}

function renderDelete(r: ScheduleDeleteReport): string {
  const lines = [`deleted schedule ${r.scheduleId} (cluster ${r.cluster})`];
  if (r.stillRunning.length > 0)
    lines.push(
      `still running: ${r.stillRunning.join(', ')}; stop the deploy with: liftoff cancel ${r.cluster}`,
    );
  return lines.join('\n');
}

async function deleteSchedule(client: Client, ref: string): Promise<ScheduleDeleteReport> {
  const { handle, description, memo } = await findSchedule(client, ref);
  await handle.delete();
  return {
    scheduleId: handle.scheduleId,
    cluster: memo.cluster,
    deleted: true,
    stillRunning: description.info.runningActions.map((a) => a.workflow.workflowId),
  };
}

export const scheduleDeleteCommand = new Command('delete')
  .description('delete a schedule; a run it started that is still going is not stopped')
  .argument('<schedule>', 'schedule id, or cluster name')
  .option('--json', 'print the outcome as JSON')
  .action(printReport(deleteSchedule, renderDelete));
