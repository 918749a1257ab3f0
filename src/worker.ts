// The liftoff worker: runs the deploy workflows and the activities that act on hosts over SSH.
import { fileURLToPath } from 'node:url';
import {
  bundleWorkflowCode,
  Worker,
  type NativeConnection,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import * as activities from './activities/index.js';
import { liftoffDataConverter } from './temporal/codec.js';
import { TASK_QUEUE } from './shared/constants.js';

export const workflowsPath = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));

// Sources use NodeNext-style `.js` specifiers that point at `.ts` files.
const bundlerOptions = {
  webpackConfigHook: (
    config: Parameters<NonNullable<Parameters<typeof bundleWorkflowCode>[0]['webpackConfigHook']>>[0],
  ) => {
    config.resolve = { ...config.resolve, extensionAlias: { '.js': ['.ts', '.js'] } };
    return config;
  },
};

let bundlePromise: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Bundles the workflow code once per process; every worker of the process reuses it. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundlePromise ??= bundleWorkflowCode({ workflowsPath, ...bundlerOptions, logger: quietBundlerLogger });
  return bundlePromise;
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

export interface LiftoffWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue?: string;
  identity?: string;
  /** Default: the payload codec that LIFTOFF_PAYLOAD_KEY in this process's environment configures. */
  dataConverter?: DataConverter;
}

export async function createLiftoffWorker(opts: LiftoffWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities,
    dataConverter: opts.dataConverter ?? liftoffDataConverter(),
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
  }
}
