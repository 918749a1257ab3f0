// `liftoff probe -c FILE`: SSH to every host of a spec through Temporal and show its GPU state.
import { Command } from 'commander';
import { WorkflowFailedError } from '@temporalio/client';
import { describeFailure } from '../cli/deploy-status.js';
import { loadSpecFile } from '../config/load.js';
import { probeSpecSchema } from '../config/schema.js';
import { withClient } from '../temporal/connection.js';
import { TASK_QUEUE, searchAttributes } from '../shared/constants.js';
import { emit, table } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';
import { probeCluster, type ProbeClusterResult } from '../workflows/index.js';

export function renderProbe(result: ProbeClusterResult): string {
  const rows = [['HOST', 'GPU', 'MEMORY USED/TOTAL', 'PROCESSES', 'MEM AVAILABLE']];
  for (const host of result.hosts) {
    const procs =
      host.processes.map((p) => `${p.pid} ${p.processName} ${p.usedMiB ?? '?'} MiB`).join(', ') || 'none';
    for (const gpu of host.gpus) {
      const mem =
        gpu.memoryUsedMiB === null || gpu.memoryTotalMiB === null
          ? 'n/a (unified)'
          : `${gpu.memoryUsedMiB}/${gpu.memoryTotalMiB} MiB`;
      rows.push([host.host, `${gpu.index} ${gpu.name}`, mem, procs, `${host.memAvailableMiB} MiB`]);
    }
  }
  return table(rows);
}

export const probeCommand = new Command('probe')
  .description('connect to every host of a spec (host keys verified) and report its GPU state')
  .requiredOption('-c, --config <file>', 'cluster spec (YAML)')
  .option('--json', 'print the result as JSON')
  .action((opts: { config: string; json?: boolean }) =>
    runCommand(opts, async () => {
      const spec = loadSpecFile(probeSpecSchema, opts.config);
      await withClient(async (client) => {
        const result = await client.workflow
          .execute(probeCluster, {
            taskQueue: TASK_QUEUE,
            workflowId: `liftoff-probe-${spec.cluster}`,
            args: [spec],
            typedSearchAttributes: [{ key: searchAttributes.cluster, value: spec.cluster }],
          })
          .catch((err: unknown) => {
            // The cause (e.g. an unknown host key with its fingerprint and the fix) is what the user needs.
            if (err instanceof WorkflowFailedError) {
              const f = describeFailure(err);
              throw new Error(`${f.type}: ${f.message}`);
            }
            throw err;
          });
        emit(opts, result, renderProbe);
      });
    }),
  );
