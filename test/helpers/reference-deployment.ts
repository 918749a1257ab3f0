// The old deployment every simulated cluster is seeded with (sim/cluster.ts): a deploy that refuses or fails before
// its first stop must leave it as it was.
import assert from 'node:assert/strict';
import { clusterStatus } from '../../sim/cluster.js';

/** Asserts each host's reference units are all active and its reference containers all run; returns the hosts. */
export async function assertReferenceDeploymentRuns(
  stateDir: string,
): Promise<Awaited<ReturnType<typeof clusterStatus>>> {
  const hosts = await clusterStatus(stateDir);
  for (const host of hosts) {
    assert.deepEqual(
      host.units.filter((u) => !u.active).map((u) => u.name),
      [],
      `${host.name}: every old unit still active`,
    );
    assert.deepEqual(
      host.containers
        .filter((c) => c.running)
        .map((c) => c.name)
        .sort(),
      ['reranker', 'vllm_embeddings', 'vllm_node'],
      `${host.name}: the old containers still run`,
    );
  }
  return hosts;
}
