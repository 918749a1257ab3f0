// The worker policy a test's worker runs under: the simulated cluster's own (its key and known_hosts, from the
// file the sim writes), widened where a test needs more, always through the worker's settings, never the spec.
import {
  readWorkerPolicyFile,
  workerPolicySettingsSchema,
  type WorkerPolicy,
  type WorkerPolicySettings,
} from '../../src/config/worker-policy.js';
import type { SimCluster } from '../../sim/cluster.js';

/**
 * The sim's policy; `widen.fromEnv` adds variables and `widen.webhooks` origins (a test's receiver on loopback),
 * the other settings of `widen` replace the sim's.
 */
export function simWorkerPolicy(sim: SimCluster, widen: WorkerPolicySettings = {}): WorkerPolicy {
  const policy = readWorkerPolicyFile(sim.workerPolicyPath);
  // Checked like a policy file: a test cannot list what no worker may (LIFTOFF_*, TEMPORAL_*).
  const extra = workerPolicySettingsSchema.parse(widen);
  if (Object.keys(extra).length === 0) return policy;
  return {
    ...policy,
    source: `${policy.source}, widened by the test`,
    ...(extra.knownHosts ? { knownHosts: extra.knownHosts } : {}),
    ...(extra.privateKeys ? { privateKeys: extra.privateKeys } : {}),
    ...(extra.agent !== undefined ? { agent: extra.agent } : {}),
    ...(extra.secretsDir ? { secretsDir: extra.secretsDir } : {}),
    ...(extra.maxSecretFileBytes ? { maxSecretFileBytes: extra.maxSecretFileBytes } : {}),
    fromEnv: [...policy.fromEnv, ...(extra.fromEnv ?? [])],
    webhooks: [...policy.webhooks, ...(extra.webhooks ?? [])],
  };
}
