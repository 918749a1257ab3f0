// The connectivity probe: SSH to every host (host keys verified) and read its GPU state.
// It proves the whole chain (Temporal → worker → SSH → remote tools → parsers) and becomes the deploy's preflight.
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import type { GpuState } from '../activities/gpu.js';
import { probeSpecSchema } from '../config/schema.js';
import { resolveSshTarget } from '../config/targets.js';
import { formatIssues } from '../config/errors.js';
import { FailureType } from '../shared/failures.js';

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
  const parsed = probeSpecSchema.safeParse(input);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid spec:\n${formatIssues(parsed.error)}`,
      FailureType.invalidSpec,
    );
  }
  const spec = parsed.data;
  const { privateKeyPath, useAgent, knownHostsPath } = spec.ssh;
  const auth = { privateKeyPath, useAgent, knownHostsPath };
  const hosts = await Promise.all(
    spec.hosts.map((h) => readGpuState({ target: resolveSshTarget(spec.hosts, spec.ssh, h.name), auth })),
  );
  return { cluster: spec.cluster, hosts };
}
