// `liftoff down CLUSTER`: the cluster stops serving and lets its hosts go (src/workflows/down.ts). One `down` runs
// per cluster: a second one while it runs follows the first. A cluster that is already down says so, exit 0.
import { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { withClient } from '../temporal/connection.js';
import { emit, colors } from '../cli/render.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { ExitCode } from '../cli/exit-codes.js';
import { emitFailedRun } from '../cli/deploy-status.js';
import { TASK_QUEUE, downWorkflowId, searchAttributes } from '../shared/constants.js';
import { down, type DownResult } from '../workflows/index.js';

export function renderDown(r: DownResult & { workflowId: string }): string {
  if (r.alreadyDown) {
    const how = r.record?.reason ? ` (${r.record.reason})` : '';
    return `${r.cluster} is already down${how}: nothing to do`;
  }
  return [
    colors.green(`✔ ${r.cluster} is down`),
    ...r.ended.map((line) => `  ${line}`),
    ...r.hosts.map((h) => `  ${h.removed}; GPUs ${h.gpus}`),
    `history: liftoff history ${r.cluster} (workflow ${r.workflowId})`,
  ].join('\n');
}

export async function takeDown(
  client: Client,
  cluster: string,
): Promise<DownResult & { workflowId: string }> {
  const workflowId = downWorkflowId(cluster);
  const handle = await client.workflow.start(down, {
    taskQueue: TASK_QUEUE,
    workflowId,
    args: [{ cluster }],
    // A second `down` while one runs follows it rather than starting another.
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [
      { key: searchAttributes.cluster, value: cluster },
      { key: searchAttributes.trigger, value: 'down' },
    ],
  });
  return { ...(await handle.result()), workflowId };
}

export const downCommand = new Command('down')
  .description(
    'take a cluster down: stop its supervisor and any running deploy, remove its containers on every host, check the GPUs are clear, and release its hosts',
  )
  .argument('<cluster>', 'cluster name from the spec')
  .option('--json', 'print the outcome as JSON')
  .action((cluster: string, opts: { json?: boolean }) =>
    runCommand(opts, () =>
      withClient(async (client) => {
        try {
          const result = await takeDown(client, cluster);
          if (!result.known)
            throw new UsageError(
              `no cluster ${cluster} is known to this Temporal namespace (no deploy of it was found): check the name (liftoff status lists every cluster)`,
            );
          emit(opts, result, renderDown);
          return ExitCode.ok;
        } catch (err) {
          return emitFailedRun(
            opts,
            err,
            { workflowId: downWorkflowId(cluster) },
            (message) => `${colors.red(`✖ down of ${cluster} failed`)}: ${message}`,
          );
        }
      }),
    ),
  );
