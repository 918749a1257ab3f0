// Following a deploy the CLI started (`liftoff deploy`, `liftoff rollback`) to its end and printing how it ended.
// A deploy that failed and rolled back ends in the rollback's result (the same workflow id, continued as new):
// that is still a failed deploy of what was asked, so it exits 1 and says what serves instead.
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { formatDuration } from '../config/duration.js';
import type { DeployResult } from '../workflows/steps.js';
import { emit, colors } from './render.js';
import { ExitCode } from './exit-codes.js';
import { followPlain, followTty } from './follow.js';
import { emitFailedRun } from './deploy-status.js';

export class DeployRefusedError extends Error {
  override name = 'DeployRefusedError';
}

export function renderResult(r: DeployResult): string {
  const steps = Object.entries(r.stepDurationsMs)
    .map(([name, ms]) => `  ${name.padEnd(18)} ${formatDuration(ms)}`)
    .join('\n');
  return [
    ...(r.rolledBack ? [renderRollback(r.rolledBack)] : []),
    colors.green(`✔ ${r.cluster} is serving ${r.model}`),
    `endpoint:   ${colors.bold(r.endpoint)}`,
    ...(r.revision !== undefined ? [`revision:   ${r.revision}`] : []),
    `load time:  ${formatDuration(r.loadSeconds * 1000)} (total ${formatDuration(r.totalSeconds * 1000)})`,
    `smoke test: ${JSON.stringify(r.smoke.text)} at ${r.smoke.tokensPerSecond.toFixed(1)} tokens/s`,
    'steps:',
    steps,
  ].join('\n');
}

export function renderRollback(r: NonNullable<DeployResult['rolledBack']>): string {
  if (r.from === undefined) return `↩ rolled back to revision ${r.to}`;
  return [
    colors.red(`✖ revision ${r.from} failed and is marked bad: ${r.cause}`),
    colors.yellow(`↩ rolled back to revision ${r.to}`),
  ].join('\n');
}

/** Follows the run to its end, prints the result or the failure, and returns the exit code. */
export async function followDeploy(
  opts: { follow?: boolean; json?: boolean },
  handle: WorkflowHandleWithFirstExecutionRunId,
  what: 'deploy' | 'rollback',
  cluster: string,
): Promise<number> {
  const { workflowId, firstExecutionRunId: runId } = handle;
  const history = `temporal workflow show --workflow-id ${workflowId} --run-id ${runId}`;
  if (!opts.follow) {
    emit(
      opts,
      { workflowId, runId, started: true },
      (r) => `started ${what} ${r.workflowId} (run ${r.runId}); follow it with: liftoff status ${cluster}`,
    );
    return ExitCode.ok;
  }
  const done = handle.result() as Promise<DeployResult>;
  if (!opts.json) {
    process.stdout.write(`${what} ${workflowId} (run ${runId})\n`);
    if (process.stdout.isTTY) await followTty(handle, done);
    else await followPlain(handle, done, (line) => process.stdout.write(`${line}\n`));
  }
  try {
    const result = await done;
    emit(opts, { ...result, workflowId, runId }, (r) => `${renderResult(r)}\nhistory:    ${history}`);
    // What was asked failed, even though the known-good serves again.
    return what === 'deploy' && result.rolledBack?.from !== undefined ? ExitCode.deployFailed : ExitCode.ok;
  } catch (err) {
    return emitFailedRun(
      opts,
      err,
      { workflowId, runId },
      (message) => `${colors.red(`✖ ${what} failed`)}: ${message}\nhistory: ${history}`,
    );
  }
}
