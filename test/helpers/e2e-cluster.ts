// What every end-to-end test stands on: a simulated cluster, a real Temporal dev server and a liftoff worker.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLiftoffWorker } from '../../src/worker.js';
import { upCluster, downCluster, type SimCluster, type SimClusterOptions } from '../../sim/cluster.js';
import { createDevServerEnv } from './temporal.js';
import { simWorkerPolicy } from './worker-policy.js';
import type { WorkerPolicySettings } from '../../src/config/worker-policy.js';

export interface E2eCluster {
  sim: SimCluster;
  env: TestWorkflowEnvironment;
  /** Stops the worker, the server and the cluster. */
  stop(): Promise<void>;
}

export async function startE2eCluster(
  opts: SimClusterOptions & {
    stateDir: string;
    /** What the worker allows beyond the sim's key and known_hosts (its settings, never the spec's). */
    workerPolicy?: WorkerPolicySettings;
  },
): Promise<E2eCluster> {
  await downCluster(opts.stateDir);
  const [sim, env] = await Promise.all([upCluster(opts), createDevServerEnv()]);
  const worker = await createLiftoffWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    policy: simWorkerPolicy(sim, opts.workerPolicy),
  });
  const running = worker.run();
  return {
    sim,
    env,
    stop: async () => {
      worker.shutdown();
      await running;
      await env.teardown();
      await downCluster(opts.stateDir);
    },
  };
}
