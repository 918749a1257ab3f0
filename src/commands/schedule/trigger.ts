// `liftoff schedule trigger ID|CLUSTER [--wait]`: takes the schedule's action now. The schedule's overlap policy
// applies (SKIP: nothing starts while its previous run is still going), and the run obeys the one-deploy-per-
// cluster rule like any other (refused while a deploy of the cluster runs).
import { Command } from 'commander';
import { ScheduleOverlapPolicy, type Client, type ScheduleExecutionResult } from '@temporalio/client';
import { emit } from '../../cli/render.js';
import { runCommand } from '../../cli/run-command.js';
import { withClient } from '../../temporal/connection.js';
import { ExitCode } from '../../cli/exit-codes.js';
import { findSchedule, scheduledRun, type ScheduledRun } from './common.js';

export interface ScheduleTriggerReport {
  scheduleId: string;
  cluster: string;
  /** `skipped`: the overlap policy kept it from starting, because a run of this schedule is still going. */
  outcome: 'started' | 'skipped';
  /** The run it started; with --wait, as it ended. */
  run?: ScheduledRun;
  /** When skipped: the runs still going. */
  running?: string[];
}

function renderTrigger(r: ScheduleTriggerReport): string {
  if (r.outcome === 'skipped')
    return `schedule ${r.scheduleId}: nothing started (overlap policy SKIP): its run ${(r.running ?? []).join(', ') || '(unknown)'} is still going`;
  const run = r.run;
  if (!run) return `schedule ${r.scheduleId}: started`;
  return [
    `schedule ${r.scheduleId} started ${run.workflowId} (run ${run.runId})`,
    `outcome: ${run.outcome}${run.message ? `: ${run.message}` : ''}`,
    ...(run.outcome === 'running' ? [`follow the deploy with: liftoff status ${r.cluster}`] : []),
  ].join('\n');
}

const actionKey = (a: ScheduleExecutionResult) =>
  `${a.action.workflow.workflowId}/${a.action.workflow.firstExecutionRunId}`;

const triggerTimeoutMs = 30_000;

async function triggerSchedule(client: Client, ref: string, wait: boolean): Promise<ScheduleTriggerReport> {
  const { handle, description, memo } = await findSchedule(client, ref);
  const schedule = { scheduleId: handle.scheduleId, cluster: memo.cluster };
  const seen = new Set(description.info.recentActions.map(actionKey));
  const skippedBefore = description.info.numActionsSkippedOverlap;
  // Without a policy the SDK would trigger with ALLOW_ALL; the schedule's own policy is what a fire obeys.
  await handle.trigger(description.policies.overlap ?? ScheduleOverlapPolicy.SKIP);

  // The schedule acts asynchronously: watch it until the trigger shows up as a run or as a skip.
  const until = Date.now() + triggerTimeoutMs;
  for (;;) {
    const now = await handle.describe();
    const started = now.info.recentActions.find((a) => !seen.has(actionKey(a)));
    if (started) {
      if (wait) {
        await client.workflow
          .getHandle(started.action.workflow.workflowId, started.action.workflow.firstExecutionRunId, {
            followRuns: false,
          })
          .result()
          .catch(() => undefined);
      }
      return { ...schedule, outcome: 'started', run: await scheduledRun(client, started) };
    }
    if (now.info.numActionsSkippedOverlap > skippedBefore) {
      return {
        ...schedule,
        outcome: 'skipped',
        running: now.info.runningActions.map((a) => a.workflow.workflowId),
      };
    }
    if (Date.now() > until)
      throw new Error(
        `schedule ${handle.scheduleId} accepted the trigger but showed no new run or skip within ${triggerTimeoutMs / 1000} s`,
      );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export const scheduleTriggerCommand = new Command('trigger')
  .description("start a schedule's deploy now (overlap policy and the one-deploy-per-cluster rule apply)")
  .argument('<schedule>', 'schedule id, or cluster name')
  .option('--wait', 'wait until the run ends and report its outcome')
  .option('--json', 'print the run as JSON')
  .action((ref: string, opts: { wait?: boolean; json?: boolean }) =>
    runCommand(opts, async () => {
      const report = await withClient((client) => triggerSchedule(client, ref, opts.wait === true));
      emit(opts, report, renderTrigger);
      if (report.outcome === 'skipped') return ExitCode.deployFailed;
      const outcome = report.run?.outcome;
      return outcome === 'running' || outcome === 'succeeded' ? ExitCode.ok : ExitCode.deployFailed;
    }),
  );
