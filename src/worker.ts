// The liftoff worker: runs the deploy workflows and the activities that act on hosts over SSH.
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import * as activities from './activities/index.js';
import { hostStepActivities } from './activities/host-step.js';
import { liftoffDataConverter } from './temporal/codec.js';
import { TASK_QUEUE } from './shared/constants.js';
import { workflowBundle } from './temporal/workflow-bundle.js';
import { loadWorkerPolicy, type WorkerPolicy } from './config/worker-policy.js';
import { bindWorkerPolicy } from './activities/worker-policy.js';
import { bindSshPool } from './activities/ssh-context.js';
import { SharedSshPool } from './ssh/executor.js';
import { sshIdleMsFromEnv } from './config/ssh-idle.js';
import { tracingRequested } from './config/tracing.js';

export interface LiftoffWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue?: string;
  /**
   * Default: the worker's data converter from this process's environment (LIFTOFF_PAYLOAD_KEY,
   * LIFTOFF_REQUIRE_ENCRYPTED). Its failure converter is bundled into the workflow sandbox too.
   */
  dataConverter?: DataConverter;
  /**
   * What specs may make this worker reach (known_hosts, keys, agent, secret sources). Default: the policy of
   * this process's environment (the file LIFTOFF_WORKER_POLICY names, or the defaults), read once, here.
   */
  policy?: WorkerPolicy;
  /**
   * Export OpenTelemetry traces of the workflows and activities (src/temporal/tracing.ts). Default: when this
   * process's environment names an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT).
   */
  tracing?: boolean;
}

/**
 * Every activity, each bound to `policy` (whatever a workflow passes, they reach only what it allows) and to the
 * worker's SSH pool.
 */
function activitiesUnder(
  policy: WorkerPolicy,
  pool: SharedSshPool,
): Record<string, (...args: never[]) => Promise<unknown>> {
  return Object.fromEntries(
    Object.entries({ ...activities, ...hostStepActivities }).map(([name, fn]) => [
      name,
      bindSshPool(pool, bindWorkerPolicy(policy, fn as (...args: unknown[]) => Promise<unknown>)),
    ]),
  );
}

export async function createLiftoffWorker(opts: LiftoffWorkerOptions): Promise<Worker> {
  const dataConverter = opts.dataConverter ?? liftoffDataConverter(process.env, { role: 'worker' });
  const policy = opts.policy ?? loadWorkerPolicy(process.env);
  // One SSH connection per host, shared by its activities, kept while unused for LIFTOFF_SSH_IDLE_TIMEOUT.
  const pool = new SharedSshPool({ idleMs: sshIdleMsFromEnv(process.env) });
  const traced = opts.tracing ?? tracingRequested(process.env);
  // Loaded only when traces are exported: without them no OpenTelemetry code runs, here or in the sandbox.
  const tracingModule = traced ? await import('./temporal/tracing.js') : undefined;
  const tracing = tracingModule?.startTracing('liftoff-worker');
  const traceOptions = tracingModule && tracing ? tracingModule.workerTracing(tracing) : {};
  const worker = await Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    // Workflow code converts failures inside the sandbox, so it needs the same failure converter; the tracing
    // interceptors of the sandbox are in the bundle too (a worker option cannot add them to a bundle).
    workflowBundle: await workflowBundle({
      ...(dataConverter.failureConverterPath
        ? { failureConverterPath: dataConverter.failureConverterPath }
        : {}),
      tracing: traced,
    }),
    activities: activitiesUnder(policy, pool),
    dataConverter,
    // After a worker dies, its workflows' next task goes back to the shared queue after this long.
    stickyQueueScheduleToStartTimeout: '5s',
    // Each supervised cluster's watch (supervise.reportEvery) holds an activity slot while its rounds run, so the
    // SDK's default of 100 would leave a fleet of 100 clusters no slot for a deploy. Activities wait on hosts,
    // not on this process's CPU.
    maxConcurrentActivityTaskExecutions: 1000,
    // A heartbeat goes out at most every 80% of the activity's heartbeatTimeout, and not less often than this: the
    // SDK's 60 s default would make a watch (heartbeatTimeout two intervals and a round) beat twice as often as it
    // needs to, each a write on the server. The steps' 10 s timeouts are unaffected.
    maxHeartbeatThrottleInterval: '5m',
    ...traceOptions,
  });
  // The pool's connections close when the worker stops, however it is run: they would otherwise hold the
  // process (and a login on every host) open until idle.
  const run = worker.run.bind(worker);
  worker.run = async () => {
    try {
      await run();
    } finally {
      await pool.close();
      // The last spans (the workflows' and activities' that ended just before) go out before the process ends.
      await tracing?.flush();
    }
  };
  return worker;
}

/** Runs the worker until Ctrl-C or SIGTERM, then lets it finish its current tasks (graceful shutdown). */
export async function runUntilSignalled(worker: Worker): Promise<void> {
  const stop = () => worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await worker.run();
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
