// `liftoff deploy -c FILE`: validates locally, starts the deploy workflow (one per cluster), optionally follows it.
import { Command } from 'commander';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { deployAlreadyRunningMessage } from '../shared/failures.js';
import { loadSpecFile } from '../config/load.js';
import { deploySpecSchema } from '../config/schema.js';
import { withClient } from '../temporal/connection.js';
import { startDeploy } from '../temporal/start-deploy.js';
import type { DeployResult } from '../workflows/steps.js';
import { formatDuration } from '../config/duration.js';
import { emit, colors } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';
import { ExitCode } from '../cli/exit-codes.js';
import { followPlain, followTty } from '../cli/follow.js';
import { emitFailedRun } from '../cli/deploy-status.js';
import { deployWorkflowId } from '../shared/constants.js';

export class DeployRefusedError extends Error {
  override name = 'DeployRefusedError';
}

export function renderResult(r: DeployResult): string {
  const steps = Object.entries(r.stepDurationsMs)
    .map(([name, ms]) => `  ${name.padEnd(18)} ${formatDuration(ms)}`)
    .join('\n');
  return [
    colors.green(`✔ ${r.cluster} is serving ${r.model}`),
    `endpoint:   ${colors.bold(r.endpoint)}`,
    `load time:  ${formatDuration(r.loadSeconds * 1000)} (total ${formatDuration(r.totalSeconds * 1000)})`,
    `smoke test: ${JSON.stringify(r.smoke.text)} at ${r.smoke.tokensPerSecond.toFixed(1)} tokens/s`,
    'steps:',
    steps,
  ].join('\n');
}

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
          const history = `temporal workflow show --workflow-id ${workflowId} --run-id ${handle.firstExecutionRunId}`;
          if (!opts.follow) {
            emit(
              opts,
              { workflowId, runId: handle.firstExecutionRunId, started: true },
              (r) =>
                `started deploy ${r.workflowId} (run ${r.runId}); follow it with: liftoff status ${spec.cluster}`,
            );
            return ExitCode.ok;
          }
          const done = handle.result();
          if (!opts.json) {
            process.stdout.write(`deploy ${workflowId} (run ${handle.firstExecutionRunId})\n`);
            if (process.stdout.isTTY) await followTty(handle, done);
            else await followPlain(handle, done, (line) => process.stdout.write(`${line}\n`));
          }
          try {
            const result = await done;
            emit(
              opts,
              { ...result, workflowId, runId: handle.firstExecutionRunId },
              (r) => `${renderResult(r)}\nhistory:    ${history}`,
            );
            return ExitCode.ok;
          } catch (err) {
            return emitFailedRun(
              opts,
              err,
              { workflowId, runId: handle.firstExecutionRunId },
              (message) => `${colors.red('✖ deploy failed')}: ${message}\nhistory: ${history}`,
            );
          }
        });
      }),
  );
