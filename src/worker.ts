// The liftoff worker: runs the deploy workflows and the activities that act on hosts over SSH.
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import * as activities from './activities/index.js';
import { liftoffDataConverter } from './temporal/codec.js';
import { TASK_QUEUE } from './shared/constants.js';
import { workflowBundle } from './temporal/workflow-bundle.js';
import { loadWorkerPolicy, type WorkerPolicy } from './config/worker-policy.js';
import { bindWorkerPolicy } from './activities/worker-policy.js';
import { closeKeptConnections } from './activities/ssh-context.js';

export { workflowBundle, workflowsPath } from './temporal/workflow-bundle.js';

export interface LiftoffWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue?: string;
  identity?: string;
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
}

/** Every activity, each bound to `policy`: whatever a workflow passes, they reach only what it allows. */
function activitiesUnder(policy: WorkerPolicy): Record<string, (...args: never[]) => Promise<unknown>> {
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      bindWorkerPolicy(policy, fn as (...args: unknown[]) => Promise<unknown>),
    ]),
  );
}

export async function createLiftoffWorker(opts: LiftoffWorkerOptions): Promise<Worker> {
  const dataConverter = opts.dataConverter ?? liftoffDataConverter(process.env, { role: 'worker' });
  const policy = opts.policy ?? loadWorkerPolicy(process.env);
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    // Workflow code converts failures inside the sandbox, so it needs the same failure converter.
    workflowBundle: await workflowBundle({ failureConverterPath: dataConverter.failureConverterPath }),
    activities: activitiesUnder(policy),
    dataConverter,
    // After a worker dies, its workflows' next task goes back to the shared queue after this long.
    stickyQueueScheduleToStartTimeout: '5s',
    ...(opts.identity ? { identity: opts.identity } : {}),
  });
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
    // The supervisors' probe connections, kept between rounds, would hold the process open until idle.
    await closeKeptConnections();
  }
}
