// `liftoff cancel CLUSTER`: stops a running deploy. The workflow tears down what it started (the server, Ray and
// this launch's containers) in a scope that cannot be cancelled, and records what it did; this command waits
// for that and prints it.
import { Command } from 'commander';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { withClient } from '../temporal/connection.js';
import { emit } from '../cli/render.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { ExitCode } from '../cli/exit-codes.js';
import { describeClusterDeploy, describeFailure } from '../cli/deploy-status.js';

export interface CancelReport {
  cluster: string;
  workflowId: string;
  runId: string;
  /** How the deploy ended: CANCELLED normally; COMPLETED or FAILED if it ended before the cancel reached it. */
  outcome: 'CANCELLED' | 'COMPLETED' | 'FAILED' | 'REQUESTED';
  /** The step the cancel interrupted. */
  step?: string;
  /** What teardown did, one line per host. */
  teardown: string[];
  error?: string;
}

export function renderCancel(r: CancelReport): string {
  if (r.outcome === 'REQUESTED')
    return `cancel requested for ${r.workflowId} (run ${r.runId}); see it end with: liftoff status ${r.cluster}`;
  if (r.outcome !== 'CANCELLED')
    return `${r.workflowId} ended ${r.outcome} before the cancel reached it${r.error ? `: ${r.error}` : ''}`;
  return [
    `cancelled ${r.workflowId} (run ${r.runId})${r.step ? ` during ${r.step}` : ''}`,
    'teardown:',
    ...r.teardown.map((line) => `  ${line}`),
  ].join('\n');
}

interface CancelMemo {
  cancelled?: { step?: string; teardown?: string[] };
}

export const cancelCommand = new Command('cancel')
  .description(
    'cancel the running deploy of a cluster; its teardown stops the server and removes its containers',
  )
  .argument('<cluster>', 'cluster name from the spec')
  .option('--no-wait', 'return once the cancel is requested, without waiting for the teardown')
  .option('--json', 'print the outcome as JSON')
  .action((cluster: string, opts: { wait: boolean; json?: boolean }) =>
    runCommand(opts, async () => {
      return withClient(async (client) => {
        const { workflowId, described } = await describeClusterDeploy(client, cluster);
        if (described.status.name !== 'RUNNING') {
          throw new UsageError(
            `the deploy of ${cluster} is not running (workflow ${workflowId} is ${described.status.name}); nothing to cancel`,
          );
        }
        const run = client.workflow.getHandle(workflowId, described.runId);
        await run.cancel();
        const report: CancelReport = {
          cluster,
          workflowId,
          runId: described.runId,
          outcome: 'REQUESTED',
          teardown: [],
        };
        if (!opts.wait) {
          emit(opts, report, renderCancel);
          return ExitCode.ok;
        }
        try {
          await run.result();
          report.outcome = 'COMPLETED';
        } catch (err) {
          if (!(err instanceof WorkflowFailedError)) throw err;
          if (err.cause instanceof CancelledFailure) {
            report.outcome = 'CANCELLED';
            const memo = ((await run.describe()).memo ?? {}) as CancelMemo;
            report.step = memo.cancelled?.step;
            report.teardown = memo.cancelled?.teardown ?? [];
          } else {
            report.outcome = 'FAILED';
            report.error = describeFailure(err).message;
          }
        }
        emit(opts, report, renderCancel);
        return report.outcome === 'CANCELLED' ? ExitCode.ok : ExitCode.deployFailed;
      });
    }),
  );
