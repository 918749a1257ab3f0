// `liftoff schedule delete ID|CLUSTER`: removes the schedule (and the spec it stored). A run it started that is
// still going carries on: say so, and how to stop it.
import { Command } from 'commander';
import { emit } from '../../cli/render.js';
import { runCommand } from '../../cli/run-command.js';
import { findSchedule, withClient } from './common.js';

export interface ScheduleDeleteReport {
  scheduleId: string;
  cluster: string;
  deleted: true;
  /** Workflow ids of runs it started that are still going. */
  stillRunning: string[];
}

export function renderDelete(r: ScheduleDeleteReport): string {
  const lines = [`deleted schedule ${r.scheduleId} (cluster ${r.cluster})`];
  if (r.stillRunning.length > 0)
    lines.push(
      `still running: ${r.stillRunning.join(', ')}; stop the deploy with: liftoff cancel ${r.cluster}`,
    );
  return lines.join('\n');
}

export const scheduleDeleteCommand = new Command('delete')
  .description('delete a schedule; a run it started that is still going is not stopped')
  .argument('<schedule>', 'schedule id, or cluster name')
  .option('--json', 'print the outcome as JSON')
  .action((ref: string, opts: { json?: boolean }) =>
    runCommand(opts, async () => {
      const report = await withClient(async (client): Promise<ScheduleDeleteReport> => {
        const { handle, description, memo } = await findSchedule(client, ref);
        await handle.delete();
        return {
          scheduleId: handle.scheduleId,
          cluster: memo.cluster,
          deleted: true,
          stillRunning: description.info.runningActions.map((a) => a.workflow.workflowId),
        };
      });
      emit(opts, report, renderDelete);
    }),
  );
