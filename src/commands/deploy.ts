// `liftoff deploy -c FILE`: validates locally, starts the deploy workflow (one per cluster), optionally follows it.
import { Command } from 'commander';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { deployAlreadyRunningMessage } from '../shared/failures.js';
import { loadSpecFile } from '../config/load.js';
import { deploySpecSchema } from '../config/schema.js';
import { withClient } from '../temporal/connection.js';
import { startDeploy } from '../temporal/start-deploy.js';
import { runCommand } from '../cli/run-command.js';
import { DeployRefusedError, followDeploy } from '../cli/deploy-run.js';
import { deployWorkflowId } from '../shared/constants.js';

export const deployCommand = new Command('deploy')
  .description('launch the cluster described by a spec, as a durable Temporal workflow')
  .requiredOption('-c, --config <file>', 'cluster spec (YAML)')
  .option('--follow', 'show each step and the load progress until the deploy ends')
  .option('--no-supervise', 'do not start the supervisor after a successful deploy (supervise.enabled)')
  .option(
    '--take-over',
    'take the hosts over from the cluster that holds them: its supervisor ends and this deploy removes its containers (spec field takeOver)',
  )
  .option('--json', 'print one JSON document (the result, or the error)')
  .action(
    (opts: { config: string; follow?: boolean; json?: boolean; supervise: boolean; takeOver?: boolean }) =>
      runCommand(opts, async () => {
        const spec = loadSpecFile(deploySpecSchema, opts.config);
        return withClient(async (client) => {
          const workflowId = deployWorkflowId(spec.cluster);
          const handle = await startDeploy(client, spec, 'cli', {
            ...(opts.supervise ? {} : { supervise: false }),
            ...(opts.takeOver ? { takeOver: true } : {}),
          }).catch((err: unknown) => {
            if (err instanceof WorkflowExecutionAlreadyStartedError) {
              throw new DeployRefusedError(deployAlreadyRunningMessage(spec.cluster, workflowId, 'cli'));
            }
            throw err;
          });
          return followDeploy(opts, handle, 'deploy', spec.cluster);
        });
      }),
  );
