// `liftoff schedule create -c FILE --cron EXPR`: a Temporal Schedule that starts the deploy workflow with the
// spec it stores. Each scheduled run starts the real deploy as a child under `liftoff-<cluster>`, so it obeys
// the one-deploy-per-cluster rule: refused while another deploy of the cluster runs.
import { Command } from 'commander';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import { loadSpecFile } from '../../config/load.js';
import { deploySpecSchema } from '../../config/schema.js';
import { parseDuration, formatDuration } from '../../config/duration.js';
import { TASK_QUEUE, deployStartAttributes, deployWorkflowId } from '../../shared/constants.js';
import { deploy } from '../../workflows/index.js';
import { emit } from '../../cli/render.js';
import { runCommand, UsageError } from '../../cli/run-command.js';
import { withClient } from '../../temporal/connection.js';
import { cronProblem, timezoneProblem } from './cron.js';
import {
  formatInZone,
  scheduleIdFor,
  scheduledWorkflowIdFor,
  type ScheduleMemo,
  type ScheduleSummary,
} from './common.js';

export interface ScheduleCreated extends Omit<ScheduleSummary, 'note'> {
  overlap: 'SKIP';
  catchupWindowMs: number;
  /** Prefix of each run's workflow id (Temporal appends the scheduled time). */
  workflowIdPrefix: string;
  /** The id the deploy itself runs under, as each run's child. */
  deployWorkflowId: string;
  nextRuns: string[];
}

function renderCreated(r: ScheduleCreated): string {
  const next = r.nextRuns.slice(0, 3).map((t) => formatInZone(t, r.timezone));
  return [
    `created schedule ${r.scheduleId} for cluster ${r.cluster}: ${JSON.stringify(r.cron)} (${r.timezone})${r.paused ? ', paused' : ''}`,
    `overlap SKIP; a run more than ${formatDuration(r.catchupWindowMs)} late (Temporal down) is skipped`,
    `runs start workflow ${r.workflowIdPrefix}-<time>, which deploys as ${r.deployWorkflowId}`,
    r.paused
      ? `paused: no run starts until \`liftoff schedule unpause ${r.scheduleId}\``
      : next.length > 0
        ? `next runs: ${next.join(', ')}`
        : 'warning: this cron never matches a future time; no run will start',
  ].join('\n');
}

/** Temporal's default (one year) would let a deploy start hours late, into a cluster people are using. */
const defaultCatchupWindow = '10m';

export const scheduleCreateCommand = new Command('create')
  .description('deploy a cluster on a timetable: a Temporal Schedule that stores the spec')
  .requiredOption('-c, --config <file>', 'cluster spec (YAML), validated like `liftoff deploy`')
  .requiredOption('--cron <expression>', 'when to deploy, e.g. "0 4 * * *" (minute hour day month weekday)')
  .option('--timezone <zone>', 'IANA time zone the cron is read in', 'UTC')
  .option('--id <scheduleId>', 'schedule id (default: liftoff-<cluster>)')
  .option('--paused', 'create it paused')
  .option('--note <text>', 'note shown with the schedule')
  .option(
    '--catchup-window <duration>',
    'how late a run may still start after Temporal was down',
    defaultCatchupWindow,
  )
  .option(
    '--allow-bad',
    'deploy the spec even when the cluster recorded it as a bad revision (by default a scheduled run refuses it)',
  )
  .option('--json', 'print the schedule as JSON')
  .action(
    (opts: {
      config: string;
      cron: string;
      timezone: string;
      id?: string;
      paused?: boolean;
      note?: string;
      catchupWindow: string;
      allowBad?: boolean;
      json?: boolean;
    }) =>
      runCommand(opts, async () => {
        const spec = loadSpecFile(deploySpecSchema, opts.config);
        const cron = opts.cron.trim();
        const badCron = cronProblem(cron);
        if (badCron) throw new UsageError(`--cron ${JSON.stringify(opts.cron)} ${badCron}`);
        const badZone = timezoneProblem(opts.timezone);
        if (badZone) throw new UsageError(`--timezone ${badZone}`);
        const catchupWindowMs = parseDuration(opts.catchupWindow);
        if (catchupWindowMs === undefined || catchupWindowMs < 10_000)
          throw new UsageError(
            `--catchup-window ${JSON.stringify(opts.catchupWindow)} is not a duration of at least 10s (e.g. "10m")`,
          );
        const scheduleId = opts.id ?? scheduleIdFor(spec.cluster);
        const workflowIdPrefix = scheduledWorkflowIdFor(spec.cluster);
        const memo: ScheduleMemo = { cluster: spec.cluster, cron, timezone: opts.timezone };

        const created = await withClient(async (client) => {
          const handle = await client.schedule
            .create({
              scheduleId,
              spec: { cronExpressions: [cron], timezone: opts.timezone },
              action: {
                type: 'startWorkflow',
                workflowType: deploy,
                workflowId: workflowIdPrefix,
                taskQueue: TASK_QUEUE,
                args: [spec, { trigger: 'schedule', ...(opts.allowBad ? { allowBadRevision: true } : {}) }],
                typedSearchAttributes: deployStartAttributes(spec.cluster, 'schedule'),
              },
              policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: catchupWindowMs },
              memo: { ...memo },
              state: { paused: opts.paused ?? false, note: opts.note },
            })
            .catch((err: unknown) => {
              if (err instanceof ScheduleAlreadyRunning)
                throw new UsageError(
                  `schedule ${scheduleId} already exists; delete it first (\`liftoff schedule delete ${scheduleId}\`) or choose another --id`,
                );
              // The server's own check of the cron and time zone (the SDK raises it as a TypeError).
              if (err instanceof TypeError)
                throw new UsageError(`--cron/--timezone rejected by Temporal: ${err.message}`);
              throw err;
            });
          return handle.describe();
        });

        const report: ScheduleCreated = {
          scheduleId,
          ...memo,
          paused: created.state.paused,
          overlap: 'SKIP',
          catchupWindowMs: created.policies.catchupWindow,
          workflowIdPrefix,
          deployWorkflowId: deployWorkflowId(spec.cluster),
          nextRuns: created.info.nextActionTimes.map((t) => t.toISOString()),
        };
        emit(opts, report, renderCreated);
      }),
  );
