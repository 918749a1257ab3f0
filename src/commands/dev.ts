// `liftoff dev`: the embedded Temporal dev server plus a worker, until Ctrl-C.
import { join } from 'node:path';
import { Command } from 'commander';
import { Client } from '@temporalio/client';
import { startDevServer } from '../temporal/dev-server.js';
import { connectWorkerConnection } from '../temporal/connection.js';
import { liftoffDataConverter } from '../temporal/codec.js';
import { TASK_QUEUE } from '../shared/constants.js';
import { stateDir } from '../cli/state-dir.js';
import { emit, colors } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';
import { loadWorkerPolicy } from '../config/worker-policy.js';
import { installMetricsRuntime, metricsAddressFrom } from '../temporal/metrics.js';
import { metricsTargetsFileFrom, whileKeepingTargets } from './metrics-targets-file.js';

export const devCommand = new Command('dev')
  .description('run the embedded Temporal dev server (history kept in .liftoff/) and a liftoff worker')
  .option('--port <port>', 'Temporal frontend port', '7233')
  .option('--ui-port <port>', 'Temporal UI port', '8233')
  .option('--namespace <ns>', 'Temporal namespace', 'default')
  .option('--json', 'print the addresses as JSON')
  .option(
    '--metrics <host:port>',
    'serve Prometheus metrics at http://HOST:PORT/metrics, e.g. 127.0.0.1:9464 (env LIFTOFF_METRICS_ADDRESS; default: off)',
  )
  .option(
    '--metrics-targets <file>',
    "keep FILE a Prometheus file_sd file of every serving cluster's vLLM endpoint (and its companions'), rewritten when they change (env LIFTOFF_METRICS_TARGETS_FILE; default: off)",
  )
  .action(
    (opts: {
      port: string;
      uiPort: string;
      namespace: string;
      json?: boolean;
      metrics?: string;
      metricsTargets?: string;
    }) =>
      runCommand(opts, async () => {
        // A bad address fails before a server is started; the Runtime goes in before the worker's connection.
        const metrics = metricsAddressFrom(opts.metrics);
        const targetsFile = metricsTargetsFileFrom(opts.metricsTargets);
        if (metrics) await installMetricsRuntime(metrics);
        // A malformed LIFTOFF_PAYLOAD_KEY fails here, before a server is started.
        const dataConverter = liftoffDataConverter(process.env, { role: 'worker' });
        const policy = loadWorkerPolicy(process.env);
        const server = await startDevServer({
          stateDir: join(stateDir(), 'temporal'),
          port: Number(opts.port),
          uiPort: Number(opts.uiPort),
          namespace: opts.namespace,
        });
        const { address } = server;
        const connection = await connectWorkerConnection({ address, connectionOptions: { address } });
        // The worker and its activities load only for the commands that run one, not for every CLI command.
        const { createLiftoffWorker, runUntilSignalled } = await import('../worker.js');
        const worker = await createLiftoffWorker({
          connection,
          namespace: server.namespace,
          dataConverter,
          policy,
        });
        const info = {
          address: server.address,
          namespace: server.namespace,
          ui: server.uiUrl,
          taskQueue: TASK_QUEUE,
          database: server.dbFile,
          workerPolicy: policy.source,
          metrics: metrics?.url ?? null,
          metricsTargets: targetsFile ?? null,
        };
        emit(opts, info, (i) =>
          [
            `${colors.green('Temporal dev server')} ${i.address} (namespace ${i.namespace})`,
            `${colors.green('Temporal UI')}         ${colors.bold(i.ui)}`,
            `worker on task queue ${i.taskQueue}; history in ${i.database}`,
            `worker policy: ${i.workerPolicy}`,
            ...(i.metrics ? [`metrics: ${i.metrics}`] : []),
            ...(i.metricsTargets ? [`metrics targets: ${i.metricsTargets}`] : []),
            'Press Ctrl-C to stop.',
          ].join('\n'),
        );
        try {
          await whileKeepingTargets(
            targetsFile,
            () => new Client({ connection, namespace: server.namespace, dataConverter }),
            () => runUntilSignalled(worker),
          );
        } finally {
          await connection.close();
          await server.stop();
        }
      }),
  );
