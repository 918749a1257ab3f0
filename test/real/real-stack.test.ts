// liftoff against the real programs on two simulated hosts (spark2 reachable only through spark1), each with its
// own real Docker Engine (sim/real-docker.ts): `docker run … ray start` starts Ray 2.60 (PyPI) in a real
// `--network host` container on each host, and `docker exec` runs vLLM's CPU build in the head's, serving a tiny
// model generated at setup from the host's Hugging Face cache, mounted by the spec's volume (sim/real-tools.ts).
// systemctl and nvidia-smi stay simulated, and the GPUs are declared, not present. One cluster and one Temporal
// serve every scenario; each scenario is a whole deploy. Runs alone (scripts/test.ts): a real vLLM start takes
// both cores. Timings are printed as FIGURE lines, never asserted.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runLiftoff } from '../helpers/cli.js';
import { sshRun } from '../helpers/ssh.js';
import { waitFor } from '../helpers/wait.js';
import {
  blockTcpPort,
  deployFailure,
  host,
  loadAverage,
  onDisk,
  realCpuServe,
  seconds,
  step,
  untilPreflightPassed,
  useRealCluster,
  type DeployHandle,
} from '../helpers/real-deploy.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { readClusterRevisions } from '../../src/activities/revisions.js';
import { progressQuery } from '../../src/workflows/deploy.js';
import type { DeployProgress } from '../../src/workflows/steps.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import type { SimCluster, SimHost } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { containerProcesses } from '../../sim/real-docker.js';
import { hfRepoDir, realHfHome, realModels } from '../../sim/real-tools.js';

const stateDir = '/tmp/liftoff-test-real';
const cluster = 'e2e-real';
const serveLog = '/home/aurora/vllm-real-serve.log';
const container = 'vllm_qwen35';

function realSpec(sim: SimCluster, model: string = realModels.tiny) {
  const base = simDeploySpec(sim, { cluster });
  return {
    ...base,
    ray: { ...base.ray, verifyTimeout: '60s' },
    serve: {
      ...base.serve,
      model,
      // vLLM's CPU build runs one worker process: it refuses the Ray executor.
      tensorParallelSize: 1,
      ...realCpuServe(serveLog),
    },
    smoke: { prompt: 'Reply with one word: ready?', maxTokens: 16 },
    onFailure: 'teardown' as const,
  };
}

/** The host's copy of a generated model's snapshot folder. */
function snapshotDir(h: SimHost, model: string): string {
  const repo = onDisk(h, hfRepoDir(realHfHome, model));
  const commit = readFileSync(join(repo, 'refs', 'main'), 'utf8').trim();
  return join(repo, 'snapshots', commit);
}

/** Host pids of the real `vllm serve` in a host's container (found by its command line in the container's processes). */
async function realVllmPids(h: SimHost): Promise<number[]> {
  return (await containerProcesses(h, container)).filter((pid) => {
    try {
      return realVllmCommand.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** The real `vllm serve`'s command line: the venv's python running the venv's `vllm` (the image's shim exec'd it). */
const realVllmCommand = /\/bin\/python[\d.]*\0\S*\/bin\/vllm\0serve\0/;

/** When the host's serve log first holds a line matching `pattern` (checked every 100 ms), or undefined. */
function watchLog(h: SimHost, pattern: RegExp): { seenAt: () => number | undefined; stop: () => void } {
  const file = onDisk(h, serveLog);
  let seen: number | undefined;
  const timer = setInterval(() => {
    if (seen === undefined && existsSync(file) && pattern.test(readFileSync(file, 'utf8'))) seen = Date.now();
  }, 100);
  return { seenAt: () => seen, stop: () => clearInterval(timer) };
}

/** What the tests read of a real engine's `docker inspect`. */
interface ContainerInspect {
  State: { Status: string };
  HostConfig: { NetworkMode: string; DeviceRequests?: { Count: number; Capabilities: string[][] }[] };
  Mounts: { Source: string; Destination: string; RW: boolean }[];
}

/** From the start of the Ray workers to the end of the cluster's verification: how long the workers took to join. */
function rayJoinMs(progress: DeployProgress): number {
  return (
    (step(progress, 'verifyRayCluster').endedAtMs ?? NaN) -
    (step(progress, 'startRayWorkers').startedAtMs ?? NaN)
  );
}

describe('the deploy against real Ray and real vLLM (CPU build)', () => {
  const e2e = useRealCluster({ stateDir, netIndex: 21 });
  let sim: SimCluster;
  before(() => {
    sim = e2e.sim;
  });

  async function start(spec: ReturnType<typeof realSpec>): Promise<DeployHandle> {
    return startDeploy(e2e.client, spec, 'cli');
  }

  it('a: deploys end to end: 2 real Ray nodes with 2 GPUs, real vLLM serving the generated model', async () => {
    const load = loadAverage();
    const handle = await start(realSpec(sim));
    const result = await handle.result();
    const progress = await handle.query(progressQuery);

    // Real containers, as each host's own engine reports them: running in the host's network, given the GPUs
    // (`--gpus all`: the engine's NVIDIA device request, which the no-op runtime hook lets through), with the
    // real programs and the host's Hugging Face cache mounted; Ray's processes in them, vLLM in the head's.
    for (const h of sim.hosts) {
      const [inspect] = JSON.parse(
        await sshRun(sim, h.name, `docker inspect --type container ${container}`),
      ) as ContainerInspect[];
      assert.ok(inspect, h.name);
      assert.equal(inspect.State.Status, 'running', h.name);
      assert.equal(inspect.HostConfig.NetworkMode, 'host', h.name);
      assert.deepEqual(
        inspect.HostConfig.DeviceRequests?.map((d) => [d.Count, d.Capabilities]),
        [[-1, [['gpu']]]],
        h.name,
      );
      const mounts = new Map(inspect.Mounts.map((m) => [m.Destination, m]));
      assert.equal(mounts.get('/root/.cache/huggingface')?.Source, realHfHome, h.name);
      const venv = sim.realTools?.venv;
      assert.ok(venv !== undefined, 'a real-tools cluster');
      assert.equal(mounts.get(venv)?.RW, false, `${h.name}: the real venv, read-only`);
      const commands = (await containerProcesses(h, container)).map((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '),
      );
      assert.ok(
        commands.some((c) =>
          c.includes(`${venv}/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet`),
        ),
        `${h.name}: the real raylet runs in the container: ${commands.join('\n')}`,
      );
    }
    assert.ok((await realVllmPids(host(sim, 'spark1'))).length > 0, "vLLM runs in the head's container");

    // The cluster the deploy verified, read again from real Ray.
    const status = parseRayStatus(await sshRun(sim, 'spark1', `docker exec ${container} ray status`));
    assert.equal(status.activeNodes.length, 2, 'real ray status lists both nodes');
    assert.equal(status.resources.GPU?.total, 2, 'the declared GPUs (--num-gpus 1 on each node)');
    assert.match(await sshRun(sim, 'spark2', `docker logs ${container} 2>&1`), /Ray runtime started\./);
    assert.match(step(progress, 'verifyRayCluster').detail ?? '', /2 nodes, 2 GPUs/);

    const log = readFileSync(onDisk(host(sim, 'spark1'), serveLog), 'utf8');
    assert.match(log, /Loading safetensors checkpoint shards: 100% Completed \| 16\/16/);
    assert.match(log, /Starting vLLM (API )?server on/);
    assert.doesNotMatch(log, /distributed_executor_backend|does not support ray/);
    assert.equal(progress.load?.phase, 'ready');
    assert.deepEqual([progress.load?.shardsDone, progress.load?.shardsTotal], [16, 16]);

    const head = host(sim, 'spark1');
    const models = (await (await fetch(`http://${head.address}:30000/v1/models`)).json()) as {
      data: { id: string }[];
    };
    assert.deepEqual(
      models.data.map((m) => m.id),
      [realModels.tiny],
    );
    assert.ok(result.smoke.text.length > 0, 'real tokens');
    assert.ok(result.smoke.completionTokens > 0);
    assert.ok(result.smoke.tokensPerSecond > 0);

    const env = { ...process.env, TEMPORAL_ADDRESS: e2e.env.address, TEMPORAL_NAMESPACE: 'default' };
    const statusRun = await runLiftoff(['status', cluster, '--json'], env);
    assert.equal(statusRun.code, 0, statusRun.stderr);
    const report = JSON.parse(statusRun.stdout) as {
      status: string;
      progress?: DeployProgress;
      result?: { model?: string; smoke?: { tokensPerSecond?: number } };
    };
    assert.equal(report.status, 'COMPLETED');
    assert.equal(report.progress?.load?.phase, 'ready');
    assert.equal(report.result?.model, realModels.tiny);
    assert.equal(report.result?.smoke?.tokensPerSecond, result.smoke.tokensPerSecond);
    const postmortem = await runLiftoff(['postmortem', cluster], env);
    assert.equal(postmortem.code, 0, postmortem.stderr);
    assert.match(postmortem.stdout, /succeeded/);
    assert.ok(postmortem.stdout.includes(realModels.tiny), postmortem.stdout);
    assert.match(postmortem.stdout, /16\/16/);

    console.log(
      `FIGURE: real stack a (deploy): total ${result.totalSeconds.toFixed(1)} s; Ray workers joined ${seconds(rayJoinMs(progress))} after their start ` +
        `(head ${seconds(step(progress, 'startRayHead').durationMs ?? NaN)}); vLLM time to healthy ${result.loadSeconds.toFixed(1)} s; ` +
        `smoke ${result.smoke.completionTokens} tokens at ${result.smoke.tokensPerSecond.toFixed(1)} tok/s ${JSON.stringify(result.smoke.text)}; load average ${load}`,
    );
  });

  it("f: an upgrade whose flag real vLLM's argparse refuses rolls back to the known-good, which serves again", async () => {
    const load = loadAverage();
    const good = realSpec(sim);
    const upgrade = {
      ...good,
      serve: { ...good.serve, args: [...good.serve.args, '--bogus-flag'] },
      rollout: { onFailure: 'rollback' as const },
    };
    const startedAtMs = Date.now();
    const handle = await startDeploy(e2e.client, upgrade, 'cli');
    const result = await handle.result();
    const servingAtMs = Date.now();
    // The failed run, as it ended (continued as new into the rollback): when it began stopping what served.
    const failedRun = e2e.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId);
    const failedProgress = await failedRun.query(progressQuery);
    assert.equal(failedProgress.rolledBackTo, 1);
    assert.match(step(failedProgress, 'waitHealthy').error ?? '', /unrecognized arguments: --bogus-flag/);
    assert.deepEqual(result.rolledBack && [result.rolledBack.from, result.rolledBack.to], [2, 1]);
    assert.equal(result.revision, 3);
    const { revisions } = await readClusterRevisions(e2e.client, cluster);
    assert.deepEqual(
      revisions.map((r) => [r.number, r.status, r.restores]),
      [
        [1, 'replaced', undefined],
        [2, 'bad', undefined],
        [3, 'serving', 1],
      ],
    );
    // Pinned: the rollback ran the image ID revision 1 recorded, not the tag.
    const recordedId = revisions[0]?.hosts[0]?.imageId;
    assert.match(recordedId ?? '', /^sha256:[0-9a-f]{64}$/);
    const running = await sshRun(
      sim,
      'spark1',
      `docker inspect --type container --format '{{.Image}}' ${container}`,
    );
    assert.equal(running.trim(), recordedId);
    const models = (await (await fetch(`http://${host(sim, 'spark1').address}:30000/v1/models`)).json()) as {
      data: { id: string }[];
    };
    assert.deepEqual(
      models.data.map((m) => m.id),
      [realModels.tiny],
    );
    const stoppedAtMs = step(failedProgress, 'stopServices').startedAtMs ?? NaN;
    const failedAtMs = step(failedProgress, 'waitHealthy').endedAtMs ?? NaN;
    console.log(
      `FIGURE: real stack f (upgrade refused by vLLM's argparse, rolled back): outage ${seconds(servingAtMs - stoppedAtMs)} from the stop to serving again ` +
        `(failed attempt ${seconds(failedAtMs - stoppedAtMs)}, known-good load ${result.loadSeconds.toFixed(1)} s, rollback run ${result.totalSeconds.toFixed(1)} s); ` +
        `CLI-equivalent wall ${seconds(servingAtMs - startedAtMs)}; load average ${load}`,
    );
  });

  it('d: the head_dim-16 model answers /health but fails the deploy at the smoke test with its 500', async () => {
    const load = loadAverage();
    const failed = await deployFailure(await start(realSpec(sim, realModels.headDim16)));
    assert.equal(failed.type, 'SmokeTestFailed', failed.message);
    assert.match(
      failed.message,
      /^smokeTest failed: Smoke test on spark1 .*: HTTP 500: EngineCore encountered an issue/,
    );
    assert.equal(step(failed.progress, 'waitHealthy').status, 'done', 'the server did come up healthy');
    assert.equal(failed.progress.load?.phase, 'ready');
    const log = readFileSync(onDisk(host(sim, 'spark1'), serveLog), 'utf8');
    assert.match(log, /Unsupported CPU attention configuration/, 'the root cause, in the real log');
    const smoke = step(failed.progress, 'smokeTest');
    console.log(
      `FIGURE: real stack d (healthy but cannot serve): healthy after ${seconds(step(failed.progress, 'waitHealthy').durationMs ?? NaN)}, ` +
        `SmokeTestFailed ${seconds(smoke.durationMs ?? NaN)} into the smoke test: ${failed.message.split('\n')[0]}; load average ${load}`,
    );
  });

  it('c: a shard with bytes past its tensors fails the load as ServerFatal with the real error line, within a poll', async () => {
    const load = loadAverage();
    const head = host(sim, 'spark1');
    // The same damage on every host: the shard keeps its header and tensors and grows by a stray tail, as a
    // botched copy leaves it. Sizes agree across hosts and exceed total_size, so preflight's weight checks
    // pass and the fault is left to vLLM's own load (safetensors refuses a file its header does not cover).
    const shards = sim.hosts.map((h) =>
      join(snapshotDir(h, realModels.tiny), 'model-00009-of-00016.safetensors'),
    );
    const originals = shards.map((s) => readFileSync(s));
    for (const s of shards) appendFileSync(s, Buffer.alloc(4096, 0x5a));
    const watch = watchLog(head, /SafetensorError/);
    try {
      const failed = await deployFailure(await start(realSpec(sim)));
      assert.equal(failed.type, 'ServerFatal', failed.message);
      assert.equal(step(failed.progress, 'preflight').status, 'done', 'preflight could not see this fault');
      // The root cause the worker process printed, not the engine core's "failed to start" after it.
      assert.match(
        failed.message,
        /SafetensorError: Error while deserializing header: incomplete metadata, file not fully covered/,
      );
      assert.match(failed.message, /shard 8\/16/, 'the load stopped at the shard vLLM read last');
      const seenAt = watch.seenAt();
      assert.ok(seenAt !== undefined, 'the real safetensors error is in the serve log');
      const detected = (step(failed.progress, 'waitHealthy').endedAtMs ?? NaN) - seenAt;
      console.log(
        `FIGURE: real stack c (shard with a stray tail): ServerFatal ${seconds(detected)} after the error reached the log; ${failed.message.split('\n')[0]}; load average ${load}`,
      );
    } finally {
      watch.stop();
      shards.forEach((s, i) => writeFileSync(s, originals[i] ?? Buffer.alloc(0)));
    }
  });

  // Not within a poll on real Docker: the launch marker's pid is the host's `docker exec` client, and while the
  // killed server's children still hold its output the engine keeps the exec's streams open about 2 s more before
  // the client exits (a bare `docker exec … sh -c 'sleep 30 & exec sleep 200'` with its sleep 200 killed: 2.05 s;
  // without the child: 0.01 s). Detection took about 3 s here, 0.9 s when the simulated docker ran vLLM on the host.
  it('e: the real vLLM process killed mid-load is detected as ServerExited', async () => {
    const load = loadAverage();
    const head = host(sim, 'spark1');
    const handle = await start(realSpec(sim));
    // Mid-load: the engine is being built (its process started), the API port is not open yet.
    const pid = await waitFor(
      'the real vLLM engine to start loading',
      async () => {
        const file = onDisk(head, serveLog);
        if (!existsSync(file) || !/Initializing a V1 LLM engine/.test(readFileSync(file, 'utf8')))
          return undefined;
        return (await realVllmPids(head))[0];
      },
      300_000,
      { everyMs: 100 },
    );
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();
    const failed = await deployFailure(handle);
    assert.equal(failed.type, 'ServerExited', failed.message);
    assert.match(failed.message, /vllm \(pid \d+\) exited at phase /);
    const detected = (step(failed.progress, 'waitHealthy').endedAtMs ?? NaN) - killedAt;
    console.log(
      `FIGURE: real stack e (vLLM SIGKILLed mid-load): ServerExited ${seconds(detected)} after the kill; ${failed.message.split('\n')[0]}; load average ${load}`,
    );
  });

  it('b: a worker that cannot reach the head port fails verifyRayCluster at once with Ray’s own line, naming the host', async () => {
    const load = loadAverage();
    const worker = host(sim, 'spark2');
    assert.ok(worker.netns);
    // A firewall rule in the worker's namespace rejects TCP to the head's GCS port (6379); SSH still passes.
    // It goes in once preflight has passed: preflight probes that port and would refuse the deploy before
    // anything starts (test/e2e/agreement.test.ts covers that); this scenario is a port that closes later.
    let unblock: (() => void) | undefined;
    try {
      const handle = await start(realSpec(sim));
      const progress = await untilPreflightPassed(handle);
      assert.ok(
        !['done', 'running'].includes(step(progress, 'startRayWorkers').status),
        'the rule is in before the workers start',
      );
      unblock = blockTcpPort(worker.netns, 6379);
      const failed = await deployFailure(handle);
      assert.equal(failed.type, 'RayClusterIncomplete', failed.message);
      assert.match(failed.message, /Missing: spark2/);
      assert.match(
        failed.message,
        /spark2: container running but cannot join the head: .*Failed to connect to GCS at address \S+:6379 within \d+ seconds/,
      );
      const said = /after (\d+(?:\.\d+)?) s\./.exec(failed.message);
      assert.ok(said, `the message gives the elapsed time: ${failed.message}`);
      const verify = step(failed.progress, 'verifyRayCluster');
      console.log(
        `FIGURE: real stack b (GCS port blocked): RayClusterIncomplete ${seconds(rayJoinMs(failed.progress))} after the worker's start ` +
          `(verifyRayCluster ${seconds(verify.durationMs ?? NaN)}, its message says ${said[1]} s); load average ${load}`,
      );
    } finally {
      unblock?.();
    }
  });
});
