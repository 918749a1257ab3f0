// What every part of `npm run bench` shares: its settings, the running services, and the deploy spec it writes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Client } from '@temporalio/client';
import type { SimCluster } from '../sim/cluster.js';
import { simDeploySpec } from '../sim/spec.js';
import type { DevServer } from '../src/temporal/dev-server.js';
import { deployWorkflowId } from '../src/shared/constants.js';
import type { DeployProgress } from '../src/workflows/steps.js';
import type { WorkerProcess } from '../scripts/lib/worker-process.js';
import type { SimCpuMeter } from './cpu-groups.js';

// Its own directory, network layout and ports, so the bench can run beside the test suite or `liftoff dev`; each
// overridable (LIFTOFF_BENCH_DIR, LIFTOFF_BENCH_NET_INDEX, LIFTOFF_BENCH_PORT: the UI takes that + 1000) so a
// second bench can run beside the first.
export const workDir = process.env.LIFTOFF_BENCH_DIR ?? '/tmp/liftoff-bench';
export const simDir = join(workDir, 'sim');
export const netIndex = Number(process.env.LIFTOFF_BENCH_NET_INDEX ?? 30);
export const temporalPort = Number(process.env.LIFTOFF_BENCH_PORT ?? 27533);
export const uiPort = temporalPort + 1000;
export const pollSeconds = 1;
export const heartbeatTimeoutSeconds = 10; // src/workflows/deploy.ts
export const instantTools = { shards: 1, shardSeconds: 0, graphCaptureSeconds: 0, memoryMiB: 1024 };
export const liftoffBin = join(process.cwd(), 'bin', 'liftoff.js');

export const log = (line: string): void => void process.stderr.write(`bench: ${line}\n`);
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface Env {
  server: DevServer;
  client: Client;
  cliEnv: NodeJS.ProcessEnv;
  worker: WorkerProcess;
  /** The worker's LIFTOFF_WORKER_POLICY: the simulated cluster's key and known_hosts. */
  workerPolicyPath: string;
  simCpu: SimCpuMeter;
}

/**
 * The simulated cluster's spec at the bench's poll interval. Supervision is off unless asked for: a supervisor
 * left probing a finished size's cluster would spend CPU and run commands in the next size's figures.
 */
export function deploySpec(
  sim: SimCluster,
  cluster: string,
  overrides: { loadTimeout?: string; supervise?: Record<string, unknown> } = {},
) {
  const spec = simDeploySpec(sim, { cluster });
  return {
    ...spec,
    serve: {
      ...spec.serve,
      pollInterval: `${pollSeconds}s`,
      ...(overrides.loadTimeout ? { loadTimeout: overrides.loadTimeout } : {}),
    },
    supervise: overrides.supervise ?? { enabled: false },
  };
}

export function writeSpec(spec: object, name: string): string {
  const file = join(workDir, `${name}.yaml`);
  writeFileSync(file, stringify(spec));
  return file;
}

export async function queryProgress(env: Env, cluster: string): Promise<DeployProgress | undefined> {
  const handle = env.client.workflow.getHandle(deployWorkflowId(cluster));
  try {
    return await env.client.connection.withDeadline(Date.now() + 2000, () =>
      handle.query<DeployProgress>('progress'),
    );
  } catch {
    return undefined;
  }
}
