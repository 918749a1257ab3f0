// liftoff against the real programs: Ray 2.60 (PyPI) and vLLM's CPU build inside two simulated hosts (spark2
// reachable only through spark1), serving a tiny model generated at setup. docker, systemctl and nvidia-smi
// stay simulated (sim/real-tools.ts). Runs alone (scripts/test.ts): a real vLLM load takes both cores.
// Timings are printed as FIGURE lines, never asserted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { startE2eCluster, type E2eCluster } from '../helpers/e2e-cluster.js';
import { runLiftoff } from '../helpers/cli.js';
import { sshRun } from '../helpers/ssh.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import type { SimCluster } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { allPids, readEnvVar } from '../../sim/processes.js';
import { hfRepoDir, realHfHome, realModels, realToolsMissing } from '../../sim/real-tools.js';

const stateDir = '/tmp/liftoff-test-real';
const cluster = 'e2e-real';
const serveLog = '/home/aurora/vllm-real-serve.log';

function realSpec(sim: SimCluster, model: string = realModels.tiny) {
  const base = simDeploySpec(sim, { cluster });
  return {
    ...base,
    ray: { ...base.ray, verifyTimeout: '60s' },
    serve: {
      ...base.serve,
      model,
      // vLLM's CPU build: one worker process (it refuses the Ray executor), a small context and KV cache.
      tensorParallelSize: 1,
      args: ['--max-model-len', '256'],
      env: { HF_HOME: realHfHome, HF_HUB_OFFLINE: '1', VLLM_CPU_KVCACHE_SPACE: '1' },
      logPath: serveLog,
      loadTimeout: '10m',
      // The engine's warm-up prints nothing for a while on a busy 2-core machine.
      stallTimeout: '5m',
    },
    smoke: { prompt: 'Reply with one word: ready?', maxTokens: 16 },
    onFailure: 'teardown' as const,
  };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** The host's copy of a generated model's snapshot folder. */
function snapshotDir(sim: SimCluster, host: string, model: string): string {
  const h = sim.hosts.find((x) => x.name === host);
  assert.ok(h);
  const repo = join(h.hostDir, 'home', hfRepoDir(realHfHome, model).slice('/home/'.length));
  const commit = readFileSync(join(repo, 'refs', 'main'), 'utf8').trim();
  return join(repo, 'snapshots', commit);
}

/** Pids of the real vLLM API server started on a host (found by its module name and the host's folder). */
function realVllmPids(hostDir: string): number[] {
  return allPids().filter((pid) => {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return (
        cmd.includes('vllm.entrypoints.openai.api_server') &&
        readEnvVar(pid, 'LIFTOFF_SIM_HOST_DIR') === hostDir
      );
    } catch {
      return false;
    }
  });
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Failed {
  type: string;
  message: string;
  failedAt: number;
}

describe('the deploy against real Ray and real vLLM (CPU build)', () => {
  let e2e: E2eCluster | undefined;
  let sim: SimCluster;

  before(async () => {
    // scripts/setup.sh installs them; without them this file fails rather than pass by skipping.
    const missing = realToolsMissing();
    if (missing) throw new Error(missing);
    e2e = await startE2eCluster({
      hosts: 2,
      mode: 'netns',
      stateDir,
      netIndex: 21,
      clusterOnly: ['spark2'],
      realTools: true,
    });
    sim = e2e.sim;
  });

  after(async () => {
    await e2e?.stop();
  });

  async function runDeploy(spec: ReturnType<typeof realSpec>, workflowId = `liftoff-${cluster}`) {
    assert.ok(e2e);
    return e2e.env.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [spec, { trigger: 'cli' }],
    });
  }

  async function deployFails(spec: ReturnType<typeof realSpec>): Promise<Failed> {
    const handle = await runDeploy(spec);
    const error = await handle.result().then(
      (r: DeployResult) => assert.fail(`the deploy succeeded: ${JSON.stringify(r.smoke)}`),
      (e: unknown) => e,
    );
    const failedAt = Date.now();
    assert.ok(error instanceof WorkflowFailedError, String(error));
    const cause = error.cause;
    assert.ok(cause instanceof ApplicationFailure, String(cause));
    return { type: cause.type ?? '', message: cause.message, failedAt };
  }

  it('a: deploys end to end: 2 real Ray nodes with 2 GPUs, real vLLM serving the generated model', async () => {
    assert.ok(e2e);
    const started = Date.now();
    const handle = await runDeploy(realSpec(sim));
    const result = await handle.result();
    const total = Date.now() - started;

    const status = parseRayStatus(await sshRun(sim, 'spark1', 'docker exec vllm_qwen35 ray status'));
    assert.equal(status.activeNodes.length, 2, 'real ray status lists both nodes');
    assert.equal(status.resources.GPU?.total, 2, 'the declared GPUs (--num-gpus 1 on each node)');
    const workerLog = await sshRun(sim, 'spark2', 'docker logs vllm_qwen35 2>&1');
    assert.match(workerLog, /Ray runtime started\./, 'the worker joined, by its own log');

    const log = await sshRun(sim, 'spark1', `cat ${serveLog}`);
    assert.match(log, /Loading safetensors checkpoint shards: 100% Completed \| 16\/16/);
    assert.match(log, /Starting vLLM (API )?server on/);
    assert.doesNotMatch(log, /distributed-executor-backend|does not support ray/);

    const head = sim.hosts[0];
    assert.ok(head);
    const models = (await (await fetch(`http://${head.address}:30000/v1/models`)).json()) as {
      data: { id: string }[];
    };
    assert.deepEqual(
      models.data.map((m) => m.id),
      [realModels.tiny],
    );
    assert.ok(result.smoke.text.length > 0, 'real tokens');
    assert.ok(result.smoke.tokensPerSecond > 0);

    const env = { ...process.env, TEMPORAL_ADDRESS: e2e.env.address, TEMPORAL_NAMESPACE: 'default' };
    const statusRun = await runLiftoff(['status', cluster, '--json'], env);
    assert.equal(statusRun.code, 0, statusRun.stderr);
    const report = JSON.parse(statusRun.stdout) as {
      status: string;
      progress?: { load?: { phase?: string; shardsTotal?: number } };
    };
    assert.equal(report.status, 'COMPLETED');
    assert.equal(report.progress?.load?.phase, 'ready');
    const postmortem = await runLiftoff(['postmortem', cluster], env);
    assert.equal(postmortem.code, 0, postmortem.stderr);
    assert.match(postmortem.stdout, /succeeded/);
    assert.match(postmortem.stdout, new RegExp(realModels.tiny.replace('/', '\\/')));

    const verify = result.stepDurationsMs.verifyRayCluster ?? NaN;
    const workers = result.stepDurationsMs.startRayWorkers ?? NaN;
    console.log(
      `FIGURE: real stack deploy ${seconds(total)}; Ray workers joined in ${seconds(workers)} (verify ${seconds(verify)}); ` +
        `vLLM time to healthy ${result.loadSeconds.toFixed(1)} s; smoke ${result.smoke.tokensPerSecond.toFixed(1)} tok/s: ${JSON.stringify(result.smoke.text)}`,
    );
  });

  it('d: the head_dim-16 model loads and answers /health but fails the deploy at the smoke test with the 500', async () => {
    const started = Date.now();
    const failed = await deployFails(realSpec(sim, realModels.headDim16));
    assert.equal(failed.type, 'SmokeTestFailed', failed.message);
    assert.match(failed.message, /^smokeTest failed: .*HTTP 500/s);
    console.log(
      `FIGURE: real stack d (healthy but cannot serve): failed at the smoke test ${seconds(failed.failedAt - started)} after the start: ${failed.message.split('\n')[0]}`,
    );
  });

  it('c: a truncated safetensors shard fails the load as ServerFatal with the real error line, within a poll', async () => {
    const shard = join(snapshotDir(sim, 'spark1', realModels.tiny), 'model-00009-of-00016.safetensors');
    const size = statSync(shard).size;
    const original = readFileSync(shard);
    truncateSync(shard, Math.floor(size / 2));
    try {
      const started = Date.now();
      const failed = await deployFails(realSpec(sim));
      assert.equal(failed.type, 'ServerFatal', failed.message);
      assert.match(failed.message, /safetensors|Safetensor|deserializ|incomplete/i);
      const head = sim.hosts[0];
      assert.ok(head);
      const log = readFileSync(join(head.hostDir, 'home', serveLog.slice('/home/'.length)), 'utf8');
      const line = log.split('\n').findIndex((l) => /SafetensorError|Error while deserializing/i.test(l));
      assert.ok(line >= 0, 'the real safetensors error is in the serve log');
      console.log(
        `FIGURE: real stack c (truncated shard): ServerFatal ${seconds(failed.failedAt - started)} after the start; ${failed.message.split('\n')[0]}`,
      );
    } finally {
      writeFileSync(shard, original);
    }
  });

  it('e: the real vLLM process killed mid-load is detected as ServerExited within a poll', async () => {
    const head = sim.hosts[0];
    assert.ok(head);
    const handle = await runDeploy(realSpec(sim));
    const hostLog = join(head.hostDir, 'home', serveLog.slice('/home/'.length));
    const pid = await waitFor('the real vLLM server to start loading', 300_000, () => {
      if (!existsSync(hostLog) || !/non-default args/.test(readFileSync(hostLog, 'utf8'))) return undefined;
      return realVllmPids(head.hostDir)[0];
    });
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();
    const error = await handle.result().then(
      () => assert.fail('the deploy succeeded after its server was killed'),
      (e: unknown) => e,
    );
    const detected = Date.now() - killedAt;
    assert.ok(error instanceof WorkflowFailedError);
    const cause = error.cause;
    assert.ok(cause instanceof ApplicationFailure);
    assert.equal(cause.type, 'ServerExited', cause.message);
    console.log(
      `FIGURE: real stack e (vLLM SIGKILLed mid-load): ServerExited ${seconds(detected)} after the kill`,
    );
  });

  it('b: a worker that cannot reach the head port fails verifyRayCluster at once with Ray’s own line, naming the host', async () => {
    const worker = sim.hosts[1];
    assert.ok(worker?.netns);
    // A firewall in the worker's namespace rejects TCP to the head's GCS port (6379); SSH still passes.
    const rule = ['rule', 'add', 'ipproto', 'tcp', 'dport', '6379', 'unreachable'];
    execFileSync('ip', ['-n', worker.netns, ...rule]);
    try {
      const started = Date.now();
      const failed = await deployFails(realSpec(sim));
      assert.equal(failed.type, 'RayClusterIncomplete', failed.message);
      assert.match(failed.message, /spark2/);
      assert.match(failed.message, /Failed to connect to GCS at address \S+:6379 within \d+ seconds/);
      const elapsed = /after (\d+(?:\.\d+)?) s\./.exec(failed.message);
      assert.ok(elapsed, `the message gives the elapsed time: ${failed.message}`);
      console.log(
        `FIGURE: real stack b (GCS port blocked): RayClusterIncomplete ${seconds(failed.failedAt - started)} after the deploy started, verifyRayCluster said ${elapsed[1]} s: ${failed.message.split('\n')[0]}`,
      );
    } finally {
      execFileSync('ip', [
        '-n',
        worker.netns,
        'rule',
        'del',
        'ipproto',
        'tcp',
        'dport',
        '6379',
        'unreachable',
      ]);
    }
  });
});
