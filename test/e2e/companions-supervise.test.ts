// Companions under supervision (issue 31), on two simulated hosts that each run a real Docker Engine, with the real
// dev server and worker: an embeddings server on spark1 and a reranker on spark2 beside the 2-host model, the
// supervisor probing all of them every round. The embeddings server removed is restarted alone (the main model's
// launch count and the reranker's container unchanged); the main model lost relaunches the whole cluster, whose
// deploy brings both companions back under the new launch. Each case builds on the state the one before left.
// Times are printed as figures, never asserted.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simContainerVolumes } from '../../sim/real-docker.js';
import { paths } from '../../sim/host-state.js';
import { simDeploySpec } from '../../sim/spec.js';
import { runLiftoff } from '../helpers/cli.js';
import { hostLogLines } from '../helpers/host-logs.js';
import { sshRun } from '../helpers/ssh.js';
import { useSuiteCluster } from '../helpers/suites.js';
import { embeddingsCompanion, rerankerCompanion } from '../helpers/companions.js';
import { waitFor } from '../helpers/wait.js';
import { superviseWorkflowId } from '../../src/shared/constants.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import {
  stopSupervisionSignal,
  supervisionQuery,
  type SuperviseState,
} from '../../src/workflows/supervise-api.js';
import type { StatusReport } from '../../src/commands/status.js';

const cluster = 'companions-supervise';
const mainContainer = 'vllm_qwen35';
const supervise = {
  enabled: true,
  interval: '2s',
  failureThreshold: 2,
  backoff: '1s',
  maxRelaunches: 3,
  window: '1h',
};

describe('companions under supervision, on a real Docker Engine each', () => {
  const e2e = useSuiteCluster('companions-supervise', {
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
      supervise,
      companions: [
        embeddingsCompanion(spark1!.name, { volumes }),
        rerankerCompanion(spark2!.name, { volumes }),
      ],
    };
  };
  const spark1 = () => e2e.sim.hosts[0]!.name;
  const spark2 = () => e2e.sim.hosts[1]!.name;

  /** Launches of the main model on the head, as its launches.log says (the embeddings server writes there too). */
  const mainLaunches = (): number => {
    const model = simDeploySpec(e2e.sim, { cluster }).serve.model;
    return hostLogLines(paths.launches(e2e.sim.hosts[0]!.hostDir)).filter(
      (l) => (JSON.parse(l) as { model?: string }).model === model,
    ).length;
  };
  /** The container's ID, state and launch label on its host, from the host's own Docker. */
  const containerOn = async (
    host: string,
    name: string,
  ): Promise<{ id: string; status: string; launch: string }> => {
    const out = await sshRun(
      e2e.sim,
      host,
      `docker inspect --format '{{.Id}} {{.State.Status}} {{index .Config.Labels "liftoff.launch"}}' ${name}`,
    );
    const [id = '', status = '', launch = ''] = out.trim().split(' ');
    return { id, status, launch };
  };
  const supervisor = () => e2e.client.workflow.getHandle(superviseWorkflowId(cluster));
  const until = (what: string, pred: (s: SuperviseState) => boolean, ms: number) => {
    // What the supervisor last said, for the timeout's message: its status and each companion's.
    let last: SuperviseState | undefined;
    return waitFor(
      what,
      async () => {
        const s = await supervisor()
          .query(supervisionQuery)
          .catch(() => undefined);
        last = s ?? last;
        return s && pred(s) ? s : undefined;
      },
      ms,
      {
        detail: () =>
          `supervisor: ${JSON.stringify({ status: last?.status, companions: last?.companions, lastProbe: last?.lastProbe?.failures })}`,
      },
    );
  };
  const companionsServing = (s: SuperviseState): boolean =>
    ['embeddings', 'reranker'].every(
      (n) => s.companions?.[n]?.status === 'serving' && s.companions[n]?.lastProbe?.ok === true,
    );

  it('the embeddings server removed is restarted alone within the threshold: the main model and the reranker untouched', async () => {
    const handle = await startDeploy(e2e.client, specOf(), 'cli');
    const result = await handle.result();
    await until(
      'a passed round with both companions probed',
      (s) => s.status === 'serving' && s.lastProbe?.verdict === 'passed' && companionsServing(s),
      120_000,
    );
    const launchesBefore = mainLaunches();
    const reranker = await containerOn(spark2(), 'liftoff-reranker');
    const embeddingsBefore = await containerOn(spark1(), 'liftoff-embeddings');
    assert.equal(reranker.launch, result.launchId);

    await sshRun(e2e.sim, spark1(), 'docker rm -f liftoff-embeddings');
    const removedAt = Date.now();
    const failing = await until(
      'the embeddings server failing',
      (s) => (s.companions?.embeddings?.consecutiveFailures ?? 0) >= 1,
      60_000,
    );
    // The container gone, or (a round that read its state while it was being removed) its port closed.
    assert.match(
      failing.companions?.embeddings?.lastProbe?.error ?? '',
      /its container liftoff-embeddings|port 8001/,
    );
    const back = await until(
      'the embeddings server restarted and serving',
      (s) => s.companions?.embeddings?.restarts.at(-1)?.outcome === 'serving',
      180_000,
    );
    const restart = back.companions!.embeddings!.restarts.at(-1)!;
    assert.equal(back.companions?.embeddings?.status, 'serving');
    assert.equal(back.companions?.embeddings?.restarts.length, 1);
    assert.equal(back.status, 'serving', 'the main model stays supervised, serving');
    assert.equal(back.relaunches.length, 0, 'no relaunch of the cluster');
    assert.equal(back.launch.launchId, result.launchId);
    assert.equal(mainLaunches(), launchesBefore, "the main model's launch count is unchanged");

    const embeddings = await containerOn(spark1(), 'liftoff-embeddings');
    assert.equal(embeddings.status, 'running');
    assert.notEqual(embeddings.id, embeddingsBefore.id, 'a new container');
    assert.equal(embeddings.launch, result.launchId);
    assert.deepEqual(
      await containerOn(spark2(), 'liftoff-reranker'),
      reranker,
      "the reranker's container is the same one",
    );
    assert.equal((await containerOn(spark1(), mainContainer)).status, 'running');
    const serving = await sshRun(
      e2e.sim,
      spark1(),
      `curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data '{"input":["x"]}' ${back.companions.embeddings.endpoint}/v1/embeddings`,
    );
    assert.equal(serving.trim(), '200');

    const status = await runLiftoff(['status', cluster, '--json'], {
      ...process.env,
      ...e2e.temporalEnv,
    });
    assert.equal(status.code, 0, status.stderr);
    const report = JSON.parse(status.stdout) as StatusReport;
    const shown = report.supervision?.state?.companions?.embeddings;
    assert.equal(shown?.restarts.length, 1, status.stdout);
    assert.equal(shown?.restarts[0]?.outcome, 'serving');
    const text = await runLiftoff(['status', cluster], { ...process.env, ...e2e.temporalEnv });
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^ {4}embeddings on spark1: serving, http:\/\/\S+:8001, last probe \S+ ago passed in \S+, 1 restart\(s\), last \S+ serving$/m,
      text.stdout,
    );
    assert.match(
      text.stdout,
      /^ {4}reranker on spark2: serving, http:\/\/\S+:8002, last probe \S+ ago passed in \S+, no restarts$/m,
      text.stdout,
    );
    figures.push(
      `real Docker, embeddings container removed under supervision: restarted alone and serving ${(((restart.endedAtMs ?? 0) - removedAt) / 1000).toFixed(1)} s after the removal (interval 2s, threshold 2; the restart itself ${(((restart.endedAtMs ?? 0) - restart.atMs) / 1000).toFixed(1)} s)`,
    );
  });

  it('the main model lost: the whole cluster relaunched, then both companions under the new launch', async () => {
    const before = await until('serving', (s) => s.status === 'serving' && companionsServing(s), 60_000);
    const launchesBefore = mainLaunches();
    await sshRun(e2e.sim, spark2(), `docker rm -f ${mainContainer}`);
    const removedAt = Date.now();
    const back = await until(
      'the cluster relaunched and both companions serving',
      (s) =>
        s.status === 'serving' &&
        s.relaunches.at(-1)?.outcome === 'serving' &&
        s.launch.launchId !== before.launch.launchId &&
        companionsServing(s),
      300_000,
    );
    const servingAt = Date.now();
    assert.equal(back.relaunches.length, 1);
    assert.equal(mainLaunches(), launchesBefore + 1, 'exactly one more launch of the main model');
    const launch = back.launch.launchId;
    for (const [host, name] of [
      [spark1(), 'embeddings'],
      [spark2(), 'reranker'],
    ] as const) {
      const c = await containerOn(host, `liftoff-${name}`);
      assert.equal(c.status, 'running', name);
      assert.equal(c.launch, launch, `${name} runs under the new launch`);
      assert.deepEqual(back.companions?.[name]?.restarts, [], `${name}: its state started over`);
    }
    figures.push(
      `real Docker, main model's worker container removed with companions: the cluster and both companions serving again ${((servingAt - removedAt) / 1000).toFixed(1)} s after the removal (observed by polling)`,
    );
    await supervisor().signal(stopSupervisionSignal, { reason: 'the test is over' });
    await supervisor()
      .result()
      .catch(() => undefined);
  });
});
