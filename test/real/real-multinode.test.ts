// serve.backend: multiproc for real: liftoff (a real Temporal dev server, a worker, real sshd) deploys vLLM 0.32's
// CPU build in its own multi-node mode (no Ray) across two simulated hosts (spark2 reachable only through
// spark1), tensor parallel 2, one rank on each host, serving the generated model. Each host runs its own real
// Docker Engine (sim/real-docker.ts): a rank is a real `--network host` container whose main process is the real
// `vllm serve --nnodes 2 --node-rank R … [--headless]` that liftoff's startRank builds
// (src/host-commands/multiproc.ts says why each flag and variable is there), with the real vLLM mounted in and the
// weights from the host's cache mounted by the spec's volume (sim/real-tools.ts). systemctl and nvidia-smi stay
// simulated. Runs alone (scripts/test.ts): two real vLLM ranks take both cores. Timings are printed as FIGURE
// lines, never asserted.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
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
import { progressQuery } from '../../src/workflows/deploy.js';
import { multiprocSkipsRay, rayOnlySteps } from '../../src/config/backend.js';
import { FailureType } from '../../src/shared/failures.js';
import type { SimCluster, SimHost } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { isRunning } from '../../sim/processes.js';
import { containerProcesses } from '../../sim/real-docker.js';
import { realModels } from '../../sim/real-tools.js';

const stateDir = '/tmp/liftoff-test-real-multinode';
const cluster = 'e2e-real-multinode';
const serveLog = '/home/aurora/vllm-real-rank.log';
const container = 'vllm_qwen35';
const apiPort = 30000;
const masterPort = 29501;

/** The sim's spec as a multiproc spec for the real vLLM: tensor parallel 2, one rank per host, no Ray field. */
function multiprocSpec(sim: SimCluster, distributedTimeout = '2m') {
  const base = simDeploySpec(sim, { cluster });
  const { port: _port, verifyTimeout: _verify, ...ray } = base.ray;
  return {
    ...base,
    ray,
    serve: {
      ...base.serve,
      backend: 'multiproc' as const,
      masterPort,
      distributedTimeout,
      model: realModels.tiny,
      tensorParallelSize: 2,
      // Past tensor parallel 1 vLLM compiles its vocabulary-parallel embedding's mask with torch.compile whatever
      // --enforce-eager says, and Inductor needs g++, Python's headers and openssl at run time, which the small
      // image lacks (`InvalidCxxCompiler: No working C++ compiler found`, and the first completion fails with
      // HTTP 500): eager torch instead.
      ...realCpuServe(serveLog, { TORCH_COMPILE_DISABLE: '1' }),
    },
    // Few tokens: on 2 shared cores a token of tensor parallel 2 over gloo took over a second.
    smoke: { prompt: 'Reply with one word: ready?', maxTokens: 4 },
    onFailure: 'teardown' as const,
  };
}

const ipPattern = (ip: string): string => ip.replaceAll('.', '\\.');

/** A rank's log on its host: liftoff copies the rank container's output to serve.logPath there. */
function rankLog(h: SimHost): string {
  const file = onDisk(h, serveLog);
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/**
 * The host pid of a rank container's main process, the real `vllm serve` (the image's `vllm` exec'd the venv's):
 * what the host's engine names as the container's process. Undefined when the container does not run.
 */
async function realVllmMain(h: SimHost): Promise<number | undefined> {
  const [main] = await containerProcesses(h, container);
  if (main === undefined) return undefined;
  const cmd = readFileSync(`/proc/${main}/cmdline`, 'utf8');
  assert.match(
    cmd,
    /\/bin\/python[\d.]*\0\S*\/bin\/vllm\0serve\0/,
    `${h.name}: the container's main process`,
  );
  return main;
}

/** The cluster's liftoff containers on a host: name, role and backend labels. */
async function rankContainers(sim: SimCluster, hostName: string): Promise<string[]> {
  const out = await sshRun(
    sim,
    hostName,
    `docker ps --filter label=liftoff.cluster=${cluster} --format '{{.Names}} {{.Label "liftoff.role"}} {{.Label "liftoff.backend"}}'`,
  );
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

describe("liftoff's multiproc backend against the real vLLM (CPU build, no Ray), one rank on each of two hosts", () => {
  const e2e = useRealCluster({ stateDir, netIndex: 25 });
  let sim: SimCluster;
  before(() => {
    sim = e2e.sim;
  });

  const start = (spec: ReturnType<typeof multiprocSpec>): Promise<DeployHandle> =>
    startDeploy(e2e.client, spec, 'cli');

  it('deploys: rank 1 headless on spark2 first, rank 0 on spark1 serving with tensor parallel 2, Ray steps skipped', async () => {
    const load = loadAverage();
    const [spark1, spark2] = [host(sim, 'spark1'), host(sim, 'spark2')];
    const handle = await start(multiprocSpec(sim));
    const result = await handle.result();
    const progress = await handle.query(progressQuery);

    // The steps: Ray's skipped with the reason, the ranks started in launchServe, headless first.
    for (const name of rayOnlySteps) {
      assert.equal(step(progress, name).status, 'skipped', name);
      assert.equal(step(progress, name).detail, multiprocSkipsRay, name);
    }
    assert.equal(step(progress, 'launchServe').detail, 'spark1: rank 0; spark2: rank 1 (headless)');
    assert.equal(progress.load?.phase, 'ready');

    // Each host's engine runs its rank's container, labelled by liftoff, whose main process is the real vLLM rank.
    assert.deepEqual(await rankContainers(sim, 'spark1'), [`${container} rank0 multiproc`]);
    assert.deepEqual(await rankContainers(sim, 'spark2'), [`${container} rank1 multiproc`]);
    for (const [h, rank] of [
      [spark1, '0'],
      [spark2, '1'],
    ] as const) {
      const main = await realVllmMain(h);
      assert.ok(main !== undefined, `rank ${rank}'s real vllm runs in ${h.name}'s container`);
      const argv = readFileSync(`/proc/${main}/cmdline`, 'utf8').split('\0');
      assert.equal(argv[argv.indexOf('--node-rank') + 1], rank);
      assert.equal(argv.includes('--headless'), rank === '1', argv.join(' '));
    }

    // Both ranks' real logs: rank 1 ran the CLI's headless path and joined the group as TP rank 1; rank 0
    // joined as TP rank 0 and serves the API.
    const log1 = rankLog(spark2);
    assert.match(
      log1,
      new RegExp(
        `Launching vLLM \\(v[\\d.]+\\) headless multiproc executor, with head node address ${ipPattern(spark1.clusterIp)}:${masterPort}`,
      ),
    );
    assert.match(log1, /rank 1 in world size 2 is assigned as .*TP rank 1\b/);
    assert.doesNotMatch(log1, /APIServer|Starting vLLM (API )?server/, 'rank 1 runs no API server');
    const log0 = rankLog(spark1);
    assert.match(log0, /rank 0 in world size 2 is assigned as .*TP rank 0\b/);
    assert.match(log0, /Starting vLLM (API )?server on/);
    assert.doesNotMatch(log0 + log1, /does not support ray|ray\.init/i, 'no Ray anywhere');

    // The endpoint, from this machine: the model listed, and a completion served by both ranks.
    const base = `http://${spark1.address}:${apiPort}`;
    assert.equal(result.endpoint, `${base}/v1`);
    const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
    assert.deepEqual(
      models.data.map((m) => m.id),
      [realModels.tiny],
    );
    assert.ok(result.smoke.text.length > 0, 'real tokens from the smoke test');
    assert.ok(result.smoke.completionTokens > 0);
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // One token: the fingerprint is the point, and each token costs a gloo round trip between the ranks.
      body: JSON.stringify({ model: realModels.tiny, prompt: 'Reply with one word: ready?', max_tokens: 1 }),
      signal: AbortSignal.timeout(60_000),
    });
    const body = (await res.json()) as { system_fingerprint?: string; choices?: { text?: string }[] };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.match(body.system_fingerprint ?? '', /-tp2-/, 'served with tensor parallel 2');

    // What a user reads: status and the postmortem show the skipped Ray steps and why.
    const env = { ...process.env, ...e2e.temporalEnv };
    const status = await runLiftoff(['status', cluster], env);
    assert.equal(status.code, 0, status.stderr);
    assert.ok(status.stdout.includes(multiprocSkipsRay), status.stdout);
    const postmortem = await runLiftoff(['postmortem', cluster], env);
    assert.equal(postmortem.code, 0, postmortem.stderr);
    assert.match(postmortem.stdout, /succeeded/);
    assert.ok(postmortem.stdout.includes(multiprocSkipsRay), postmortem.stdout);

    console.log(
      `FIGURE: real multiproc deploy (vLLM --nnodes 2, tp 2, CPU, through liftoff): total ${result.totalSeconds.toFixed(1)} s; ` +
        `time to healthy ${result.loadSeconds.toFixed(1)} s; launchServe (both ranks' containers) ${seconds(step(progress, 'launchServe').durationMs ?? NaN)}; ` +
        `smoke ${result.smoke.completionTokens} tokens at ${result.smoke.tokensPerSecond.toFixed(1)} tok/s ${JSON.stringify(result.smoke.text)}, ` +
        `fingerprint ${body.system_fingerprint ?? '?'}; load average ${load}`,
    );
  });

  it('the headless rank SIGKILLed mid-load fails the deploy as RankExited naming spark2, and rank 0 is torn down', async () => {
    const load = loadAverage();
    const [spark1, spark2] = [host(sim, 'spark1'), host(sim, 'spark2')];
    const handle = await start(multiprocSpec(sim));
    // Mid-load: the deploy is in waitHealthy (so the log is this launch's: startRank truncated it), rank 1 has
    // met rank 0 at the store and joined the group, and rank 0 does not serve yet.
    const deadline = Date.now() + 300_000;
    while (step(await handle.query(progressQuery), 'waitHealthy').status !== 'running') {
      assert.ok(Date.now() < deadline, 'timed out waiting for the deploy to reach waitHealthy');
      await new Promise((r) => setTimeout(r, 100));
    }
    const pid = await waitFor(
      "rank 1 to join the group, in this launch's log",
      () => {
        if (!/rank 1 in world size 2 is assigned as .*TP rank 1\b/.test(rankLog(spark2))) return undefined;
        return realVllmMain(spark2);
      },
      300_000,
      { everyMs: 100 },
    );
    const rank0 = await realVllmMain(spark1);
    assert.ok(rank0 !== undefined, "rank 0's real vllm runs on spark1");
    const before = await handle.query(progressQuery);
    assert.equal(step(before, 'waitHealthy').status, 'running', 'killed during the load');
    assert.notEqual(before.load?.phase, 'ready', 'killed during the load');
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();

    const failed = await deployFailure(handle);
    assert.equal(failed.type, FailureType.rankExited, failed.message);
    assert.match(failed.message, /rank 1 on spark2 exited at phase [^:]+: container vllm_qwen35 is exited/);
    const detected = (step(failed.progress, 'waitHealthy').endedAtMs ?? NaN) - killedAt;

    // The failed rank leaves rank 0 waiting for it: the deploy removed every rank, whatever onFailure says.
    assert.deepEqual(await rankContainers(sim, 'spark1'), []);
    assert.deepEqual(await rankContainers(sim, 'spark2'), []);
    await waitFor("rank 0's real vLLM to be gone", () => (isRunning(rank0) ? undefined : true), 30_000, {
      everyMs: 100,
    });
    console.log(
      `FIGURE: real multiproc, headless rank SIGKILLed mid-load: RankExited ${seconds(detected)} after the kill ` +
        `(serve.pollInterval 1s); ${failed.message.split('\n')[0]}; load average ${load}`,
    );
  });

  it("a headless rank that cannot reach the master fails the deploy as MasterUnreachable with torch's own line, naming spark2", async () => {
    const load = loadAverage();
    const [spark1, spark2] = [host(sim, 'spark1'), host(sim, 'spark2')];
    assert.ok(spark2.netns);
    const timeoutSeconds = 5;
    // A rule in spark2's namespace makes TCP to the master port unreachable; SSH still passes. It goes in once
    // preflight has passed (preflight reads the port on the head, not from the ranks): a path that breaks later.
    let unblock: (() => void) | undefined;
    try {
      const handle = await start(multiprocSpec(sim, `${timeoutSeconds}s`));
      const passed = await untilPreflightPassed(handle);
      assert.notEqual(step(passed, 'launchServe').status, 'done', 'the rule is in before the ranks start');
      unblock = blockTcpPort(spark2.netns, masterPort);
      const failed = await deployFailure(handle);
      // torch's own lines (c10d's TCPStore client): its retries within --distributed-timeout-seconds, then the
      // exception once they are spent. With the network unreachable (not a refused port) the last error is named.
      const log = rankLog(spark2);
      const store = `\\(${ipPattern(spark1.clusterIp)}, ${masterPort}\\)`;
      assert.match(log, new RegExp(`retrying \\(try=0, timeout=${timeoutSeconds * 1000}ms`));
      const torchLine = new RegExp(
        `DistNetworkError: The client socket has failed to connect to any network address of ${store}`,
      );
      assert.match(log, torchLine);
      assert.equal(failed.type, FailureType.masterUnreachable, failed.message);
      assert.match(
        failed.message,
        /rank 1 on spark2 failed at phase [^:]+: it cannot reach rank 0's store at /,
      );
      assert.match(failed.message, torchLine);
      const launched = step(failed.progress, 'launchServe').endedAtMs ?? NaN;
      const failedAt = step(failed.progress, 'waitHealthy').endedAtMs ?? NaN;
      assert.deepEqual(await rankContainers(sim, 'spark1'), [], 'rank 0 is not left waiting');
      console.log(
        `FIGURE: real multiproc, master port unreachable from the headless rank (--distributed-timeout-seconds ${timeoutSeconds}): ` +
          `MasterUnreachable ${seconds(failedAt - launched)} after the ranks started; ${failed.message.split('\n')[0]}; load average ${load}`,
      );
    } finally {
      unblock?.();
    }
  });
});
