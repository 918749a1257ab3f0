// What every deploy test that reaches serving checks of the head: it answers with the spec's model, and the deploy's
// result names that endpoint and a smoke-test answer.
import assert from 'node:assert/strict';
import type { SimCluster } from '../../sim/cluster.js';
import type { DeployResult } from '../../src/workflows/steps.js';

/** The model the simulated cluster's specs serve (sim/spec.ts). */
export const simServedModel = 'Qwen/Qwen3.5-122B-A10B-FP8';

export async function assertHeadServes(sim: SimCluster, result: DeployResult): Promise<void> {
  const head = sim.hosts[0]!;
  const models = (await (await fetch(`http://${head.address}:30000/v1/models`)).json()) as {
    data: { id: string }[];
  };
  assert.ok(models.data.some((m) => m.id === simServedModel));
  assert.equal(result.endpoint, `http://${head.address}:30000/v1`);
  assert.ok(result.smoke.text.length > 0);
}
