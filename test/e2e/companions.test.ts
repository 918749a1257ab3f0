// Companion services (issue 31) on two simulated hosts that each run a real Docker Engine, with the real dev server
// and worker: an embeddings server on spark1 and a reranker on spark2 beside the 2-host model. The simulated vLLM
// serves /v1/embeddings and /v1/rerank with real vLLM's shapes, and the probes send those requests. Each case
// builds on the state the one before left. Times are printed as figures, never asserted.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostDocker } from '../../sim/real-docker.js';
import { simContainerVolumes } from '../../sim/real-docker.js';
import { simDeploySpec } from '../../sim/spec.js';
import { assertHeadServes } from '../helpers/serving.js';
import { sshRun } from '../helpers/ssh.js';
import { useSuiteCluster } from '../helpers/suites.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { progressQuery } from '../../src/workflows/deploy.js';
import { deployWorkflowId } from '../../src/shared/constants.js';
import { formatDuration } from '../../src/config/duration.js';

const cluster = 'companions';

describe('companion services beside the 2-host model, on a real Docker Engine each', () => {
  const e2e = useSuiteCluster('companions', {
    docker: 'real',
    vllm: { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.2 },
  });
  const figures: string[] = [];
  after(() => process.stdout.write(figures.map((f) => `# FIGURE: ${f}\n`).join('')));

  const specOf = () => {
    const base = simDeploySpec(e2e.sim, { cluster });
    const [spark1, spark2] = e2e.sim.hosts;
    const volumes = simContainerVolumes(e2e.sim);
    return {
      ...base,
      companions: [
        {
          name: 'embeddings',
          host: spark1!.name,
          command: ['vllm', 'serve', 'BAAI/bge-m3', '--port', '8001', '--gpu-memory-utilization', '0.05'],
          port: 8001,
          memoryMiB: 4096,
          probe: 'embeddings' as const,
          volumes,
        },
        {
          name: 'reranker',
          host: spark2!.name,
          command: [
            'vllm',
            'serve',
            'BAAI/bge-reranker-v2-m3',
            '--port',
            '8002',
            '--gpu-memory-utilization',
            '0.04',
          ],
          port: 8002,
          memoryMiB: 3072,
          probe: 'rerank' as const,
          volumes,
        },
      ],
    };
  };
  const companionOn = async (host: string, name: string): Promise<string> =>
    (
      await sshRun(
        e2e.sim,
        host,
        `docker inspect --format '{{.State.Status}} {{index .Config.Labels "liftoff.companion"}}' liftoff-${name}`,
      )
    ).trim();

  it('a deploy starts the embeddings server and the reranker after the main model, largest first, each probed by its real request', async () => {
    const handle = await startDeploy(e2e.client, specOf(), 'cli');
    const result = await handle.result();
    await assertHeadServes(e2e.sim, result);
    const progress = await e2e.client.workflow.getHandle(deployWorkflowId(cluster)).query(progressQuery);
    const step = progress.steps.find((s) => s.name === 'startCompanions');
    assert.equal(step?.status, 'done', JSON.stringify(step));
    assert.deepEqual(
      progress.companions?.map((c) => [c.name, c.host, c.status]),
      [
        ['embeddings', e2e.sim.hosts[0]!.name, 'ready'],
        ['reranker', e2e.sim.hosts[1]!.name, 'ready'],
      ],
    );
    assert.match(progress.companions?.[0]?.detail ?? '', /^an embedding of 1024 dimensions$/);
    assert.match(progress.companions?.[1]?.detail ?? '', /^2 documents scored$/);
    const smoke = progress.steps.find((s) => s.name === 'smokeTest');
    assert.ok(
      (smoke?.endedAtMs ?? Infinity) <= (step?.startedAtMs ?? 0),
      'companions start after the smoke test',
    );
    assert.equal(await companionOn(e2e.sim.hosts[0]!.name, 'embeddings'), 'running embeddings');
    assert.equal(await companionOn(e2e.sim.hosts[1]!.name, 'reranker'), 'running reranker');
    for (const c of progress.companions ?? [])
      figures.push(`companion ${c.name} ready in ${formatDuration(c.durationMs ?? 0)}`);
    void hostDocker;
  });
});
