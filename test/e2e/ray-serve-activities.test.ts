// The Ray, serve, health, smoke and diagnostics activities against a real simulated cluster: two hosts in
// network namespaces with real sshd; effects are checked on the hosts' own state (containers, launches.log,
// ray status, process environments), not only on what the activities return.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import {
  clusterStatus,
  downCluster,
  setFaults,
  setHostDown,
  upCluster,
  type SimCluster,
  type SimHost,
} from '../../sim/cluster.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import { sh } from '../../src/ssh/quote.js';
import { FailureType } from '../../src/shared/failures.js';
import { startRayHead, startRayWorker } from '../../src/activities/ray-start.js';
import { verifyRayCluster } from '../../src/activities/ray-cluster.js';
import { launchServe } from '../../src/activities/serve.js';
import { checkServeHealth } from '../../src/activities/health.js';
import { smokeTest } from '../../src/activities/smoke.js';
import { probeServingCluster, type ProbeServingClusterInput } from '../../src/activities/cluster-probe.js';
import { collectDiagnostics } from '../../src/activities/diagnostics.js';
import { onHost } from '../../src/activities/ssh-context.js';
import type { HostRef } from '../../src/config/targets.js';
import type {
  CheckServeInput,
  CheckServeResult,
  NamedHost,
  SmokeTestInput,
  VerifyRayClusterInput,
} from '../../src/activities/types.js';
import type { LaunchServeInput, RayContainerInput } from '../../src/host-commands/launch.js';

const stateDir = '/tmp/liftoff-test-ray-serve';
const container = 'vllm_test';
const rayPort = 6379;
const servePort = 30000;
const logPath = '/home/aurora/vllm-test-serve.log';
const hfToken = 'hf_TESTTOKENabcdefghijklmnopqrstuv';
const apiKey = 'sk-test-api-key-0123456789';
// A serve.env secret by reference, shaped like no known credential: only the spec's env can tell it is one.
const serveSecretEnv = 'HF_TOKEN';
const serveSecret = `plain-${randomBytes(12).toString('hex')}`;
const model = 'Qwen/Qwen3.5-122B-A10B-FP8';
const servedName = 'qwen35';

// Expected failures are asserted below; the mock's warning per failed activity would only be noise.
const quiet = new DefaultLogger('ERROR');
const run = <I, O>(fn: (input: I) => Promise<O>, input: I): Promise<O> =>
  new MockActivityEnvironment(undefined, { logger: quiet }).run(fn, input);

/** Resolves to the failure the activity threw (fails the test if it did not throw). */
async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  return err;
}

describe('ray, serve, health, smoke and diagnostics activities (simulated cluster)', () => {
  let sim: SimCluster;
  let head: SimHost;
  let worker: SimHost;
  const refs = new Map<string, HostRef>();
  const ref = (h: SimHost): HostRef => refs.get(h.name) as HostRef;
  const named = (h: SimHost): NamedHost => ({ name: h.name, ref: ref(h), clusterIp: h.clusterIp });
  const onRemote = (h: SimHost, text: ReturnType<typeof sh>) =>
    onHost(ref(h), (s) => s.exec(text, { timeoutMs: 30_000, check: false }));

  const rayInput = (h: SimHost, launchId: string, extra: Partial<RayContainerInput> = {}) =>
    ({
      host: ref(h),
      cluster: 'ray-serve-e2e',
      launchId,
      image: 'hellohal2064/vllm-qwen3.5-gb10',
      container,
      port: rayPort,
      clusterIp: h.clusterIp,
      env: { RAY_memory_monitor_refresh_ms: '0', HF_TOKEN: hfToken },
      volumes: ['/home/aurora/.cache/huggingface:/root/.cache/huggingface'],
      gpus: 1,
      ...(h === worker ? { headAddress: `${head.clusterIp}:${rayPort}` } : {}),
      ...extra,
    }) satisfies RayContainerInput;

  /** The two-node, two-GPU cluster of `head` and `worker`, as verifyRayCluster checks it. */
  const verifyInput = (): VerifyRayClusterInput => ({
    head: named(head),
    workers: [named(worker)],
    container,
    expectedNodes: 2,
    expectedGpus: 2,
  });

  const serveInput = (launchId: string): LaunchServeInput => ({
    head: ref(head),
    clusterIp: head.clusterIp,
    container,
    launchId,
    model,
    servedModelName: servedName,
    port: servePort,
    tensorParallelSize: 2,
    args: ['--gpu-memory-utilization', '0.5', '--api-key', apiKey],
    env: {
      VLLM_ENGINE_READY_TIMEOUT_S: '1800',
      HUGGING_FACE_HUB_TOKEN: hfToken,
      [serveSecretEnv]: { fromEnv: serveSecretEnv },
    },
    logPath,
    rayPort,
  });

  const checkInput = (pid: number, logOffset: number): CheckServeInput => ({
    head: ref(head),
    clusterIp: head.clusterIp,
    container,
    pid,
    logPath,
    logOffset,
    port: servePort,
    model: servedName,
    // The server was started with --api-key: the /v1 routes want it.
    apiKey,
  });

  const launches = () =>
    readFileSync(join(head.hostDir, 'launches.log'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { pid: number; model: string });

  /** Polls checkServeHealth until `done` says so, returning every result seen. */
  async function pollUntil(
    pid: number,
    done: (r: CheckServeResult) => boolean,
    timeoutMs = 25_000,
  ): Promise<CheckServeResult[]> {
    const seen: CheckServeResult[] = [];
    let offset = 0;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await run(checkServeHealth, checkInput(pid, offset));
      seen.push(r);
      offset = r.logOffset;
      if (done(r)) return seen;
      assert.ok(Date.now() < deadline, `no end state after ${timeoutMs} ms: ${JSON.stringify(r)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  before(async () => {
    sim = await upCluster({
      hosts: 2,
      mode: 'netns',
      stateDir,
      netIndex: 4,
      seedReferenceState: false,
      vllm: { shards: 6, shardSeconds: 0.6, graphCaptureSeconds: 0.3, memoryMiB: 1024 },
    });
    [head, worker] = sim.hosts as [SimHost, SimHost];
    for (const h of sim.hosts) {
      refs.set(h.name, {
        target: { name: h.name, host: h.address, port: h.sshPort, user: sim.sshUser },
        auth: { privateKeyPath: sim.privateKeyPath, knownHostsPath: sim.knownHostsPath },
      });
    }
    // Activities run here outside a worker take this process's worker policy: the sim's key and known_hosts.
    process.env.LIFTOFF_WORKER_POLICY = sim.workerPolicyPath;
    // What the worker's environment holds for serve.env's reference (the default policy lists HF_TOKEN).
    process.env[serveSecretEnv] = serveSecret;
  });

  after(async () => {
    delete process.env.LIFTOFF_WORKER_POLICY;
    delete process.env[serveSecretEnv];
    await downCluster(stateDir);
  });

  it('starts the head and a worker; ray status on the head shows 2 nodes and 2 GPUs', async () => {
    const started = await run(startRayHead, rayInput(head, 'launch-1'));
    assert.equal(started.reused, false);
    assert.match(started.containerId, /^[0-9a-f]{64}$/);
    assert.equal((await run(startRayWorker, rayInput(worker, 'launch-1'))).reused, false);

    const status = await onRemote(head, sh`docker exec ${container} ray status`);
    const parsed = parseRayStatus(status.stdout);
    assert.equal(parsed.activeNodes.length, 2);
    assert.equal(parsed.resources.GPU?.total, 2);

    const state = await run(verifyRayCluster, verifyInput());
    assert.deepEqual(state, { nodes: 2, gpusTotal: 2, gpusUsed: 0 });

    // The container got the flags and env the design asks for; the secret arrived without being on a command line.
    const inspect = await onRemote(head, sh`docker inspect ${container}`);
    const [info] = JSON.parse(inspect.stdout) as Array<{
      Config: { Env: string[]; Labels: Record<string, string>; Entrypoint: string[] };
      Args: string[];
      HostConfig: { NetworkMode: string; IpcMode: string };
    }>;
    assert.ok(info);
    assert.ok(info.Config.Env.includes(`HF_TOKEN=${hfToken}`));
    assert.ok(info.Config.Env.includes(`VLLM_HOST_IP=${head.clusterIp}`));
    assert.ok(info.Config.Env.includes('RAY_memory_monitor_refresh_ms=0'));
    assert.deepEqual(info.Config.Labels, {
      'liftoff.cluster': 'ray-serve-e2e',
      'liftoff.launch': 'launch-1',
      'liftoff.role': 'head',
    });
    assert.deepEqual(info.Config.Entrypoint, ['ray']);
    assert.equal(info.HostConfig.NetworkMode, 'host');
    assert.equal(info.HostConfig.IpcMode, 'host');
    assert.ok(info.Args.includes('--head') && info.Args.includes('--block'));
    const headRecord = JSON.parse(readFileSync(join(head.hostDir, 'ray', 'head.json'), 'utf8')) as {
      memoryMonitorDisabled: boolean;
      nodeIp: string;
    };
    assert.equal(
      headRecord.memoryMonitorDisabled,
      true,
      'RAY_memory_monitor_refresh_ms=0 was set at ray start',
    );
    assert.equal(headRecord.nodeIp, head.clusterIp);
  });

  it('reuses the container of the same launch and replaces one of another launch', async () => {
    const before = (await clusterStatus(stateDir)).find((h) => h.name === head.name);
    const again = await run(startRayHead, rayInput(head, 'launch-1'));
    assert.equal(again.reused, true);
    const afterHead = (await clusterStatus(stateDir)).find((h) => h.name === head.name);
    assert.deepEqual(afterHead?.containers, before?.containers, 'nothing was started or removed');
    assert.equal(afterHead?.containers.filter((c) => c.name === container && c.running).length, 1);

    const replaced = await run(startRayWorker, rayInput(worker, 'launch-2'));
    assert.equal(replaced.reused, false);
    const label = await onRemote(worker, sh`docker inspect --format ${'{{.Id}}'} ${container}`);
    assert.equal(label.stdout.trim(), replaced.containerId);
    const workerStatus = (await clusterStatus(stateDir)).find((h) => h.name === worker.name);
    assert.equal(workerStatus?.containers.length, 1, 'the old container is gone');
    // The replacement joins the same head.
    const state = await run(verifyRayCluster, verifyInput());
    assert.equal(state.nodes, 2);
  });

  let servePid = 0;

  it('refuses to launch over a serve log that is a symbolic link, and truncates nothing', async () => {
    // Preflight refuses the link too; the launch checks again, since the path may have changed since.
    const target = '/home/aurora/link-target.txt';
    const linked = '/home/aurora/linked-serve.log';
    await onRemote(head, sh`printf 'keep me\\n' > ${target} && ln -sfn ${target} ${linked}`);
    const err = await failureOf(run(launchServe, { ...serveInput('serve-link'), logPath: linked }));
    assert.equal(err.type, FailureType.serveLaunchFailed);
    assert.equal(err.nonRetryable, true);
    assert.match(
      err.message,
      /serve\.logPath \/home\/aurora\/linked-serve\.log .*is a symbolic link on spark1/,
    );
    assert.equal((await onRemote(head, sh`cat ${target}`)).stdout, 'keep me\n', 'the target is untouched');
    const launched = existsSync(join(head.hostDir, 'launches.log')) ? launches().length : 0;
    assert.equal(launched, 0, 'no vllm started');
  });

  it('launches vllm once, even when the activity runs twice for the same launch', async () => {
    const first = await run(launchServe, serveInput('serve-1'));
    assert.equal(first.reused, false);
    assert.ok(first.pid > 0);
    servePid = first.pid;
    const second = await run(launchServe, serveInput('serve-1'));
    assert.equal(second.reused, true);
    assert.equal(second.pid, first.pid);
    // launchServe returns once the server is backgrounded; the simulated vllm records its launch when its
    // process has started, which on a loaded machine can come a few hundred ms later.
    const deadline = Date.now() + 15_000;
    while (launches().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(launches().length, 1, 'launches.log on the head has one entry');

    // Another launch over this one's marker while its server runs: refused, from the pid check read beside the
    // marker (steps/launch-serve.ts preReadCommands), and nothing more is started.
    const over = await failureOf(run(launchServe, serveInput('serve-other')));
    assert.equal(over.type, FailureType.serveLaunchFailed);
    assert.equal(over.nonRetryable, true);
    assert.match(
      over.message,
      new RegExp(`earlier launch \\(serve-1, pid ${first.pid}\\) still runs on spark1`),
    );
    assert.equal(launches().length, 1, 'the refused launch started nothing');

    const marker = await onRemote(head, sh`cat ${`${logPath}.liftoff.json`}`);
    assert.deepEqual(
      { ...(JSON.parse(marker.stdout) as object), startedAt: 0 },
      { launchId: 'serve-1', pid: first.pid, startedAt: 0 },
    );
    // The secret env value reached vllm (through docker exec -e NAME), not a command line.
    const vllmPid = launches()[0]?.pid ?? 0;
    const environ = readFileSync(`/proc/${vllmPid}/environ`, 'latin1').split('\0');
    assert.ok(environ.includes(`HUGGING_FACE_HUB_TOKEN=${hfToken}`));
    assert.ok(environ.includes('VLLM_ENGINE_READY_TIMEOUT_S=1800'));
    const cmdline = readFileSync(`/proc/${first.pid}/cmdline`, 'latin1');
    assert.ok(!cmdline.includes(hfToken), 'the token is not on the docker exec command line');
  });

  it("returns the head's last look from verifyRayCluster, and launchServe goes on a fresh look only", async () => {
    // With the launch's marker, the check returns what it last saw of the head: Ray's count, serve-1's marker and
    // that its server runs.
    const state = await run(verifyRayCluster, {
      ...verifyInput(),
      launchMarkerPath: `${logPath}.liftoff.json`,
    });
    const look = state.headLook;
    assert.ok(look, 'a look at the head is returned');
    assert.deepEqual(
      { ...look, atMs: 0, marker: { ...look.marker, startedAt: 0 } },
      {
        atMs: 0,
        host: head.name,
        container,
        markerPath: `${logPath}.liftoff.json`,
        // serve-1's server holds both GPUs.
        ray: { nodes: 2, gpus: 2, gpusUsed: 2 },
        marker: { launchId: 'serve-1', pid: servePid, startedAt: 0 },
        markerPidAlive: true,
      },
    );
    assert.ok(JSON.stringify(look).length < 1024, 'the look is small enough for the workflow history');

    // A fresh look is what the launch goes on, without reading the head: here one that says serve-3's server
    // runs, which only the look says.
    const fresh = {
      ...look,
      atMs: Date.now(),
      marker: { launchId: 'serve-3', pid: 4242, startedAt: 7 },
      markerPidAlive: true,
    };
    const kept = await run(launchServe, { ...serveInput('serve-3'), headLook: fresh });
    assert.deepEqual(kept, { pid: 4242, logPath, launchedAtMs: 7, reused: true });
    // An old look, one of another head, or any look on a retry (the attempt before may have launched since) is
    // read again: the head's marker says serve-1 runs, so serve-3 is refused, and nothing starts.
    const retry = <I, O>(fn: (input: I) => Promise<O>, input: I): Promise<O> =>
      new MockActivityEnvironment({ attempt: 2 }, { logger: quiet }).run(fn, input);
    for (const [runner, stale] of [
      // First, while the look is as fresh as the one the first attempt went on.
      [retry, { ...fresh, atMs: Date.now() }],
      [run, { ...fresh, atMs: Date.now() - 60_000 }],
      [run, { ...fresh, atMs: Date.now(), host: 'elsewhere' }],
    ] as const) {
      const refused = await failureOf(runner(launchServe, { ...serveInput('serve-3'), headLook: stale }));
      assert.equal(refused.type, FailureType.serveLaunchFailed);
      assert.match(refused.message, new RegExp(`earlier launch \\(serve-1, pid ${servePid}\\) still runs`));
    }
    assert.equal(launches().length, 1, 'no look started a second server');
  });

  it('reports refused with shard progress while loading, then ok with the model listed', async () => {
    // The API can answer a moment before its "startup complete" line reaches the log file: wait for both.
    const seen = await pollUntil(
      servePid,
      (r) => r.health === 'ok' && r.modelListed && r.tail.some((l) => /Application startup complete/.test(l)),
    );
    const loading = seen.find((r) => r.health === 'refused' && r.summary?.shard !== undefined);
    assert.ok(loading, `a poll saw the port refused during shard loading: ${JSON.stringify(seen)}`);
    assert.equal(loading.summary?.shard?.total, 6);
    assert.ok(seen.every((r) => r.processAlive && r.containerRunning));
    const last = seen.at(-1) as CheckServeResult;
    assert.ok(last.tail.length > 0 && last.tail.length <= 40);
    assert.ok(last.tail.some((l) => /Application startup complete/.test(l)));
    const allText = JSON.stringify(seen);
    assert.ok(allText.includes('api_key'), 'vllm printed its args');
    assert.ok(!allText.includes(apiKey), 'the API key is redacted from the tails');
    const offsets = seen.map((r) => r.logOffset);
    assert.deepEqual(
      offsets,
      [...offsets].sort((a, b) => a - b),
      'the log offset only moves forward',
    );
  });

  const smokeInput = (): SmokeTestInput => ({
    head: ref(head),
    clusterIp: head.clusterIp,
    port: servePort,
    model: servedName,
    prompt: 'Reply with one word: ready?',
    maxTokens: 16,
    apiKey,
  });

  /** The supervisor's probe of this cluster, with serve.env's secret among those its report must not show. */
  const probeInput = (): ProbeServingClusterInput => ({
    head: {
      head: ref(head),
      clusterIp: head.clusterIp,
      container,
      port: servePort,
      model: servedName,
      apiKey,
      secretEnv: [{}, serveInput('probe').env],
      completionTimeoutS: 5,
      expectedNodes: 2,
      expectedGpus: 2,
    },
    workers: [ref(worker)],
    container,
  });

  it('smoke test: one chat completion returns text and a token rate', async () => {
    const r = await run(smokeTest, smokeInput());
    assert.ok(r.text.trim().length > 0);
    assert.ok(r.completionTokens > 0 && r.completionTokens <= 16);
    assert.ok(r.seconds > 0);
    assert.ok(Math.abs(r.tokensPerSecond - r.completionTokens / r.seconds) < 1e-9);
  });

  // A healthy server's answers that carry no plain text: a reasoning model's (vLLM 0.32 with --reasoning-parser
  // puts it under message.reasoning, content null), and a tiny model's tokens that decode to "".
  it("smoke test: a reasoning model's answer is read from message.reasoning", async () => {
    setFaults(stateDir, head.name, { reasoningParser: true });
    try {
      const r = await run(smokeTest, smokeInput());
      assert.match(r.text, /^Hello! This is/);
      assert.ok(r.completionTokens > 0 && r.completionTokens <= 16);
    } finally {
      setFaults(stateDir, head.name, {});
    }
  });

  it('smoke test: tokens that decode to "" pass, judged by usage.completion_tokens, and report the empty text', async () => {
    setFaults(stateDir, head.name, { emptyCompletionText: true });
    try {
      const r = await run(smokeTest, smokeInput());
      assert.equal(r.text, '');
      assert.ok(r.completionTokens > 0 && r.completionTokens <= 16);
    } finally {
      setFaults(stateDir, head.name, {});
    }
  });

  /** The supervisor's probe with `faults` on the head: its result, the head's probe (reached) and its completion. */
  async function probeWithHeadFaults(faults: Parameters<typeof setFaults>[2]) {
    setFaults(stateDir, head.name, faults);
    try {
      const r = await run(probeServingCluster, probeInput());
      const headProbe = r.hosts.find((h) => h.host === head.name);
      assert.ok(headProbe?.ok, JSON.stringify(r));
      const completion = headProbe.checks.find((c) => c.name === 'completion');
      assert.ok(completion, JSON.stringify(headProbe.checks));
      return { r, headProbe, completion };
    } finally {
      setFaults(stateDir, head.name, {});
    }
  }

  for (const [what, faults] of [
    ['is reasoning', { reasoningParser: true }],
    ['decodes to ""', { emptyCompletionText: true }],
  ] as const) {
    it(`the supervisor's probe finds a healthy server serving when its one token ${what}`, async () => {
      const { headProbe, completion } = await probeWithHeadFaults(faults);
      assert.equal(completion.ok, true, JSON.stringify(headProbe.checks));
      assert.equal(completion.detail, '1 token(s)');
    });
  }

  it("the supervisor's probe quotes a server's error body with serve.env's secrets redacted", async () => {
    // The engine fails every completion with a 500 whose message dumps one of its settings: serve.env's secret.
    const { r, headProbe, completion } = await probeWithHeadFaults({
      completions: 'error',
      completionErrorPrintsEnv: serveSecretEnv,
    });
    assert.equal(completion.ok, false, JSON.stringify(headProbe.checks));
    assert.match(completion.error ?? '', /HTTP 500: .*Engine settings: HF_TOKEN=\[redacted\]/);
    assert.ok(
      !JSON.stringify(r).includes(serveSecret),
      `the probe's result quotes the secret: ${JSON.stringify(r)}`,
    );
    assert.deepEqual(
      headProbe.checks.filter((c) => !c.ok).map((c) => c.name),
      ['completion'],
      'the container, /health and ray status still pass',
    );
  });

  it('a crash while loading shows as a dead process with a fatal line; a retry does not relaunch', async () => {
    // Stop the first server (its vllm process), as removing its container would.
    const vllmPid = launches()[0]?.pid ?? 0;
    process.kill(vllmPid, 'SIGTERM');
    for (let i = 0; i < 100; i++) {
      const alive = await onRemote(head, sh`kill -0 ${servePid}`);
      if (alive.exitCode !== 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    setFaults(stateDir, head.name, { crashAtShard: 2 });

    const launched = await run(launchServe, serveInput('serve-2'));
    assert.equal(launched.reused, false);
    const seen = await pollUntil(launched.pid, (r) => !r.processAlive);
    const fatal = seen.map((r) => r.summary?.fatal).find((f) => f !== undefined);
    assert.ok(fatal, `a fatal log line was reported: ${JSON.stringify(seen.at(-1))}`);
    assert.equal(seen.at(-1)?.health, 'refused');
    assert.ok(seen.at(-1)?.containerRunning, 'the Ray container outlives the server');

    const again = await failureOf(run(launchServe, serveInput('serve-2')));
    assert.equal(again.type, FailureType.serverExited);
    assert.equal(again.nonRetryable, true);
    assert.match(again.message, /SafetensorError|Engine core initialization failed/);
    assert.equal(launches().length, 2, 'the retry did not start a third server');
    setFaults(stateDir, head.name, {});
  });

  it('fails a container that exits right after starting, non-retryable when its log shows a config problem', async () => {
    const err = await failureOf(
      run(startRayWorker, rayInput(worker, 'launch-bad', { headAddress: `${head.clusterIp}:not-a-port` })),
    );
    assert.equal(err.type, FailureType.rayContainerFailed);
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, new RegExp(`${worker.name}.*exited right after it started`));
    assert.match(err.message, /Malformed address/);
    assert.ok(!err.message.includes(hfToken));
  });

  it('names the worker that cannot reach the head and quotes its GCS error', async () => {
    const wrong = `${head.clusterIp}:${rayPort + 11}`;
    await run(startRayWorker, rayInput(worker, 'launch-3', { headAddress: wrong }));
    const env = new MockActivityEnvironment(undefined, { logger: quiet });
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const err = await failureOf(env.run(verifyRayCluster, verifyInput()));
    assert.ok(heartbeats.length >= 5, 'the poll heartbeats while it waits');
    assert.deepEqual(heartbeats.at(-1), { nodes: 1, gpusTotal: 1 });
    assert.equal(err.type, FailureType.rayClusterIncomplete);
    assert.match(err.message, /1 of 2 nodes/);
    assert.match(err.message, new RegExp(`Missing: ${worker.name}`));
    assert.match(
      err.message,
      new RegExp(`Failed to connect to GCS at address ${wrong.replaceAll('.', '\\.')}`),
    );
    assert.equal(err.nonRetryable, true, 'an exited worker container does not come back by polling');
  });

  it('collects diagnostics from every host and reports a downed host as unreachable', async () => {
    await setHostDown(stateDir, worker.name, 'sshd');
    const diags = await run(collectDiagnostics, {
      hosts: [named(head), named(worker)],
      container,
      logPath,
      headName: head.name,
    });
    const [h, w] = diags;
    assert.equal(h?.host, head.name);
    assert.equal(h?.reachable, true);
    assert.match(h?.containerLogTail ?? '', /Ray runtime started/);
    assert.match(h?.rayStatus ?? '', /Node status/);
    assert.match(h?.nvidiaSmi ?? '', /NVIDIA-SMI/);
    assert.match(h?.serveLogTail ?? '', /SafetensorError|Engine core initialization failed/);
    for (const part of [h?.containerLogTail, h?.rayStatus, h?.nvidiaSmi, h?.serveLogTail]) {
      assert.ok(Buffer.byteLength(part ?? '') <= 8 * 1024 + 64);
    }
    assert.ok(!JSON.stringify(diags).includes(apiKey));
    assert.equal(w?.host, worker.name);
    assert.equal(w?.reachable, false);
    assert.ok((w?.errors.length ?? 0) > 0);
  });
});
