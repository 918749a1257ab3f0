// The whole deploy, end to end on two simulated DGX Spark hosts in namespace mode: real Temporal dev server,
// real worker, real sshd (spark2 reachable only through spark1), simulated tools. Every check reads the hosts'
// own state, not liftoff's report of it.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { assertHeadServes } from '../helpers/serving.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy, progressQuery } from '../../src/workflows/index.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import { clusterStatus, setFaults } from '../../sim/cluster.js';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { HostDiagnostics } from '../../src/activities/types.js';
import { simDeploySpec } from '../../sim/spec.js';
import { sshRun } from '../helpers/ssh.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { StatusReport } from '../../src/commands/status.js';
import { liftoffArgv } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait.js';
import type { TargetsReport } from '../../src/commands/metrics.js';

const execFileAsync = promisify(execFile);

const stateDir = suiteStateDir('deploy');

describe('deploy on a simulated 2-host cluster', () => {
  const e2e = useSuiteCluster('deploy', {
    vllm: { shards: 39, shardSeconds: 0.08, graphCaptureSeconds: 0.5 },
  });
  let result: DeployResult;
  let stepTimes: Record<string, { startedAtMs?: number; endedAtMs?: number }> = {};

  before(async () => {
    const spec = simDeploySpec(e2e.sim, { cluster: 'e2e-deploy' });
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'liftoff-e2e-deploy',
      args: [spec, { trigger: 'cli' }],
    });
    result = await handle.result();
    const progress = await handle.query(progressQuery);
    stepTimes = Object.fromEntries(progress.steps.map((s) => [s.name, s]));
  });

  it('stops and disables the old units on every host', async () => {
    for (const host of await clusterStatus(stateDir)) {
      for (const unit of host.units) {
        assert.equal(unit.active, false, `${host.name} ${unit.name} is inactive`);
        assert.equal(unit.enabled, false, `${host.name} ${unit.name} is disabled`);
      }
      assert.equal(host.units.length, 4);
    }
  });

  it('removes the old containers; only the Ray container runs', async () => {
    for (const host of await clusterStatus(stateDir)) {
      const running = host.containers.filter((c) => c.running).map((c) => c.name);
      assert.deepEqual(running, ['vllm_qwen35'], `${host.name} runs only the Ray container`);
    }
  });

  it('had the GPUs clear before Ray started (host container record vs. the verify step)', async () => {
    const verifiedAt = stepTimes.verifyGpusClear?.endedAtMs ?? Infinity;
    for (const h of e2e.sim.hosts) {
      const inspect = await sshRun(e2e.sim, h.name, 'docker inspect --format "{{json .State}}" vllm_qwen35');
      const state = JSON.parse(inspect) as { StartedAt: string };
      assert.ok(
        Date.parse(state.StartedAt) >= verifiedAt - 1000,
        `${h.name}: Ray container started after GPUs were verified clear`,
      );
      // Only the new server's memory is held now: no seeded python3 hog survived.
      const apps = await sshRun(
        e2e.sim,
        h.name,
        'nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader',
      );
      assert.ok(!/python3/.test(apps), `${h.name}: no old GPU process left: ${apps}`);
    }
  });

  it('has a Ray cluster of 2 nodes and 2 GPUs, reserved by the server', async () => {
    const text = await sshRun(e2e.sim, 'spark1', 'docker exec vllm_qwen35 ray status');
    const status = parseRayStatus(text);
    assert.equal(status.activeNodes.length, 2);
    assert.deepEqual(status.resources.GPU, { used: 2, total: 2 });
  });

  it('launched exactly one server', () => {
    const head = e2e.sim.hosts[0]!;
    const launches = readFileSync(join(head.hostDir, 'launches.log'), 'utf8').trim().split('\n');
    assert.equal(launches.length, 1);
  });

  it('serves the model and answered the smoke test', async () => {
    await assertHeadServes(e2e.sim, result);
    assert.ok(result.smoke.tokensPerSecond > 0);
    assert.ok(result.loadSeconds > 3, 'the load took the simulated shard time');
    for (const step of [
      'preflight',
      'stopServices',
      'removeContainers',
      'verifyGpusClear',
      'startRayHead',
      'startRayWorkers',
      'verifyRayCluster',
      'launchServe',
      'waitHealthy',
      'smokeTest',
    ]) {
      assert.ok(
        (result.stepDurationsMs as Record<string, number>)[step] !== undefined,
        `duration of ${step}`,
      );
    }
    process.stdout.write(
      `# deploy took ${result.totalSeconds.toFixed(1)} s, load ${result.loadSeconds.toFixed(1)} s\n`,
    );
  });

  it('`liftoff status` shows the finished deploy with every step, as JSON', async () => {
    const { stdout } = await execFileAsync(
      process.execPath,
      liftoffArgv(['status', 'e2e-deploy', '--json']),
      {
        env: { ...process.env, ...e2e.temporalEnv },
        timeout: 60_000,
      },
    );
    const report = JSON.parse(stdout) as StatusReport;
    assert.equal(report.status, 'COMPLETED');
    assert.equal(report.result?.endpoint, result.endpoint);
    assert.equal(report.progress?.status, 'succeeded');
    assert.ok(report.progress?.steps.every((s) => s.status === 'done' || s.status === 'skipped'));
    assert.equal(report.progress?.load?.phase, 'ready');
  });

  it('`liftoff metrics targets -o FILE` writes the endpoint, named by its head, as file_sd JSON that Prometheus can scrape', async () => {
    const dir = tempDir('liftoff-targets-');
    const file = join(dir, 'vllm.json');
    const env = { ...process.env, ...e2e.temporalEnv };
    const head = simDeploySpec(e2e.sim, { cluster: 'e2e-deploy' }).hosts.find((h) => h.role === 'head');
    const endpoint = new URL(result.endpoint);
    const expected = [{ targets: [endpoint.host], labels: { cluster: 'e2e-deploy', host: head?.name } }];
    // The fleet's records are Temporal's visibility, which may lag the deploy's end by a moment.
    const report = await waitFor(
      'the serving cluster in the targets',
      async () => {
        const { stdout } = await execFileAsync(
          process.execPath,
          liftoffArgv(['metrics', 'targets', '-o', file, '--json']),
          { env, timeout: 60_000 },
        );
        const r = JSON.parse(stdout) as TargetsReport;
        return r.groups.length > 0 ? r : undefined;
      },
      20_000,
      { everyMs: 500 },
    );
    assert.deepEqual(report.withoutSpec, [], 'the worker gave the spec');
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), expected);
    assert.deepEqual(readdirSync(dir), ['vllm.json'], 'no temporary file left');
    const printed = await execFileAsync(process.execPath, liftoffArgv(['metrics', 'targets', '-o', '-']), {
      env,
      timeout: 60_000,
    });
    assert.deepEqual(JSON.parse(printed.stdout), expected);
    // The target serves vLLM's metrics, the smoke test's completion in its TTFT histogram.
    const metrics = await (await fetch(`http://${expected[0]!.targets[0]}/metrics`)).text();
    assert.match(metrics, /^vllm:time_to_first_token_seconds_count\{[^}]*\} [1-9]\d*\.0$/m);
  });

  it('a server crash fails within a poll, with diagnostics from every host, and onFailure: teardown removes the containers', async () => {
    setFaults(stateDir, 'spark1', { crashAtShard: 5 });
    const spec = { ...simDeploySpec(e2e.sim, { cluster: 'e2e-deploy' }), onFailure: 'teardown' };
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'liftoff-e2e-deploy',
      args: [spec, { trigger: 'cli' }],
    });
    const error = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    setFaults(stateDir, 'spark1', {});
    assert.ok(error instanceof WorkflowFailedError);
    const cause = error.cause;
    assert.ok(cause instanceof ApplicationFailure);
    assert.ok(cause.type === 'ServerFatal' || cause.type === 'ServerExited', `type ${cause.type}`);
    assert.match(cause.message, /^waitHealthy failed: .*shard 5\/39/);
    const details = cause.details?.[0] as { diagnostics: HostDiagnostics[]; teardown: string[] };
    assert.deepEqual(details.diagnostics.map((d) => d.host).sort(), ['spark1', 'spark2']);
    const headDiag = details.diagnostics.find((d) => d.host === 'spark1');
    assert.match(headDiag?.serveLogTail ?? '', /Loading safetensors checkpoint shards/);
    assert.match(headDiag?.rayStatus ?? '', /Active:/);
    assert.ok(headDiag?.nvidiaSmi && headDiag.containerLogTail !== undefined);
    assert.deepEqual(details.teardown, [
      'spark1: removed vllm_qwen35 (Ray and the server stopped)',
      'spark2: removed vllm_qwen35 (Ray stopped)',
    ]);
    for (const host of await clusterStatus(stateDir)) {
      assert.deepEqual(
        host.containers.filter((c) => c.running),
        [],
        `${host.name}: nothing left running`,
      );
    }
  });
});
