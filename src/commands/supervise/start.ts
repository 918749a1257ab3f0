// `liftoff supervise start CLUSTER [-c FILE]`: supervises a serving cluster by hand (after `--no-supervise`, or
// after `liftoff supervise stop`). The spec is the one the cluster's latest deploy ran with, read from its
// history, unless -c names a file; that deploy must have succeeded.
import { Command } from 'commander';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { Client } from '@temporalio/client';
import { withClient } from '../../temporal/connection.js';
import { loadSpecFile } from '../../config/load.js';
import { deploySpecSchema } from '../../config/schema.js';
import { TASK_QUEUE, superviseWorkflowId } from '../../shared/constants.js';
import { emit } from '../../cli/render.js';
import { runCommand, UsageError } from '../../cli/run-command.js';
import { describeClusterDeploy } from '../../cli/deploy-status.js';
import { supervise } from '../../workflows/index.js';
import type { DeployResult } from '../../workflows/steps.js';
import type { SuperviseInput } from '../../workflows/supervise-api.js';

/** The spec the deploy was started with: the first argument of its first event, decoded as the client would. */
async function deploySpec(client: Client, workflowId: string, runId: string): Promise<unknown> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  return decodeFromPayloadsAtIndex(client.options.loadedDataConverter, 0, payloads, {
    type: 'workflow',
    namespace: client.options.namespace,
    workflowId,
  });
}

export const superviseStartCommand = new Command('start')
  .description('start supervising a cluster that serves (the spec of its latest deploy, or -c FILE)')
  .argument('<cluster>', 'cluster name from the spec')
  .option('-c, --config <file>', 'cluster spec (YAML); default: the spec of the latest deploy')
  .option('--json', 'print the started supervisor as JSON')
  .action((cluster: string, opts: { config?: string; json?: boolean }) =>
    runCommand(opts, () =>
      withClient(async (client) => {
        const { workflowId, handle, described } = await describeClusterDeploy(client, cluster);
        if (described.status.name !== 'COMPLETED') {
          throw new UsageError(
            `the latest deploy of ${cluster} is ${described.status.name}, not serving: supervise a cluster once a deploy succeeded`,
          );
        }
        const spec = opts.config
          ? loadSpecFile(deploySpecSchema, opts.config)
          : deploySpecSchema.parse(await deploySpec(client, workflowId, described.runId));
        if (spec.cluster !== cluster)
          throw new UsageError(`the spec is for cluster ${spec.cluster}, not ${cluster}`);
        const result = (await handle.result()) as DeployResult;
        const input: SuperviseInput = {
          spec,
          launch: {
            launchId: result.launchId,
            servingSinceMs: (described.closeTime ?? described.startTime).getTime(),
            endpoint: result.endpoint,
          },
        };
        const started = await client.workflow
          .start(supervise, {
            taskQueue: TASK_QUEUE,
            workflowId: superviseWorkflowId(cluster),
            args: [input],
            workflowIdConflictPolicy: 'FAIL',
            workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          })
          .catch((err: unknown) => {
            if (err instanceof WorkflowExecutionAlreadyStartedError)
              throw new UsageError(
                `${cluster} is already supervised (${superviseWorkflowId(cluster)} is running)`,
              );
            throw err;
          });
        const report = {
          cluster,
          workflowId: started.workflowId,
          runId: started.firstExecutionRunId,
          launchId: result.launchId,
          specFrom: opts.config ?? `${workflowId} run ${described.runId}`,
        };
        emit(
          opts,
          report,
          (r) => `supervising ${r.cluster}: ${r.workflowId} (run ${r.runId}); spec from ${r.specFrom}`,
        );
      }),
    ),
  );
