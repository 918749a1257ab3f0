// `liftoff supervise stop CLUSTER`: ends the cluster's supervisor and leaves the cluster as it is. A relaunch in
// progress is cancelled with it (the relaunch deploy tears down what it started).
import { Command } from 'commander';
import { WorkflowFailedError } from '@temporalio/client';
import { withClient } from '../../temporal/connection.js';
import { emit } from '../../cli/render.js';
import { runCommand, UsageError } from '../../cli/run-command.js';
import { stopSupervisionSignal } from '../../workflows/supervise-api.js';
import { describeSupervision, renderSupervision, type SupervisionReport } from './common.js';

export const superviseStopCommand = new Command('stop')
  .description('stop supervising a cluster (the cluster keeps serving as it is)')
  .argument('<cluster>', 'cluster name from the spec')
  .option('--json', 'print the supervisor as it ended, as JSON')
  .action((cluster: string, opts: { json?: boolean }) =>
    runCommand(opts, () =>
      withClient(async (client) => {
        const found = await describeSupervision(client, cluster);
        if (!found || found.report.runStatus !== 'RUNNING') {
          throw new UsageError(
            `no supervisor of ${cluster} is running${found ? ` (${found.report.workflowId} is ${found.report.runStatus})` : ''}`,
          );
        }
        await found.handle.signal(stopSupervisionSignal, { reason: 'stopped by liftoff supervise stop' });
        await found.handle.result().catch((err: unknown) => {
          if (!(err instanceof WorkflowFailedError)) throw err;
        });
        const after = (await describeSupervision(client, cluster))?.report ?? found.report;
        emit(opts, after, (r: SupervisionReport) => renderSupervision(r, Date.now()));
      }),
    ),
  );
