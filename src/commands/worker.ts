// `liftoff worker`: a worker against the Temporal that the environment names (TEMPORAL_ADDRESS, profiles…).
import { Command } from 'commander';
import { Client } from '@temporalio/client';
import { connectWorkerConnection, loadTemporalSettings } from '../temporal/connection.js';
import { TASK_QUEUE } from '../shared/constants.js';
import { emit } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';
import { loadWorkerPolicy } from '../config/worker-policy.js';
import { installMetricsRuntime, metricsAddressFrom } from '../temporal/metrics.js';
import { metricsTargetsFileFrom, whileKeepingTargets } from './metrics-targets-file.js';

export const workerCommand = new Command('worker')
  .description('run a liftoff worker against the configured Temporal (default: the embedded dev server)')
  .option('--task-queue <name>', 'task queue', TASK_QUEUE)
  .option('--json', 'print the connection as JSON')
  .option(
    '--metrics <host:port>',
    'serve Prometheus metrics at http://HOST:PORT/metrics, e.g. 127.0.0.1:9464 (env LIFTOFF_METRICS_ADDRESS; default: off)',
  )
  .option(
    '--metrics-targets <file>',
    "keep FILE a Prometheus file_sd file of every serving cluster's vLLM endpoint (and its companions'), rewritten when they change (env LIFTOFF_METRICS_TARGETS_FILE; default: off)",
  )
  .action((opts: { taskQueue: string; json?: boolean; metrics?: string; metricsTargets?: string }) =>
    runCommand(opts, async () => {
      const metrics = metricsAddressFrom(opts.metrics);
      const targetsFile = metricsTargetsFileFrom(opts.metricsTargets);
      const settings = loadTemporalSettings();
      // What specs may make this worker reach; a bad policy file stops it here, before it connects.
      const policy = loadWorkerPolicy(process.env);
      // Before the connection: the SDK's Runtime is made with the first one, and its exporter with it.
      if (metrics) await installMetricsRuntime(metrics);
      const connection = await connectWorkerConnection(settings);
      // The worker and its activities load only for the commands that run one, not for every CLI command.
      const { createLiftoffWorker, runUntilSignalled } = await import('../worker.js');
      const worker = await createLiftoffWorker({
        connection,
        namespace: settings.namespace,
        taskQueue: opts.taskQueue,
        policy,
      });
      emit(
        opts,
        {
          address: settings.address,
          namespace: settings.namespace,
          taskQueue: opts.taskQueue,
          workerPolicy: policy.source,
          metrics: metrics?.url ?? null,
          metricsTargets: targetsFile ?? null,
        },
        (i) =>
          `worker polling ${i.taskQueue} on ${i.address} (namespace ${i.namespace}); Ctrl-C to stop\nworker policy: ${i.workerPolicy}${i.metrics ? `\nmetrics: ${i.metrics}` : ''}${i.metricsTargets ? `\nmetrics targets: ${i.metricsTargets}` : ''}`,
      );
      // The fleet's records and specs through the worker's own connection (a query needs this worker anyway).
      try {
        await whileKeepingTargets(
          targetsFile,
          () =>
            new Client({
              connection,
              namespace: settings.namespace,
              dataConverter: settings.dataConverter,
            }),
          () => runUntilSignalled(worker),
        );
      } finally {
        await connection.close();
      }
    }),
  );
