// Issue 29, the cluster's life, on two simulated hosts that each run a real Docker Engine, with the real dev server
// and worker: `liftoff down` of a serving supervised cluster and of one mid-load, two clusters on the same hosts
// (refused in preflight, then handed over), and `liftoff status` without a cluster. Every container check asks
// the hosts' own Docker. Times are printed as figures, never asserted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { WorkflowFailedError, WithStartWorkflowOperation } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { stringify } from 'yaml';
import { useSuiteCluster } from '../helpers/suites.js';
import { runLiftoff } from '../helpers/cli.js';
import { sshRun } from '../helpers/ssh.js';
import { waitFor } from '../helpers/wait.js';
import { simDeploySpec } from '../../sim/spec.js';
import { paths, type HostConfig } from '../../sim/host-state.js';
import { plan } from '../../src/workflows/index.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { TASK_QUEUE, deployWorkflowId, superviseWorkflowId } from '../../src/shared/constants.js';
import {
  clusterWorkflowId,
  holdUpdate,
  releaseUpdate,
  type ClusterRecord,
} from '../../src/shared/cluster-api.js';
import { progressQuery } from '../../src/workflows/deploy.js';
import { supervisionQuery } from '../../src/workflows/supervise-api.js';
import type { DownResult } from '../../src/workflows/down.js';
import { fleetStatus, type FleetReport } from '../../src/commands/fleet-status.js';
import { formatDuration } from '../../src/config/duration.js';

const fast = { interval: '2s', failureThreshold: 2, backoff: '1s', maxRelaunches: 3, window: '1h' };

describe('the cluster’s life: down, hosts held by one cluster, the fleet view', () => {
  const e2e = useSuiteCluster('lifecycle', {
    docker: 'real',
    vllm: { shards: 6, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
  });
  const figures: string[] = [];
  let dir: string;
  let cliEnv: NodeJS.ProcessEnv;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-lifecycle-'));
    cliEnv = { ...process.env, ...e2e.temporalEnv };
  });
  after(() => {
    process.stdout.write(figures.map((f) => `# FIGURE: ${f}\n`).join(''));
    rmSync(dir, { recursive: true, force: true });
  });

  const specOf = (cluster: string, container: string, extra: Record<string, unknown> = {}) => {
    const base = simDeploySpec(e2e.sim, { cluster });
    return { ...base, ray: { ...base.ray, container }, supervise: fast, ...extra };
  };
  const liftoff = (args: string[]) => runLiftoff(args, cliEnv);
  /** `docker ps -a` on the host as NAME CLUSTER-LABEL lines. */
  const containers = async (host: string): Promise<string[]> =>
    (await sshRun(e2e.sim, host, `docker ps -a --format '{{.Names}} {{.Label "liftoff.cluster"}}'`))
      .split('\n')
      .filter((l) => l.trim() !== '');
  const supervisedAndServing = (cluster: string) =>
    waitFor(
      `${cluster} supervised and serving`,
      async () => {
        const s = await e2e.client.workflow
          .getHandle(superviseWorkflowId(cluster))
          .query(supervisionQuery)
          .catch(() => undefined);
        return s && s.status === 'serving' && s.rounds >= 1 ? s : undefined;
      },
      120_000,
    );
  const deployServing = async (cluster: string, container: string) => {
    const result = await (await startDeploy(e2e.client, specOf(cluster, container), 'cli')).result();
    await supervisedAndServing(cluster);
    return result;
  };
  const modelsAnswer = async (): Promise<number> =>
    (await fetch(`http://${e2e.sim.hosts[0]!.address}:30000/v1/models`).catch(() => undefined))?.status ?? 0;

  it('down of a serving, supervised cluster: containers gone on both hosts, GPUs clear, supervisor ended, recorded; a second down says already down', async () => {
    await deployServing('qwen', 'vllm_qwen');
    for (const h of e2e.sim.hosts) assert.ok((await containers(h.name)).includes('vllm_qwen qwen'), h.name);
    const down = await liftoff(['down', 'qwen', '--json']);
    assert.equal(down.code, 0, down.stdout + down.stderr);
    const result = JSON.parse(down.stdout) as DownResult;
    assert.equal(result.alreadyDown, false);
    assert.deepEqual(
      result.hosts.map((h) => [h.host, h.gpus]),
      e2e.sim.hosts.map((h) => [h.name, 'clear']),
    );
    assert.match(result.hosts[0]!.removed, /removed vllm_qwen/);
    assert.ok(
      result.ended.some((e) => /supervisor liftoff-qwen-supervise stopped/.test(e)),
      result.ended.join('; '),
    );
    for (const h of e2e.sim.hosts)
      assert.deepEqual(
        (await containers(h.name)).filter((c) => c.includes('qwen')),
        [],
        `${h.name}: no container of qwen is left`,
      );
    assert.equal(await modelsAnswer(), 0, 'the server port is closed');
    const supervisor = await e2e.client.workflow.getHandle(superviseWorkflowId('qwen')).describe();
    assert.equal(supervisor.status.name, 'COMPLETED');
    assert.match(
      JSON.stringify(supervisor.memo?.supervise),
      /"status":"stopped","reason":"taken down by liftoff-down:qwen/,
    );
    const record = (await e2e.client.workflow.getHandle(clusterWorkflowId('qwen')).result()) as ClusterRecord;
    assert.equal(record.state, 'down');
    // The down itself is in the cluster's history, with its trigger.
    const downs = [];
    for await (const wf of e2e.client.workflow.list({
      query: `WorkflowType = 'down' AND LiftoffCluster = 'qwen' AND LiftoffTrigger = 'down'`,
    }))
      downs.push(wf);
    assert.equal(downs.length, 1);
    figures.push(
      `liftoff down on 2 hosts (serving, supervised, real Docker): ${formatDuration(down.ms)} (whole CLI process)`,
    );

    const again = await liftoff(['down', 'qwen']);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, /qwen is already down \(taken down by liftoff-down:qwen/);
    const unknown = await liftoff(['down', 'no-such-cluster']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no cluster no-such-cluster is known/);
  });

  it('down during a load cancels the deploy and tears down what it started', async () => {
    const configs = e2e.sim.hosts.map((h) => paths.config(h.hostDir));
    const saved = configs.map((f) => readFileSync(f, 'utf8'));
    try {
      for (const f of configs) {
        const cfg = JSON.parse(readFileSync(f, 'utf8')) as HostConfig;
        writeFileSync(f, JSON.stringify({ ...cfg, vllm: { ...cfg.vllm, shards: 60, shardSeconds: 0.5 } }));
      }
      const handle = await startDeploy(e2e.client, specOf('mini', 'vllm_mini'), 'cli');
      await waitFor(
        'the load',
        async () => {
          const p = await handle.query(progressQuery).catch(() => undefined);
          return p?.steps.find((s) => s.name === 'waitHealthy')?.status === 'running' ? true : undefined;
        },
        120_000,
      );
      const down = await liftoff(['down', 'mini', '--json']);
      assert.equal(down.code, 0, down.stdout + down.stderr);
      const result = JSON.parse(down.stdout) as DownResult;
      assert.ok(result.ended.includes('deploy liftoff-mini cancelled'), result.ended.join('; '));
      await assert.rejects(handle.result(), (err: unknown) => err instanceof WorkflowFailedError);
      assert.equal((await handle.describe()).status.name, 'CANCELLED');
      for (const h of e2e.sim.hosts)
        assert.deepEqual(
          (await containers(h.name)).filter((c) => c.includes('mini')),
          [],
          h.name,
        );
      assert.deepEqual(
        result.hosts.map((h) => h.gpus),
        ['clear', 'clear'],
      );
    } finally {
      configs.forEach((f, i) => writeFileSync(f, saved[i]!));
    }
  });

  it('a second cluster on the same hosts: refused in preflight naming the first, with nothing stopped; then handed over with --take-over', async () => {
    await deployServing('qwen', 'vllm_qwen');
    const qwenDeployRun = (await e2e.client.workflow.getHandle(deployWorkflowId('qwen')).describe()).runId;

    const refused = await startDeploy(e2e.client, specOf('glm', 'vllm_glm'), 'cli');
    const err = await refused.result().then(
      () => assert.fail('glm deployed onto hosts qwen holds'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowFailedError);
    const cause = err.cause instanceof ApplicationFailure ? err.cause : undefined;
    assert.equal(cause?.type, 'HostsHeld', String(err.cause));
    assert.match(
      cause?.message ?? '',
      /nothing was stopped or removed: spark1, spark2 are held by cluster qwen \(serving/,
    );
    assert.match(cause?.message ?? '', /liftoff down qwen.*--take-over/);
    const steps = (await refused.query(progressQuery)).steps;
    assert.equal(steps.find((s) => s.name === 'preflight')?.status, 'failed');
    assert.equal(steps.find((s) => s.name === 'stopServices')?.status, 'pending');
    assert.equal(await modelsAnswer(), 200, 'qwen still serves');

    const file = join(dir, 'glm.yaml');
    writeFileSync(file, stringify(specOf('glm', 'vllm_glm')));
    // The plan refuses as the deploy does, naming the holder; with takeOver it says whom it takes over from.
    const planOf = (spec: unknown) =>
      e2e.client.workflow.execute(plan, {
        taskQueue: TASK_QUEUE,
        workflowId: 'liftoff-plan-glm',
        args: [spec],
      });
    const refusedPlan = await planOf(specOf('glm', 'vllm_glm'));
    assert.equal(refusedPlan.wouldStart, false);
    assert.match(refusedPlan.problems.join('\n'), /spark1, spark2 are held by cluster qwen/);
    const takeOverPlan = await planOf({ ...specOf('glm', 'vllm_glm'), takeOver: true });
    assert.deepEqual([takeOverPlan.wouldStart, takeOverPlan.takesOverFrom], [true, ['qwen']]);
    const startedAtMs = Date.now();
    const taken = await liftoff(['deploy', '-c', file, '--take-over', '--follow', '--json']);
    assert.equal(taken.code, 0, taken.stdout + taken.stderr);
    const supervisor = await e2e.client.workflow.getHandle(superviseWorkflowId('qwen')).describe();
    assert.equal(supervisor.status.name, 'COMPLETED');
    assert.match(
      JSON.stringify(supervisor.memo?.supervise),
      /"status":"stopped","reason":"handed over to glm by liftoff-glm \(trigger cli\)"/,
    );
    figures.push(
      `handover: ${formatDuration((supervisor.closeTime?.getTime() ?? 0) - startedAtMs)} from glm's deploy start to qwen's supervisor ending; glm serving after ${formatDuration(taken.ms)}`,
    );
    const qwen = (await e2e.client.workflow.getHandle(clusterWorkflowId('qwen')).result()) as ClusterRecord;
    assert.equal(qwen.state, 'handed over');
    // glm's cleanup does not name vllm_qwen: qwen's record did.
    assert.ok(!JSON.stringify(specOf('glm', 'vllm_glm').cleanup).includes('vllm_qwen'));
    for (const h of e2e.sim.hosts) {
      const names = await containers(h.name);
      assert.ok(names.includes('vllm_glm glm'), `${h.name}: ${names.join(', ')}`);
      assert.deepEqual(
        names.filter((c) => c.includes('qwen')),
        [],
        h.name,
      );
    }
    // Three supervise intervals and more: qwen's supervisor never relaunches it into glm's hosts.
    await new Promise((r) => setTimeout(r, 8_000));
    assert.equal(
      (await e2e.client.workflow.getHandle(deployWorkflowId('qwen')).describe()).runId,
      qwenDeployRun,
    );
    for (const h of e2e.sim.hosts)
      assert.deepEqual(
        (await containers(h.name)).filter((c) => c.includes('qwen')),
        [],
      );
    assert.equal(await modelsAnswer(), 200, 'glm serves');
  });

  it('status without a cluster: every cluster a line, from Temporal alone; --json; 20 clusters timed', async () => {
    const text = await liftoff(['status']);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trim().split('\n');
    assert.match(
      lines[0] ?? '',
      /^CLUSTER\s+STATE\s+REV\s+ENDPOINT\s+MODEL\s+HOSTS\s+UPTIME\s+LAST DEPLOY\s+NEXT BACKOFF$/,
    );
    assert.match(
      text.stdout,
      /^glm\s+serving\s+\d+\s+http:\/\/\S+:30000\/v1\s+Qwen\/Qwen3\.5-122B-A10B-FP8\s+spark1,spark2\s+\S+\s+succeeded \S+ ago/m,
    );
    assert.match(text.stdout, /^mini\s+down\s/m);
    assert.match(text.stdout, /^qwen\s+handed over\s/m);
    const json = await liftoff(['status', '--json']);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as FleetReport;
    assert.deepEqual(
      report.clusters.map((c) => [c.cluster, c.state]),
      [
        ['glm', 'serving'],
        ['mini', 'down'],
        ['qwen', 'handed over'],
      ],
    );
    const glm = report.clusters[0]!;
    assert.deepEqual(glm.hosts, ['spark1', 'spark2']);
    assert.equal(glm.lastDeploy?.outcome, 'succeeded');
    assert.equal(glm.nextBackoffMs, 0);
    assert.equal(typeof glm.servingSinceMs, 'number');

    // 17 more clusters, each a real cluster workflow holding made-up machines: the listing is what is measured.
    const extra = Array.from({ length: 17 }, (_, i) => `fleet-${String(i).padStart(2, '0')}`);
    await Promise.all(
      extra.map((cluster) =>
        e2e.client.workflow.executeUpdateWithStart(holdUpdate, {
          args: [
            {
              hosts: [{ name: 'h1', address: '10.9.9.9', machineId: randomBytes(16).toString('hex') }],
              spec: {},
              model: 'm',
              containers: {},
              deploy: { workflowId: `liftoff-${cluster}`, trigger: 'cli', startedAtMs: Date.now() },
            },
          ],
          startWorkflowOperation: new WithStartWorkflowOperation('cluster', {
            workflowId: clusterWorkflowId(cluster),
            taskQueue: TASK_QUEUE,
            args: [{ cluster }],
            workflowIdConflictPolicy: 'USE_EXISTING',
          }),
        }),
      ),
    );
    const counted = await waitFor(
      'the 20 clusters in visibility',
      async () => {
        const r = await fleetStatus(e2e.client);
        return r.clusters.length === 20 ? r : undefined;
      },
      30_000,
    );
    assert.equal(counted.clusters.length, 20);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await fleetStatus(e2e.client);
      times.push(performance.now() - t0);
    }
    const cli = await liftoff(['status', '--json']);
    assert.equal((JSON.parse(cli.stdout) as FleetReport).clusters.length, 20);
    figures.push(
      `status of 20 clusters: ${times.map((t) => `${t.toFixed(0)} ms`).join(', ')} (the listing, 5 runs); ${cli.ms} ms for the whole CLI process`,
    );
    await Promise.all(
      extra.map((cluster) =>
        e2e.client.workflow
          .getHandle(clusterWorkflowId(cluster))
          .executeUpdate(releaseUpdate, { args: [{ by: 'test' }] }),
      ),
    );
  });
});
