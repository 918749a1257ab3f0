// serve.backend: multiproc end to end: vLLM's own multi-node mode on two namespace hosts (spark2 behind spark1),
// real dev server, real worker, real sshd; the simulated vllm's ranks meet over real TCP at rank 0's store.
// A cluster switched ray → multiproc → ray; the rank failure modes (a rank that cannot reach the master, a rank
// that exits during the load, the master port taken on the head). Figures are printed, never asserted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { runLiftoff, type CliRun } from '../helpers/cli.js';
import { hostLogLines } from '../helpers/host-logs.js';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { sshRun } from '../helpers/ssh.js';
import { waitUntil } from '../helpers/wait.js';
import { holdPort } from '../helpers/port-holder.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { deploy, progressQuery } from '../../src/workflows/index.js';
import type { DeployProgress, DeployResult } from '../../src/workflows/steps.js';
import { setFaults, type SimHost } from '../../sim/cluster.js';
import { paths } from '../../sim/host-state.js';
import { simDeploySpec } from '../../sim/spec.js';
import { tempDir } from '../helpers/temp-dir.js';

const run = promisify(execFile);
const stateDir = suiteStateDir('multiproc');
const clusterName = 'multiproc';
const workflowId = deployWorkflowId(clusterName);
const masterPort = 29501;

type Spec = ReturnType<typeof simDeploySpec>;

/** The sim's spec as a multiproc spec: no Ray-only field, a master port, a short rendezvous timeout. */
function asMultiproc(spec: Spec) {
  const { port: _port, verifyTimeout: _verify, ...ray } = spec.ray;
  return {
    ...spec,
    // Off: `liftoff postmortem` below must find the deploy, not a supervisor started by it (the supervised
    // multiproc cluster is test/e2e/multiproc-durability.test.ts's).
    supervise: { enabled: false },
    ray,
    serve: { ...spec.serve, backend: 'multiproc', masterPort, distributedTimeout: '5s' },
  };
}

function onHost(h: SimHost, remotePath: string): string {
  return join(paths.home(h.hostDir), relative('/home', remotePath));
}

interface Container {
  name: string;
  role: string;
  backend: string;
  launch: string;
}

describe('serve.backend multiproc: vLLM multi-node mode on the simulated cluster', () => {
  const e2e = useSuiteCluster('multiproc', {
    vllm: { shards: 8, shardSeconds: 0.25, graphCaptureSeconds: 0.4 },
  });
  let spark1: SimHost;
  let spark2: SimHost;
  before(() => {
    const [a, b] = e2e.sim.hosts;
    assert.ok(a && b);
    [spark1, spark2] = [a, b];
  });

  const liftoff = (args: string[]): Promise<CliRun> =>
    runLiftoff(args, { ...process.env, ...e2e.temporalEnv });
  const raySpec = (): Spec => simDeploySpec(e2e.sim, { cluster: clusterName });
  const multiprocSpec = () => asMultiproc(raySpec());

  async function containers(host: string): Promise<Container[]> {
    const out = await sshRun(
      e2e.sim,
      host,
      `docker ps --filter label=liftoff.cluster=${clusterName} --format '{{.Names}} {{.Label "liftoff.role"}} {{.Label "liftoff.backend"}} {{.Label "liftoff.launch"}}'`,
    );
    return out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        const [name = '', role = '', backend = '', launch = ''] = l.trim().split(' ');
        return { name, role, backend, launch };
      });
  }

  async function deployOk(
    spec: unknown,
  ): Promise<{ result: DeployResult; progress: DeployProgress; ms: number }> {
    const startedAt = Date.now();
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [spec, { trigger: 'cli' }],
    });
    const result = await handle.result();
    return { result, progress: await handle.query(progressQuery), ms: Date.now() - startedAt };
  }

  async function deployFails(spec: unknown): Promise<{ failure: ApplicationFailure; endedAtMs: number }> {
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [spec, { trigger: 'cli' }],
    });
    const error = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    const endedAtMs = Date.now();
    assert.ok(error instanceof WorkflowFailedError, `the deploy failed: ${String(error)}`);
    assert.ok(error.cause instanceof ApplicationFailure, String(error.cause));
    return { failure: error.cause, endedAtMs };
  }

  it('switches the cluster ray → multiproc → ray, each deploy removing the other backend’s containers first', async () => {
    const ray = await deployOk(raySpec());
    assert.deepEqual(
      (await containers('spark1')).map((c) => c.role),
      ['head'],
    );

    // From the CLI with --follow, as a user would: the Ray steps go by as skipped, with the reason.
    const specFile = join(tempDir('liftoff-multiproc-'), 'cluster.yaml');
    writeFileSync(specFile, stringify(multiprocSpec()));
    const cliStartedAt = Date.now();
    const followed = await liftoff(['deploy', '-c', specFile, '--follow']);
    assert.equal(followed.code, 0, followed.stderr + followed.stdout);
    assert.match(
      followed.stdout,
      /– Start the Ray head: skipped \(serve\.backend multiproc: .*no Ray cluster\)/,
    );
    assert.match(followed.stdout, /– Verify the Ray cluster: skipped \(serve\.backend multiproc/);
    const handle = e2e.client.workflow.getHandle(workflowId);
    const mp = {
      result: (await handle.result()) as DeployResult,
      progress: await handle.query(progressQuery),
      ms: Date.now() - cliStartedAt,
    };
    const steps = new Map(mp.progress.steps.map((s) => [s.name, s]));
    assert.match(
      steps.get('removeContainers')?.detail ?? '',
      /spark1: removed vllm_qwen35; spark2: removed vllm_qwen35/,
    );
    for (const name of ['startRayHead', 'startRayWorkers', 'verifyRayCluster'] as const) {
      assert.equal(steps.get(name)?.status, 'skipped', name);
      assert.match(steps.get(name)?.detail ?? '', /serve\.backend multiproc: .*no Ray cluster/);
    }
    assert.match(steps.get('launchServe')?.detail ?? '', /spark1: rank 0; spark2: rank 1 \(headless\)/);
    assert.match(mp.result.supervision ?? '', /not supervised \(supervise\.enabled: false\)/);
    assert.equal(mp.result.endpoint, `http://${spark1.address}:30000/v1`);
    assert.ok(mp.result.smoke.completionTokens > 0);
    const [rank0] = await containers('spark1');
    const [rank1] = await containers('spark2');
    assert.deepEqual([rank0?.role, rank0?.backend], ['rank0', 'multiproc']);
    assert.deepEqual([rank1?.role, rank1?.backend], ['rank1', 'multiproc']);
    assert.equal(rank0?.launch, mp.result.launchId);
    assert.equal(rank1?.launch, mp.result.launchId);

    // Each rank's own log, on its own host: rank 1 joined headless, and only rank 0 shows the shards.
    const log0 = readFileSync(onHost(spark1, raySpec().serve.logPath), 'utf8');
    const log1 = readFileSync(onHost(spark2, raySpec().serve.logPath), 'utf8');
    assert.match(
      log1,
      new RegExp(
        `headless multiproc executor, with head node address ${spark1.clusterIp.replaceAll('.', '\\.')}:${masterPort}`,
      ),
    );
    assert.match(log1, /rank 1 in world size 2 is assigned as .*TP rank 1\b/);
    assert.doesNotMatch(log1, /Loading safetensors checkpoint shards|Starting vLLM API server/);
    assert.match(log0, /Loading safetensors checkpoint shards: 100% Completed \| 8\/8/);
    const launched = readFileSync(paths.launches(spark2.hostDir), 'utf8');
    assert.match(launched, /"--node-rank","1".*"--headless"/);

    // The CLI's status shows the skipped Ray steps and why.
    const status = await liftoff(['status', clusterName]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /startRayHead +skipped +serve\.backend multiproc: .*no Ray cluster/);

    // So does the postmortem, from the history alone.
    const postmortem = await liftoff(['postmortem', clusterName]);
    assert.equal(postmortem.code, 0, postmortem.stderr);
    assert.match(
      postmortem.stdout,
      /Start the Ray head \(`startRayHead`\) \| skipped \(`serve\.backend multiproc: .*no Ray cluster`\)/,
    );
    assert.match(postmortem.stdout, /Launch vllm serve \(`launchServe`\) \| done/);

    const back = await deployOk(raySpec());
    const backSteps = new Map(back.progress.steps.map((s) => [s.name, s]));
    assert.match(
      backSteps.get('removeContainers')?.detail ?? '',
      /spark1: removed vllm_qwen35; spark2: removed vllm_qwen35/,
    );
    assert.equal(backSteps.get('verifyRayCluster')?.status, 'done');
    assert.deepEqual(
      (await containers('spark1')).map((c) => [c.role, c.backend]),
      [['head', '']],
    );
    assert.deepEqual(
      (await containers('spark2')).map((c) => [c.role, c.backend]),
      [['worker', '']],
    );
    console.log(
      `FIGURE: time to healthy on the sim (2 hosts, 8 shards × 0.25 s): ray ${ray.result.totalSeconds.toFixed(1)} s total (load ${ray.result.loadSeconds.toFixed(1)} s); ` +
        `multiproc ${mp.result.totalSeconds.toFixed(1)} s total (load ${mp.result.loadSeconds.toFixed(1)} s); ray again ${back.result.totalSeconds.toFixed(1)} s`,
    );
  });

  it('a rank that exits during the load fails the deploy naming its host and line; every rank is torn down', async () => {
    setFaults(stateDir, 'spark2', { crashAtShard: 3 });
    let failed;
    try {
      failed = await deployFails(multiprocSpec());
    } finally {
      setFaults(stateDir, 'spark2', {});
    }
    const { failure, endedAtMs } = failed;
    assert.equal(failure.type, 'RankFailed', failure.message);
    assert.match(
      failure.message,
      // The crash can come while rank 0 is still being started (launchServe) or during the load.
      /(launchServe|waitHealthy) failed: rank 1 on spark2 failed at phase \w+.*: safetensors_rust\.SafetensorError: Error while deserializing header/,
    );
    assert.match(
      failure.message,
      /containers: spark1: removed vllm_qwen35 \(its vLLM rank stopped\); spark2: removed vllm_qwen35/,
    );
    assert.deepEqual(await containers('spark1'), []);
    assert.deepEqual(await containers('spark2'), []);
    // The crashed rank's log stays on its host.
    const log1 = onHost(spark2, raySpec().serve.logPath);
    assert.match(readFileSync(log1, 'utf8'), /SafetensorError/);
    console.log(
      `FIGURE: multiproc rank 1 crash at shard 3 → deploy failed ${((endedAtMs - statSync(log1).mtimeMs) / 1000).toFixed(1)} s after the rank's last log line (poll ${raySpec().serve.pollInterval}, teardown included)`,
    );
  });

  it('a rank killed during the load fails it with RankExited naming the host, not rank 0 whose collectives fail with it', async () => {
    // As real vLLM does, rank 0 prints gloo's "Connection reset by peer" and exits as soon as the rank dies, often
    // before the rank's own host is due for a poll: the failure must name the rank that died, not its echo.
    // A load of 10 s for this deploy (the suite's is 2 s), so the kill lands during it however loaded the machine.
    const configs = [spark1, spark2].map((h) => paths.config(h.hostDir));
    const saved = configs.map((f) => readFileSync(f, 'utf8'));
    for (const [i, f] of configs.entries()) {
      const cfg = JSON.parse(saved[i] ?? '{}') as { vllm?: Record<string, number> };
      writeFileSync(f, JSON.stringify({ ...cfg, vllm: { ...cfg.vllm, shards: 40, shardSeconds: 0.25 } }));
    }
    let killedAt = 0;
    let error: unknown;
    try {
      const handle = await e2e.client.workflow.start(deploy, {
        taskQueue: TASK_QUEUE,
        workflowId,
        args: [multiprocSpec(), { trigger: 'cli' }],
      });
      await waitUntil(
        'the load to start',
        async () => (await handle.query(progressQuery)).load !== undefined,
        60_000,
      );
      killedAt = Date.now();
      await sshRun(e2e.sim, 'spark2', 'docker kill vllm_qwen35');
      error = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
    } finally {
      configs.forEach((f, k) => writeFileSync(f, saved[k] ?? ''));
    }
    assert.ok(
      error instanceof WorkflowFailedError && error.cause instanceof ApplicationFailure,
      String(error),
    );
    const failed = { failure: error.cause, detectedMs: Date.now() - killedAt };
    assert.equal(failed.failure.type, 'RankExited', failed.failure.message);
    assert.match(
      failed.failure.message,
      /rank 1 on spark2 exited at phase \w+.*: container vllm_qwen35 is exited \(exit code \d+\)/,
    );
    const serveLog = readFileSync(onHost(spark1, raySpec().serve.logPath), 'utf8');
    assert.match(serveLog, /Connection reset by peer/, "rank 0's log has the echo the failure looked past");
    assert.deepEqual(await containers('spark1'), []);
    assert.deepEqual(await containers('spark2'), []);
    console.log(
      `FIGURE: multiproc rank 1 killed mid-load (poll ${raySpec().serve.pollInterval}): deploy failed with RankExited and every rank removed ${(failed.detectedMs / 1000).toFixed(1)} s after the kill`,
    );
  });

  it("a rank that cannot reach rank 0's store fails with torch's connect timeout, naming the rank's host", async () => {
    // spark2 drops its own packets to the master port (a policy rule of its namespace): its rank dials, and waits.
    assert.ok(spark2.netns, 'spark2 runs in a network namespace');
    const rule = [
      'netns',
      'exec',
      spark2.netns,
      'ip',
      'rule',
      'add',
      'ipproto',
      'tcp',
      'dport',
      String(masterPort),
      'blackhole',
    ];
    await run('ip', rule);
    let failed;
    try {
      failed = await deployFails(multiprocSpec());
    } finally {
      await run('ip', [...rule.slice(0, 5), 'del', ...rule.slice(6)]);
    }
    const { failure, endedAtMs } = failed;
    assert.equal(failure.type, 'MasterUnreachable', failure.message);
    assert.match(
      failure.message,
      new RegExp(
        `rank 1 on spark2 failed at .*: it cannot reach rank 0's store at ${spark1.clusterIp.replaceAll('.', '\\.')}:${masterPort}: torch\\.distributed\\.DistNetworkError: The client socket has timed out after 5000ms while trying to connect to \\(${spark1.clusterIp.replaceAll('.', '\\.')}, ${masterPort}\\)`,
      ),
    );
    assert.deepEqual(await containers('spark1'), []);
    assert.deepEqual(await containers('spark2'), []);
    const log1 = onHost(spark2, raySpec().serve.logPath);
    console.log(
      `FIGURE: multiproc master unreachable from rank 1 (serve.distributedTimeout 5s): deploy failed ${((endedAtMs - statSync(log1).mtimeMs) / 1000).toFixed(1)} s after torch's line`,
    );
  });

  describe('the master port is taken on the head', () => {
    let holder: ChildProcess | undefined;
    after(() => {
      holder?.kill('SIGKILL');
    });

    it('fails preflight with MasterPortInUse, naming the port and its listener; nothing is stopped', async () => {
      holder = await holdPort(e2e.sim, spark1, masterPort, spark1.clusterIp);
      const { failure } = await deployFails(multiprocSpec());
      assert.equal(failure.type, 'MasterPortInUse', failure.message);
      assert.match(
        failure.message,
        new RegExp(
          `preflight failed: nothing was stopped or removed:\\n  spark1: serve\\.masterPort ${masterPort} is in use on the head \\(LISTEN[^)]*${spark1.clusterIp.replaceAll('.', '\\.')}:${masterPort}`,
        ),
      );
    });
  });
});

describe('serve.backend multiproc on a 4-host cluster (3 behind the jump host)', () => {
  const stateDir4 = '/tmp/liftoff-test-multiproc4';
  const e2e = useE2eCluster({
    stateDir: stateDir4,
    netIndex: 45,
    hosts: 4,
    clusterOnly: ['spark2', 'spark3', 'spark4'],
    vllm: { shards: 8, shardSeconds: 0.25, graphCaptureSeconds: 0.4 },
  });

  it('serves with tensor parallel 4, one rank a host, rank 0 on the head', async () => {
    const base = simDeploySpec(e2e.sim, { cluster: 'multiproc4' });
    const spec = asMultiproc(base);
    const startedAt = Date.now();
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: deployWorkflowId('multiproc4'),
      args: [spec, { trigger: 'cli' }],
    });
    const result = await handle.result();
    const progress = await handle.query(progressQuery);
    const launch = progress.steps.find((s) => s.name === 'launchServe');
    assert.match(
      launch?.detail ?? '',
      /spark1: rank 0; spark2: rank 1 \(headless\); spark3: rank 2 \(headless\); spark4: rank 3 \(headless\)/,
    );
    assert.ok(result.smoke.completionTokens > 0);
    for (const [i, h] of e2e.sim.hosts.entries()) {
      const log = readFileSync(onHost(h, base.serve.logPath), 'utf8');
      assert.match(log, new RegExp(`rank ${i} in world size 4 is assigned as .*TP rank ${i}\\b`), h.name);
    }
    // The headless ranks first, then rank 0 (launchRanks): when each rank's vllm started, as its host's own
    // launches.log says (the hosts share this machine's clock).
    const launchedAt = e2e.sim.hosts.map((h) => {
      const entries = hostLogLines(paths.launches(h.hostDir)).map(
        (l) => JSON.parse(l) as { time: string; args: string[] },
      );
      const rank = entries.filter((e) => e.args.includes('--nnodes')).at(-1);
      assert.ok(rank, `${h.name} launched its rank`);
      return Date.parse(rank.time);
    });
    const [rank0At = 0, ...headlessAt] = launchedAt;
    assert.ok(
      headlessAt.every((t) => t < rank0At),
      `every headless rank was launched before rank 0: ${launchedAt.map((t) => new Date(t).toISOString()).join(', ')}`,
    );
    console.log(
      `FIGURE: multiproc on 4 hosts (tp 4): healthy ${((Date.now() - startedAt) / 1000).toFixed(1)} s after the start (load ${result.loadSeconds.toFixed(1)} s); rank 0 launched ${((rank0At - Math.max(...headlessAt)) / 1000).toFixed(1)} s after the last headless rank`,
    );
  });
});
