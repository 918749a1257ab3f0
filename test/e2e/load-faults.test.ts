// Issue 4, scenarios 5 and 11: the server crashes, hangs or runs out of memory during the load, and every
// failure after Ray starts carries redacted diagnostics from every host. Real Temporal dev server, real sshd,
// simulated tools with their fault switches; every timing is measured on the host (the serve log's mtime)
// and in the workflow's history, never taken from liftoff's own report of it.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { hostLogLines } from '../helpers/host-logs.js';
import { sshRun } from '../helpers/ssh.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import type { DeployProgress } from '../../src/workflows/steps.js';
import type { HostDiagnostics } from '../../src/activities/types.js';
import { setFaults, type SimHost } from '../../sim/cluster.js';
import { paths, type HostFaults } from '../../sim/host-state.js';
import { simDeploySpec } from '../../sim/spec.js';

const stateDir = '/tmp/liftoff-test-load-faults';
const clusterName = 'load-faults';
const pollSeconds = 1;
const shards = 6;

type Spec = ReturnType<typeof simDeploySpec>;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const { EventType } = proto.temporal.api.enums.v1;

/** What a failed deploy after Ray started puts in `details[0]` (src/workflows/deploy.ts, StepTracker.fail). */
interface FailureDetails {
  step: string;
  progress: DeployProgress;
  causeDetails: unknown[];
  diagnostics: HostDiagnostics[];
  teardown?: string[];
}

interface FailedDeploy {
  failure: ApplicationFailure;
  history: HistoryEvent[];
  /** Lines the sim's vllm appended to the head's launches.log during this deploy. */
  launches: number;
  /** When the head's serve log was last written, read right after the failure (ms since the epoch). */
  serveLogWrittenAtMs: number;
}

// The real line from fixtures/vllm-logs/fatal.txt, with its figures (IP, node ID, GB, ratio) left open.
const rayOomLine =
  /ray\.exceptions\.OutOfMemoryError: Task was killed due to the node running low on memory\. Memory on the node \(IP: [\d.]+, ID: [0-9a-f]+\) where the task was running was [\d.]+GB \/ [\d.]+GB \([\d.]+\), which exceeds the memory usage threshold of 0\.95\./;
// PyTorch's allocator message (torch/csrc, c10/cuda/CUDACachingAllocator.cpp); fixtures/vllm-logs has no CUDA OOM line.
const cudaOomLine =
  /torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate [\d.]+ GiB\. GPU 0 has a total capacity of [\d.]+ GiB of which [\d.]+ GiB is free\./;
const memoryMonitorHint = /RAY_memory_monitor_refresh_ms/;

function headPath(head: SimHost, remotePath: string): string {
  // The head's /home is its hostDir/home, bind-mounted in its mount namespace.
  return join(paths.home(head.hostDir), relative('/home', remotePath));
}

function eventName(e: HistoryEvent): string {
  return e.eventType != null ? EventType[e.eventType] : 'unknown';
}

/** Each activity's scheduled event id → its activity type, to tell the polls apart from other activities. */
function activityTypes(history: HistoryEvent[]): Map<number, string> {
  const byId = new Map<number, string>();
  for (const e of history) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name && e.eventId != null) byId.set(Number(e.eventId), name);
  }
  return byId;
}

/** Completion times (ms) of the given activity, in history order. */
function completedAtMs(history: HistoryEvent[], activity: string): number[] {
  const types = activityTypes(history);
  return history
    .filter((e) => {
      const id = e.activityTaskCompletedEventAttributes?.scheduledEventId;
      return id != null && types.get(Number(id)) === activity;
    })
    .map((e) => tsToMs(e.eventTime));
}

/** Every text the history holds: its JSON, plus each payload and base64 string decoded as UTF-8. */
function historyTexts(history: HistoryEvent[]): { json: string; decoded: string } {
  const decoded: string[] = [];
  const json = JSON.stringify(history, (_key, value: unknown) => {
    if (value instanceof Uint8Array) {
      decoded.push(Buffer.from(value).toString('utf8'));
      return Buffer.from(value).toString('base64');
    }
    return value;
  });
  for (const m of json.matchAll(/"([A-Za-z0-9+/]{8,}={0,2})"/g)) {
    if (m[1]) decoded.push(Buffer.from(m[1], 'base64').toString('utf8'));
  }
  return { json, decoded: decoded.join('\n') };
}

/** The secret's base64 as it shows inside a longer base64 text, at each of the three byte alignments. */
function base64Forms(secret: string): string[] {
  return ['', 'x', 'xx'].map((pad) => {
    const encoded = Buffer.from(pad + secret).toString('base64');
    // Drop the characters that mix in the padding before and whatever follows after.
    return encoded.slice(Math.ceil((pad.length * 4) / 3), -4);
  });
}

/** Where a secret shows in the history: one entry per event (type and id). */
function secretHits(history: HistoryEvent[], secret: string): string[] {
  const hits: string[] = [];
  for (const e of history) {
    const { json, decoded } = historyTexts([e]);
    const found =
      json.includes(secret) ||
      decoded.includes(secret) ||
      base64Forms(secret).some((form) => form.length >= 8 && json.includes(form));
    const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (found) hits.push(`event ${String(e.eventId)} ${eventName(e)}${activity ? ` (${activity})` : ''}`);
  }
  return hits;
}

describe('load faults: crash, hang, OOM and diagnostics on a simulated cluster', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 10,
    vllm: { shards, shardSeconds: 0.3, graphCaptureSeconds: 0.4 },
    // The worker lets specs read the test's variables (its own setting; LIFTOFF_* never could be).
    workerPolicy: { fromEnv: ['SIM_TEST_RAY_HF_TOKEN', 'SIM_TEST_SERVE_HF_TOKEN', 'SIM_TEST_API_KEY'] },
  });
  let head: SimHost;
  const secrets = {
    rayEnvToken: `ray-env-secret-${randomBytes(9).toString('hex')}`,
    serveEnvToken: `hf_${randomBytes(12).toString('hex')}`,
    apiKey: `sk-sim-${randomBytes(9).toString('hex')}`,
  };
  process.env.SIM_TEST_RAY_HF_TOKEN = secrets.rayEnvToken;
  process.env.SIM_TEST_SERVE_HF_TOKEN = secrets.serveEnvToken;
  process.env.SIM_TEST_API_KEY = secrets.apiKey;
  /** The crash deploy carries the secrets; the diagnostics test reads what it left. */
  let crashed: FailedDeploy | undefined;

  before(() => {
    const first = e2e.sim.hosts[0];
    assert.ok(first);
    head = first;
  });

  function baseSpec(): Spec {
    const spec = simDeploySpec(e2e.sim, { cluster: clusterName });
    spec.serve.pollInterval = `${pollSeconds}s`;
    return spec;
  }

  /** Deploys `spec` with `faults` switched on on the head for this deploy only, expecting it to fail. */
  async function deployExpectingFailure(spec: unknown, faults: HostFaults): Promise<FailedDeploy> {
    setFaults(stateDir, 'spark1', faults);
    try {
      const launchesLog = paths.launches(head.hostDir);
      const launchesBefore = hostLogLines(launchesLog).length;
      const handle = await e2e.client.workflow.start(deploy, {
        taskQueue: TASK_QUEUE,
        workflowId: deployWorkflowId(clusterName),
        args: [spec, { trigger: 'cli' }],
      });
      const error = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      const serveLogWrittenAtMs = statSync(headPath(head, baseSpec().serve.logPath)).mtimeMs;
      assert.ok(error instanceof WorkflowFailedError, `the deploy failed: ${String(error)}`);
      assert.ok(error.cause instanceof ApplicationFailure, `an ApplicationFailure: ${String(error.cause)}`);
      const history = (await handle.fetchHistory()).events ?? [];
      return {
        failure: error.cause,
        history,
        launches: hostLogLines(launchesLog).length - launchesBefore,
        serveLogWrittenAtMs,
      };
    } finally {
      setFaults(stateDir, 'spark1', {});
    }
  }

  function detailsOf(failure: ApplicationFailure): FailureDetails {
    const details = failure.details?.[0] as FailureDetails | undefined;
    assert.ok(details, 'the failure carries details');
    return details;
  }

  it('a crash at shard k fails within a poll interval of the crash, with the log tail and the phase reached', async () => {
    const crashShard = 4;
    const base = baseSpec();
    const spec = {
      ...base,
      // Secrets are references: the worker (this process) resolves them from its own environment.
      ray: { ...base.ray, env: { ...base.ray.env, HF_TOKEN: { fromEnv: 'SIM_TEST_RAY_HF_TOKEN' } } },
      serve: {
        ...base.serve,
        env: {
          ...base.serve.env,
          HF_TOKEN: { fromEnv: 'SIM_TEST_SERVE_HF_TOKEN' },
          VLLM_API_KEY: { fromEnv: 'SIM_TEST_API_KEY' },
        },
      },
    };
    crashed = await deployExpectingFailure(spec, { crashAtShard: crashShard });
    const { failure, history, serveLogWrittenAtMs } = crashed;
    // The references were resolved on the worker and reached the containers (onFailure: leave keeps them).
    for (const h of e2e.sim.hosts) {
      const inspect = await sshRun(e2e.sim, h.name, 'docker inspect vllm_qwen35');
      assert.ok(
        inspect.includes(`HF_TOKEN=${secrets.rayEnvToken}`),
        `${h.name}: the Ray container got HF_TOKEN`,
      );
    }

    const polls = completedAtMs(history, 'checkServeHealth');
    const detectedAtMs = polls[polls.length - 1];
    assert.ok(detectedAtMs !== undefined, 'the history has health polls');
    const lagS = (detectedAtMs - serveLogWrittenAtMs) / 1000;
    const closedAtMs = tsToMs(history[history.length - 1]?.eventTime);
    const phaseNamed = /at phase (\w+)/.exec(failure.message)?.[1] ?? '(none)';
    console.log(
      `FIGURE: crash at shard ${crashShard}/${shards} detected ${lagS.toFixed(1)} s after the crash (pollInterval ${pollSeconds}s, ${polls.length} polls); workflow failed ${((closedAtMs - serveLogWrittenAtMs) / 1000).toFixed(1)} s after the crash with diagnostics; message names phase "${phaseNamed}"`,
    );

    assert.equal(failure.type, 'ServerFatal', failure.message);
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /^waitHealthy failed: /);
    assert.ok(lagS > 0, `the failing poll completed after the crash (lag ${lagS.toFixed(2)} s)`);
    assert.ok(
      lagS < 3 * pollSeconds + 5,
      `detected within a few poll intervals of the crash, not at the 5m deadline (${lagS.toFixed(1)} s)`,
    );
    // The tail quoted in the message shows the cause and how far the load got.
    const tail = failure.message.split('--- serve log tail ---\n')[1] ?? '';
    assert.match(tail, /SafetensorError: Error while deserializing header/);
    assert.match(tail, new RegExp(`Loading safetensors checkpoint shards: .*\\| ${crashShard}/${shards} `));
    assert.match(failure.message, new RegExp(`shard ${crashShard}/${shards}\\b`), 'names the shard');
    assert.equal(phaseNamed, 'loading_weights', 'names the phase the load had reached, not "failed"');
  });

  it('a hang (log still, process alive) fails as ServerHung after serve.stallTimeout, naming the window and the shard', async () => {
    const hangShard = 3;
    const spec = baseSpec();
    spec.serve.stallTimeout = '6s';
    const { failure, history, serveLogWrittenAtMs } = await deployExpectingFailure(spec, {
      hangAtShard: hangShard,
    });

    assert.equal(failure.type, 'ServerHung', failure.message);
    assert.match(failure.message, /serve\.stallTimeout 6s/);
    assert.match(failure.message, /its log has not moved for [\d.]+m?s/);
    assert.match(failure.message, new RegExp(`shard ${hangShard}/${shards}\\b`));
    assert.match(failure.message, /while the process is alive/);

    // Still alive on the host: both the launcher liftoff watches and the vllm process the sim recorded.
    const marker = JSON.parse(readFileSync(`${headPath(head, spec.serve.logPath)}.liftoff.json`, 'utf8')) as {
      pid: number;
    };
    const launches = readFileSync(paths.launches(head.hostDir), 'utf8').trim().split('\n');
    const vllmPid = (JSON.parse(launches[launches.length - 1] ?? '{}') as { pid?: number }).pid;
    assert.ok(vllmPid, 'launches.log names the vllm pid');
    const alive = await sshRun(
      e2e.sim,
      'spark1',
      `for p in ${marker.pid} ${vllmPid}; do kill -0 $p 2>/dev/null && echo "$p alive"; done; true`,
    );
    assert.match(alive, new RegExp(`^${marker.pid} alive$`, 'm'), 'the launcher still runs');
    assert.match(alive, new RegExp(`^${vllmPid} alive$`, 'm'), 'the hung vllm still runs');

    const polls = completedAtMs(history, 'checkServeHealth');
    const detectedAtMs = polls[polls.length - 1];
    assert.ok(detectedAtMs !== undefined);
    const stillS = (detectedAtMs - serveLogWrittenAtMs) / 1000;
    console.log(
      `FIGURE: hang at shard ${hangShard}/${shards} reported as ServerHung ${stillS.toFixed(1)} s after the last log line (stallTimeout 6s, pollInterval ${pollSeconds}s); process alive`,
    );
    assert.ok(stillS >= 6, `not before the stall window (${stillS.toFixed(1)} s)`);
    assert.ok(stillS < 6 + 3 * pollSeconds + 5, `soon after the stall window (${stillS.toFixed(1)} s)`);
  });

  it('OOM at CUDA graph capture fails non-retryably; the message names RAY_memory_monitor_refresh_ms only when it was not "0"', async () => {
    const fixture = readFileSync('/work/shared/fixtures/vllm-logs/fatal.txt', 'utf8');
    assert.match(fixture, rayOomLine, 'the expected Ray OOM line is the one in the fixtures');

    /** A deploy of `spec` whose vllm runs out of memory at graph capture: fatal, never relaunched. */
    async function deployOomAtGraphCapture(spec: unknown): Promise<FailedDeploy> {
      const failed = await deployExpectingFailure(spec, { oomAtGraphCapture: true });
      assert.equal(failed.failure.type, 'ServerFatal', failed.failure.message);
      assert.equal(failed.failure.nonRetryable, true);
      assert.equal(failed.launches, 1, 'vllm was launched once: no relaunch after a fatal OOM');
      return failed;
    }

    const unset = baseSpec();
    const { RAY_memory_monitor_refresh_ms: _monitorOff, ...rayEnvWithoutIt } = unset.ray.env;
    const monitorOn = await deployOomAtGraphCapture({
      ...unset,
      ray: { ...unset.ray, env: rayEnvWithoutIt },
    });
    assert.match(monitorOn.failure.message, /\(ray_oom\)/);
    assert.match(monitorOn.failure.message, rayOomLine);
    assert.match(
      monitorOn.failure.message,
      /RAY_memory_monitor_refresh_ms was not set to "0" at `ray start`/,
    );
    // The quoted tail shows where it died.
    assert.match(monitorOn.failure.message, /\nCapturing CUDA graphs \(/);

    const monitorOff = await deployOomAtGraphCapture(baseSpec());
    assert.match(monitorOff.failure.message, /\(cuda_oom\)/);
    assert.match(monitorOff.failure.message, cudaOomLine);
    assert.doesNotMatch(monitorOff.failure.message, memoryMonitorHint);
    assert.doesNotMatch(monitorOff.failure.message, /ray\.exceptions\.OutOfMemoryError/);

    console.log(
      `FIGURE: OOM at CUDA graph capture: RAY_memory_monitor_refresh_ms unset → ${monitorOn.failure.type} (ray_oom) with the hint, non-retryable, ${monitorOn.launches} launch; set to "0" → ${monitorOff.failure.type} (cuda_oom), no hint, ${monitorOff.launches} launch`,
    );
  });

  it('a serve.args flag vLLM does not know fails at once as ServerFatal naming it, never waiting for serve.loadTimeout', async () => {
    const spec = baseSpec();
    spec.serve.args = [...spec.serve.args, '--bogus-flag'];
    const started = Date.now();
    const { failure, history, launches } = await deployExpectingFailure(spec, {});
    const seconds = (Date.now() - started) / 1000;
    const launchedAtMs = completedAtMs(history, 'launchServe')[0];
    assert.ok(launchedAtMs !== undefined, 'vllm serve was launched');
    const afterLaunchS = (tsToMs(history[history.length - 1]?.eventTime) - launchedAtMs) / 1000;
    console.log(
      `FIGURE: --bogus-flag in serve.args failed the deploy as ${failure.type} ${afterLaunchS.toFixed(1)} s after launchServe (${seconds.toFixed(1)} s in all, pollInterval ${pollSeconds}s, loadTimeout ${spec.serve.loadTimeout})`,
    );
    assert.equal(failure.type, 'ServerFatal', failure.message);
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /^waitHealthy failed: vllm failed \(bad_arguments\) at phase starting: /);
    assert.match(failure.message, /vllm: error: unrecognized arguments: --bogus-flag\n/);
    assert.match(failure.message, /refused its arguments \(--bogus-flag\): fix serve\.args in the spec/);
    assert.equal(launches, 0, 'the refused vllm recorded no launch');
    assert.ok(
      afterLaunchS < 3 * pollSeconds + 5,
      `within a few polls of the launch (${afterLaunchS.toFixed(1)} s)`,
    );
  });

  it('a failure after Ray starts carries diagnostics from every host, with no secret anywhere in the history', () => {
    assert.ok(crashed, 'the crash deploy ran (first test)');
    const { failure, history } = crashed;
    const details = detailsOf(failure);
    assert.equal(details.step, 'waitHealthy');

    const hosts = e2e.sim.hosts.map((h) => h.name);
    assert.deepEqual(details.diagnostics.map((d) => d.host).sort(), [...hosts].sort());
    // Every missing section is listed, so one run shows all that is wrong.
    const missing: string[] = [];
    const present: string[] = [];
    const expect = (ok: boolean, what: string) => {
      if (!ok) missing.push(what);
    };
    for (const d of details.diagnostics) {
      expect(d.reachable, `${d.host}: reachable`);
      expect(d.errors.length === 0, `${d.host}: no collection errors (${d.errors.join('; ')})`);
      expect(/\S/.test(d.containerLogTail ?? ''), `${d.host}: container log tail`);
      expect(/NVIDIA-SMI/.test(d.nvidiaSmi ?? ''), `${d.host}: nvidia-smi`);
      expect(/Active:/.test(d.rayStatus ?? ''), `${d.host}: ray status`);
      if (d.host === head.name) {
        expect(/SafetensorError/.test(d.serveLogTail ?? ''), `${d.host}: serve log tail`);
      }
      const sections = (['containerLogTail', 'rayStatus', 'nvidiaSmi', 'serveLogTail'] as const).filter(
        (k) => (d[k] ?? '') !== '',
      );
      present.push(`${d.host}: ${sections.join('+')}`);
    }

    const { json, decoded } = historyTexts(history);
    const found = Object.entries(secrets).flatMap(([name, value]) =>
      secretHits(history, value).map((where) => `${name} in ${where}`),
    );
    // What liftoff itself writes (the failure's message and details) is checked apart from the inputs it was given.
    const failureText = JSON.stringify({ message: failure.message, details: failure.details });
    const inFailure = Object.entries(secrets)
      .filter(([, value]) => failureText.includes(value))
      .map(([name]) => name);
    console.log(
      `FIGURE: diagnostics from ${details.diagnostics.length} hosts [${present.join('; ')}]; ${history.length} history events, ${json.length + decoded.length} bytes scanned; ${found.length} secret occurrences found`,
    );
    assert.deepEqual(
      { missing, inFailure, found },
      { missing: [], inFailure: [], found: [] },
      'every host reports every section; no secret value (plain, JSON-escaped or base64) anywhere in the history',
    );
  });
});
