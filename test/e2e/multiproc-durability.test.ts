// serve.backend: multiproc under faults, with the worker in its own process (SIGKILLed the way a control host
// dies), a real dev server and real sshd on two namespace hosts (spark2 behind spark1): the worker killed in the
// middle of the ranks' load resumes it with one launch per rank; under supervision, a rank's container killed
// after healthy makes the cluster lost, the relaunch runs the normal multiproc deploy, and it serves again.
// Launches are counted on each rank's own host (launches.log); times are FIGURE lines, never asserted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { startWorkerProcess, type WorkerProcess } from '../../scripts/lib/worker-process.js';
import { downCluster, upCluster, type SimCluster } from '../../sim/cluster.js';
import { paths } from '../../sim/host-state.js';
import { simDeploySpec } from '../../sim/spec.js';
import { startRank, type StartRankResult } from '../../src/activities/multiproc.js';
import type { StartRankInput } from '../../src/host-commands/multiproc.js';
import { rankInput } from '../../src/host-commands/step-inputs.js';
import { workerPolicyEnv } from '../../src/config/worker-policy.js';
import { TASK_QUEUE, deployWorkflowId, superviseWorkflowId } from '../../src/shared/constants.js';
import { clusterHosts, validate } from '../../src/workflows/cluster-run.js';
import { deploy, progressQuery } from '../../src/workflows/index.js';
import type { DeployProgress } from '../../src/workflows/steps.js';
import { supervisionQuery, type SuperviseState } from '../../src/workflows/supervise-api.js';
import { hostLogLines } from '../helpers/host-logs.js';
import { sshRun } from '../helpers/ssh.js';
import { createDevServerEnv } from '../helpers/temporal.js';
import { tearDown } from '../helpers/teardown.js';
import { waitFor } from '../helpers/wait.js';

const stateDir = '/tmp/liftoff-test-multiproc-durability';
const cluster = 'mpdur';
const container = 'vllm_qwen35';
const masterPort = 29511;
const pace = { shards: 20, shardSeconds: 0.5, graphCaptureSeconds: 0.5 };
const fast = {
  enabled: true,
  interval: '2s',
  failureThreshold: 2,
  backoff: '1s',
  maxRelaunches: 3,
  window: '1h',
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('multiproc under faults: a SIGKILLed worker mid-load, a rank lost under supervision', () => {
  let sim: SimCluster;
  let env: TestWorkflowEnvironment | undefined;
  let client: Client;
  const workers: WorkerProcess[] = [];

  before(async () => {
    await downCluster(stateDir);
    [sim, env] = await Promise.all([
      upCluster({ hosts: 2, mode: 'netns', stateDir, netIndex: 47, clusterOnly: ['spark2'], vllm: pace }),
      createDevServerEnv(),
    ]);
    client = env.client;
  });
  after(() =>
    tearDown([...workers.map((w) => () => w.kill()), () => env?.teardown(), () => downCluster(stateDir)]),
  );

  async function startWorker(): Promise<WorkerProcess> {
    assert.ok(env);
    const w = await startWorkerProcess({
      address: env.address,
      namespace: env.namespace ?? 'default',
      workerPolicyPath: sim.workerPolicyPath,
    });
    workers.push(w);
    return w;
  }
  const workerOutput = () => workers.map((w) => `--- ${w.identity}\n${w.output().slice(-3000)}`).join('\n');

  /** The sim's spec as a multiproc one: no Ray-only field, a master port. */
  function spec(supervise: Record<string, unknown>) {
    const base = simDeploySpec(sim, { cluster });
    const { port: _port, verifyTimeout: _verify, ...ray } = base.ray;
    return {
      ...base,
      supervise,
      ray,
      serve: { ...base.serve, backend: 'multiproc', masterPort, distributedTimeout: '20s' },
    };
  }
  /** vllm launches on each host, as its own launches.log says: one per rank per launch. */
  const launchesPerHost = () => sim.hosts.map((h) => hostLogLines(paths.launches(h.hostDir)).length);
  const rankLaunches = (before: number[]) => launchesPerHost().map((n, i) => n - (before[i] ?? 0));

  /** Each host's containers of the cluster: id and launch, as docker on the host lists them. */
  const rankContainers = () =>
    Promise.all(
      sim.hosts.map((h) =>
        sshRun(
          sim,
          h.name,
          `docker ps --no-trunc --filter label=liftoff.cluster=${cluster} --format '{{.ID}} {{.Label "liftoff.launch"}}'`,
        ).then((out) => out.trim()),
      ),
    );
  /** The launch the first case left serving. */
  let served: { launchId: string } | undefined;

  async function progress(): Promise<DeployProgress | undefined> {
    return env!.connection
      .withDeadline(Date.now() + 5000, () =>
        client.workflow.getHandle(deployWorkflowId(cluster)).query(progressQuery),
      )
      .catch(() => undefined);
  }

  it('the worker SIGKILLed mid-load: a new worker resumes the load, one launch per rank', async () => {
    const victim = await startWorker();
    const before = launchesPerHost();
    const startedAt = Date.now();
    const handle = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: deployWorkflowId(cluster),
      args: [spec({ enabled: false }), { trigger: 'cli' }],
    });
    const mid = await waitFor(
      'the load to pass a few shards',
      async () => {
        const p = await progress();
        const done = p?.load?.shardsDone ?? 0;
        return done >= 3 && done < pace.shards ? p : undefined;
      },
      90_000,
      { detail: workerOutput },
    );
    await victim.kill('SIGKILL');
    const killedAt = Date.now();
    await startWorker();
    const result = await handle.result();
    const doneAt = Date.now();
    served = result;
    assert.deepEqual(rankLaunches(before), [1, 1], 'each rank was launched exactly once');
    for (const h of sim.hosts) {
      const out = await sshRun(
        sim,
        h.name,
        `docker ps --filter label=liftoff.cluster=${cluster} --format '{{.Label "liftoff.launch"}}'`,
      );
      assert.deepEqual(out.trim().split('\n'), [result.launchId], `${h.name}: one rank, of this launch`);
    }
    console.log(
      `FIGURE: multiproc, worker SIGKILLed mid-load (shard ${mid.load?.shardsDone}/${mid.load?.shardsTotal}): deploy done ${seconds(doneAt - killedAt)} after the kill (${seconds(doneAt - startedAt)} in all); launches per rank ${rankLaunches(before).join(', ')}`,
    );
  });

  it('a retried startRank finds its rank running: reused, no second container or launch', async () => {
    // As a retry after a worker lost mid-activity runs it: the same input, while this launch's ranks run.
    assert.ok(served, 'the deploy of the case above serves');
    const s = validate(spec({ enabled: false }));
    const [head, ...rest] = clusterHosts(s);
    assert.ok(head && rest.length === 1);
    const containersBefore = await rankContainers();
    const launchesBefore = launchesPerHost();
    const retry = (input: StartRankInput): Promise<StartRankResult> =>
      new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') }).run(startRank, input);
    // Outside a worker, the activity takes this process's worker policy: the sim's key and known_hosts.
    process.env[workerPolicyEnv] = sim.workerPolicyPath;
    const results = await Promise.all(
      [head, ...rest].map((h, rank) => retry(rankInput(s, served!.launchId, h, rank, head))),
    ).finally(() => delete process.env[workerPolicyEnv]);
    assert.deepEqual(
      results.map((r) => [r.host, r.rank, r.reused]),
      [
        ['spark1', 0, true],
        ['spark2', 1, true],
      ],
    );
    assert.deepEqual(rankLaunches(launchesBefore), [0, 0], 'no rank launched again');
    assert.deepEqual(await rankContainers(), containersBefore, 'the same container on each host');
  });

  it('supervised: rank 1 killed after healthy → lost → relaunched → serving; two launches per rank', async () => {
    if (workers.every((w) => !w.running())) await startWorker();
    const before = launchesPerHost();
    const handle = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: deployWorkflowId(cluster),
      args: [spec(fast), { trigger: 'cli' }],
    });
    const result = await handle.result();
    assert.match(result.supervision ?? '', /supervised by /, String(result.supervision));
    const supervisor = client.workflow.getHandle(superviseWorkflowId(cluster));
    const state = () =>
      env!.connection
        .withDeadline(Date.now() + 5000, () => supervisor.query(supervisionQuery))
        .catch((): SuperviseState | undefined => undefined);
    const until = (what: string, pred: (s: SuperviseState) => boolean) =>
      waitFor(what, async () => ((s) => (s && pred(s) ? s : undefined))(await state()), 120_000, {
        detail: workerOutput,
      });
    const healthy = await until('a passed round', (s) => s.status === 'serving' && s.rounds >= 1);
    const relaunchesBefore = healthy.relaunches.length;

    await sshRun(sim, 'spark2', `docker kill ${container}`);
    const killedAt = Date.now();
    const lost = await until('the cluster lost', (s) => s.status !== 'serving');
    const lostAt = Date.now();
    const back = await until(
      'serving again after a relaunch',
      (s) =>
        s.status === 'serving' &&
        s.relaunches.length > relaunchesBefore &&
        s.launch.launchId !== result.launchId,
    );
    const backAt = Date.now();
    assert.deepEqual(rankLaunches(before), [2, 2], 'each rank launched by the deploy and by the relaunch');
    const failed = JSON.stringify(lost.recentFailures.map((r) => r.failures));
    assert.match(failed, new RegExp(`spark2 container: rank 1's container ${container} is`), failed);
    console.log(
      `FIGURE: multiproc supervised (interval ${fast.interval}, threshold ${fast.failureThreshold}): rank 1's container killed → ${lost.status} ${seconds(lostAt - killedAt)} after, serving again (launch ${back.launch.launchId}) ${seconds(backAt - killedAt)} after the kill; launches per rank ${rankLaunches(before).join(', ')}`,
    );
  });
});
