// The connectivity probe: SSH to every host (host keys verified) and read its GPU state.
// It proves the whole chain (Temporal → worker → SSH → remote tools → parsers) and becomes the deploy's preflight.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import type { GpuState } from '../activities/gpu.js';
import { probeSpecSchema } from '../config/schema.js';
import { resolveSshTarget } from '../config/targets.js';
import { parseSpec } from './cluster-run.js';

const { readGpuState } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 minute',
  retry: {
    maximumAttempts: 3,
    initialInterval: '1 second',
  },
});

export interface ProbeClusterResult {
  cluster: string;
  hosts: GpuState[];
}

export async function probeCluster(input: unknown): Promise<ProbeClusterResult> {
  const spec = parseSpec(probeSpecSchema, input);
  const { privateKeyPath, useAgent, knownHostsPath } = spec.ssh;
  const auth = { privateKeyPath, useAgent, knownHostsPath };
  const hosts = await Promise.all(
    spec.hosts.map((h) => readGpuState({ target: resolveSshTarget(spec.hosts, spec.ssh, h.name), auth })),
  );
  return { cluster: spec.cluster, hosts };
}
