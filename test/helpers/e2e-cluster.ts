// What every end-to-end test stands on: a simulated cluster, a real Temporal dev server and a liftoff worker.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLiftoffWorker } from '../../src/worker.js';
import { upCluster, downCluster, type SimCluster, type SimClusterOptions } from '../../sim/cluster.js';
import { createDevServerEnv, createTimeSkippingEnv } from './temporal.js';
import { simWorkerPolicy } from './worker-policy.js';
import type { WorkerPolicySettings } from '../../src/config/worker-policy.js';

interface E2eCluster {
  sim: SimCluster;
  env: TestWorkflowEnvironment;
  /** Stops the worker, the server and the cluster. */
  stop(): Promise<void>;
}

async function startE2eCluster(
  opts: SimClusterOptions & {
    stateDir: string;
    /** What the worker allows beyond the sim's key and known_hosts (its settings, never the spec's). */
    workerPolicy?: WorkerPolicySettings;
    timeSkipping?: boolean;
    worker?: boolean;
  },
): Promise<E2eCluster> {
  await downCluster(opts.stateDir);
  const [sim, env] = await Promise.all([
    upCluster(opts),
    opts.timeSkipping ? createTimeSkippingEnv() : createDevServerEnv(),
  ]);
  const worker =
    opts.worker === false
      ? undefined
      : await createLiftoffWorker({
          connection: env.nativeConnection,
          namespace: env.namespace ?? 'default',
          policy: simWorkerPolicy(sim, opts.workerPolicy),
        });
  const running = worker?.run();
  return {
    sim,
    env,
    stop: async () => {
      worker?.shutdown();
      await running;
      await env.teardown();
      await downCluster(opts.stateDir);
    },
  };
}

/** What `useE2eCluster` brought up; read it in tests and in hooks registered after it, once its `before` ran. */
export interface E2eClusterHandle {
  readonly sim: SimCluster;
  readonly env: TestWorkflowEnvironment;
  readonly client: Client;
  /** The variables that point a liftoff CLI run as a separate process at this dev server. */
  readonly temporalEnv: { TEMPORAL_ADDRESS: string; TEMPORAL_NAMESPACE: string };
}

export type E2eClusterOptions = Partial<SimClusterOptions> & {
  stateDir: string;
  netIndex: number;
  /** What the worker allows beyond the sim's key and known_hosts (its settings, never the spec's). */
  workerPolicy?: WorkerPolicySettings;
  /** The time-skipping test server instead of the dev server: timers skip while the activities stay real. */
  timeSkipping?: boolean;
  /** false: no worker in the test's process (the test runs its own, e.g. the CLI's `liftoff worker`). */
  worker?: boolean;
};

/**
 * Registers the enclosing suite's hooks: `before` brings up the simulated cluster, a dev server (or the
 * time-skipping server) and a worker;
 * `after` stops them. The cluster is the reference layout unless `opts` says otherwise: two hosts in network
 * namespaces, spark2 reachable only through spark1 as its jump host. Hooks run in the order
 * registered: a `before` the suite adds after this call finds the cluster up, an `after` finds it stopped.
 */
export function useE2eCluster(opts: E2eClusterOptions): E2eClusterHandle {
  let cluster: E2eCluster | undefined;
  before(async () => {
    cluster = await startE2eCluster({ hosts: 2, mode: 'netns', clusterOnly: ['spark2'], ...opts });
  });
  // Bounded, so a teardown that hangs (a worker whose shutdown waits on something) fails its file within minutes
  // instead of holding the whole suite; the runner's --test-force-exit then ends the file's process.
  after(
    async () => {
      await cluster?.stop();
    },
    { timeout: 3 * 60_000 },
  );
  const up = (): E2eCluster => {
    assert.ok(cluster, 'the e2e cluster is read only after its before hook brought it up');
    return cluster;
  };
  return {
    get sim() {
      return up().sim;
    },
    get env() {
      return up().env;
    },
    get client() {
      return up().env.client;
    },
    get temporalEnv() {
      const { env } = up();
      return { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default' };
    },
  };
}
