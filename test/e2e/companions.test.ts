// Companion services (issue 31) on two simulated hosts that each run a real Docker Engine, with the real dev server
// and worker: an embeddings server on spark1 and a reranker on spark2 beside the 2-host model. The simulated vLLM
// serves /v1/embeddings and /v1/rerank with real vLLM's shapes, and the probes send those requests. Each case
// builds on the state the one before left. Times are printed as figures, never asserted.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simContainerVolumes } from '../../sim/real-docker.js';
import { simDeploySpec } from '../../sim/spec.js';
import { assertHeadServes } from '../helpers/serving.js';
import { sshRun } from '../helpers/ssh.js';
import { useSuiteCluster } from '../helpers/suites.js';
import { embeddingsCompanion, rerankerCompanion } from '../helpers/companions.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { progressQuery } from '../../src/workflows/deploy.js';
import { deployWorkflowId } from '../../src/shared/constants.js';
import { formatDuration } from '../../src/config/duration.js';
import { readClusterRevisions } from '../../src/activities/revisions.js';
import { takeDown } from '../../src/commands/down.js';

const cluster = 'companions';
const goodArgs = ['--gpu-memory-utilization', '0.85', '--max-model-len', '32768'];

describe('companion services beside the 2-host model, on a real Docker Engine each', () => {
  const e2e = useSuiteCluster('companions', {
    docker: 'real',
    vllm: { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.2 },
  });
  const figures: string[] = [];
  after(() => process.stdout.write(figures.map((f) => `# FIGURE: ${f}\n`).join('')));

  const specOf = (args?: string[]) => {
    const base = simDeploySpec(e2e.sim, { cluster });
    const [spark1, spark2] = e2e.sim.hosts;
    const volumes = simContainerVolumes(e2e.sim);
    return {
      ...base,
      ...(args ? { serve: { ...base.serve, args }, rollout: { onFailure: 'rollback' as const } } : {}),
      companions: [
        embeddingsCompanion(spark1!.name, { volumes }),
        rerankerCompanion(spark2!.name, { volumes }),
      ],
    };
  };
  /** `docker inspect --format FORMAT` of the companion's container, on its host. */
  const inspect = async (host: string, name: string, format: string): Promise<string> =>
    (await sshRun(e2e.sim, host, `docker inspect --format '${format}' liftoff-${name}`)).trim();
  const containerId = (host: string, name: string) => inspect(host, name, '{{.Id}}');
  const launchOf = (host: string, name: string) =>
    inspect(host, name, '{{index .Config.Labels "liftoff.launch"}}');
  const companionOn = (host: string, name: string) =>
    inspect(host, name, '{{.State.Status}} {{index .Config.Labels "liftoff.companion"}}');

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
  });

  it('a revision records the companions, and an upgrade that fails rolls back with them', async () => {
    const before = await readClusterRevisions(e2e.client, cluster);
    const serving = before.revisions.at(-1);
    assert.ok(serving, 'the first deploy recorded a revision');
    const recorded = serving.spec as { companions?: { name: string }[] };
    assert.deepEqual(
      recorded.companions?.map((c) => c.name),
      ['embeddings', 'reranker'],
    );
    const embeddingsBefore = await containerId(e2e.sim.hosts[0]!.name, 'embeddings');
    // An upgrade with a flag vLLM refuses: it fails after the stop (the companions were removed with the rest),
    // and the rollback deploys revision 1 again, companions and all.
    const startedAt = Date.now();
    const handle = await startDeploy(e2e.client, specOf([...goodArgs, '--bogus-flag']), 'cli');
    const result = await handle.result();
    assert.equal(result.rolledBack?.to, serving.number, JSON.stringify(result.rolledBack));
    await assertHeadServes(e2e.sim, result);
    const progress = await e2e.client.workflow.getHandle(deployWorkflowId(cluster)).query(progressQuery);
    assert.deepEqual(
      progress.companions?.map((c) => [c.name, c.status]),
      [
        ['embeddings', 'ready'],
        ['reranker', 'ready'],
      ],
    );
    const embeddingsAfter = await containerId(e2e.sim.hosts[0]!.name, 'embeddings');
    assert.notEqual(embeddingsAfter, embeddingsBefore, 'the rollback started the companion anew');
    assert.equal(await launchOf(e2e.sim.hosts[0]!.name, 'embeddings'), result.launchId);
    assert.equal(await launchOf(e2e.sim.hosts[1]!.name, 'reranker'), result.launchId);
    figures.push(
      `failed upgrade to serving with companions again: ${formatDuration(Date.now() - startedAt)}`,
    );
  });

  it('down removes the companions on both hosts with the rest of the cluster', async () => {
    const result = await takeDown(e2e.client, cluster);
    assert.equal(result.alreadyDown, false);
    const removed = result.hosts.map((h) => h.removed).join('\n');
    assert.match(removed, /liftoff-embeddings/);
    assert.match(removed, /liftoff-reranker/);
    for (const host of e2e.sim.hosts) {
      const left = await sshRun(
        e2e.sim,
        host.name,
        `docker ps -a --filter label=liftoff.role=companion --format '{{.Names}}'`,
      );
      assert.equal(left.trim(), '', `no companion container left on ${host.name}`);
    }
  });
});
