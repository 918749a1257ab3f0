// `liftoff cancel CLUSTER`: stops a running deploy. The workflow tears down what it started (the server, Ray and
// this launch's containers) in a scope that cannot be cancelled, and records what it did; this command waits
// for that and prints it. A serving cluster has no deploy to cancel: `liftoff down` is what stops it serving, and
// this says so rather than stopping only its supervisor.
import { Command } from 'commander';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { withClient } from '../temporal/connection.js';
import { emit } from '../cli/render.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { ExitCode } from '../cli/exit-codes.js';
import { describeClusterDeploy, describeFailure } from '../cli/deploy-status.js';
import type { Client } from '@temporalio/client';
import { describeSupervision } from './supervise/common.js';

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
  /** The cluster's supervisor, stopped by this cancel (it leaves a serving cluster as it is). */
  supervisor?: { workflowId: string; runId: string; outcome: string };
}

export function renderCancel(r: CancelReport): string {
  const supervisor = r.supervisor
    ? `supervisor ${r.supervisor.workflowId} (run ${r.supervisor.runId}) ${r.supervisor.outcome.toLowerCase()}`
    : '';
  return [supervisor, renderDeployCancel(r)].filter((text) => text !== '').join('\n');
}

function renderDeployCancel(r: CancelReport): string {
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

export const cancelCommand = new Command('cancel')
  .description(
    'cancel the running deploy of a cluster (its teardown stops the server and removes its containers); to stop a serving cluster, use down',
  )
  .argument('<cluster>', 'cluster name from the spec')
  .option('--no-wait', 'return once the cancel is requested, without waiting for the teardown')
  .option('--json', 'print the outcome as JSON')
  .action((cluster: string, opts: { wait: boolean; json?: boolean }) =>
    runCommand(opts, () =>
      withClient(async (client) => {
        const { workflowId, described } = await describeClusterDeploy(client, cluster);
        if (described.status.name !== 'RUNNING') {
          const supervised = (await describeSupervision(client, cluster))?.report.runStatus === 'RUNNING';
          throw new UsageError(
            `the deploy of ${cluster} is not running (workflow ${workflowId} is ${described.status.name}); nothing to cancel.` +
              (supervised
                ? ` ${cluster} is serving under its supervisor: to stop it serving and free its hosts, run liftoff down ${cluster} (to stop only the supervision: liftoff supervise stop ${cluster})`
                : ` To take what it left running down, run liftoff down ${cluster}`),
          );
        }
        // The supervisor first: cancelled mid-relaunch, it cancels its relaunch deploy too.
        const supervisor = await cancelSupervisor(client, cluster, opts.wait);
        const report: CancelReport = {
          cluster,
          workflowId,
          runId: described.runId,
          outcome: 'REQUESTED',
          teardown: [],
          ...(supervisor ? { supervisor } : {}),
        };
        const run = client.workflow.getHandle(workflowId, described.runId);
        await run.cancel();
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
            const memo = ((await run.describe()).memo ?? {}) as {
              cancelled?: { step?: string; teardown?: string[] };
            };
            report.step = memo.cancelled?.step;
            report.teardown = memo.cancelled?.teardown ?? [];
          } else {
            report.outcome = 'FAILED';
            report.error = describeFailure(err).message;
          }
        }
        emit(opts, report, renderCancel);
        return report.outcome === 'CANCELLED' ? ExitCode.ok : ExitCode.deployFailed;
      }),
    ),
  );

/** Cancels the running supervisor of the cluster, if any, and (unless told not to) waits for it to end. */
async function cancelSupervisor(
  client: Client,
  cluster: string,
  wait: boolean,
): Promise<CancelReport['supervisor']> {
  const found = await describeSupervision(client, cluster);
  if (!found || found.report.runStatus !== 'RUNNING') return undefined;
  const run = client.workflow.getHandle(found.report.workflowId, found.report.runId);
  await run.cancel();
  let outcome = 'REQUESTED';
  if (wait) {
    outcome = await run.result().then(
      () => 'COMPLETED',
      (err: unknown) =>
        err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure ? 'CANCELLED' : 'FAILED',
    );
  }
  return { workflowId: found.report.workflowId, runId: found.report.runId, outcome };
}
