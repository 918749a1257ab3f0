// `liftoff worker --metrics` scraped by a real Prometheus (Debian's): the worker runs as users run it (the built
// CLI, a process of its own), a small deploy with supervision on serves, its vLLM is killed, and the supervisor
// relaunches it. Everything asserted is read back through Prometheus's HTTP API: the cluster's state went serving
// → lost/relaunching → serving, the deploy's series are there with sane values, and so are the SDK's own
// (temporal_*); and vLLM's own target, which Prometheus finds in the file_sd file the worker keeps
// (--metrics-targets), is up while serving, down while lost and up again after the relaunch, nobody editing the file. Also a figure, never asserted: the worker's idle CPU with Prometheus scraping it every second,
// against a worker without --metrics idling beside it over the same window.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { liftoffArgv } from '../helpers/cli.js';
import { useSuiteCluster } from '../helpers/suites.js';
import { superviseWorkflowId } from '../../src/shared/constants.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { supervisionQuery, type SuperviseState } from '../../src/workflows/supervise-api.js';
import { clusterMetrics, deployMetrics } from '../../src/shared/metric-names.js';
import { workerPolicyEnv } from '../../src/config/worker-policy.js';
import { simDeploySpec } from '../../sim/spec.js';
import type { SimCluster } from '../../sim/cluster.js';
import { freeLoopbackPort } from '../../scripts/lib/free-port.js';

const cluster = 'metrics';
const prometheusBin = '/usr/bin/prometheus';
const idleWindowMs = 20_000;

/** A port free on loopback now (the kernel's pick, released for the process that binds it next). */

/** The process's CPU time so far (user + system), in seconds, from /proc (clock ticks of 1/100 s on Linux). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name, which may hold spaces, start after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe().catch(() => undefined);
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface PromSample {
  metric: Record<string, string>;
  value?: [number, string];
  values?: [number, string][];
}

describe('worker metrics scraped by Prometheus', () => {
  let sim: SimCluster;
  let client: Client;
  let dir: string;
  let promUrl = '';
  let metricsPort = 0;
  let targetsFile = '';
  const children: ChildProcess[] = [];
  const figures: string[] = [];
  const output: Record<string, string> = {};

  const e2e = useSuiteCluster('metrics', {
    worker: false,
    vllm: { shards: 2, shardSeconds: 0.1, graphCaptureSeconds: 0.2 },
  });

  /** `liftoff worker ARGS` as a process of its own; resolves once it polls. */
  async function startWorker(name: string, args: string[]): Promise<ChildProcess> {
    const child = spawn(process.execPath, liftoffArgv(['worker', ...args]), {
      env: { ...process.env, ...e2e.temporalEnv, [workerPolicyEnv]: sim.workerPolicyPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    output[name] = '';
    child.stdout?.on('data', (d: Buffer) => (output[name] += d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => (output[name] += d.toString('utf8')));
    await waitFor(
      `${name} to poll`,
      () => {
        if (child.exitCode !== null) throw new Error(`${name} exited: ${output[name]}`);
        return Promise.resolve(/worker polling/.test(output[name] ?? '') ? true : undefined);
      },
      120_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${output[name]}`);
    });
    return child;
  }

  async function prom(path: string, params: Record<string, string>): Promise<PromSample[]> {
    const res = await fetch(`${promUrl}/api/v1/${path}?${new URLSearchParams(params).toString()}`);
    const body = (await res.json()) as { status: string; data: { result: PromSample[] } };
    assert.equal(body.status, 'success', JSON.stringify(body));
    return body.data.result;
  }
  const instant = (query: string) => prom('query', { query });
  const value = (s: PromSample | undefined) => Number(s?.value?.[1]);

  /** The file the worker keeps; undefined until it is there. */
  const readTargets = (): { targets: string[]; labels: Record<string, string> }[] | undefined => {
    try {
      return JSON.parse(readFileSync(targetsFile, 'utf8')) as {
        targets: string[];
        labels: Record<string, string>;
      }[];
    } catch {
      return undefined;
    }
  };

  const supervisorState = (): Promise<SuperviseState> =>
    client.workflow.getHandle(superviseWorkflowId(cluster)).query(supervisionQuery);

  before(async () => {
    sim = e2e.sim;
    client = e2e.client;
    dir = mkdtempSync(join(tmpdir(), 'liftoff-metrics-'));
    metricsPort = await freeLoopbackPort();
    targetsFile = join(dir, 'vllm-targets.json');
    const promPort = await freeLoopbackPort();
    promUrl = `http://127.0.0.1:${promPort}`;
    // The worker under test, and one without --metrics on a queue of its own (so it runs nothing) to compare.
    const [measured, plain] = await Promise.all([
      startWorker('worker', ['--metrics', `127.0.0.1:${metricsPort}`, '--metrics-targets', targetsFile]),
      startWorker('plain worker', ['--task-queue', 'liftoff-metrics-idle']),
    ]);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        'scrape_configs:',
        '  - job_name: liftoff-worker',
        '    static_configs:',
        `      - targets: ['127.0.0.1:${metricsPort}']`,
        // vLLM's own /metrics, wherever the worker's file says; re-read each second (it also watches the file).
        '  - job_name: vllm',
        '    file_sd_configs:',
        `      - files: [${JSON.stringify(targetsFile)}]`,
        '        refresh_interval: 1s',
        '',
      ].join('\n'),
    );
    const prometheus = spawn(
      prometheusBin,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(prometheus);
    output.prometheus = '';
    prometheus.stderr?.on('data', (d: Buffer) => (output.prometheus += d.toString('utf8')));
    await waitFor(
      'Prometheus ready',
      async () => ((await fetch(`${promUrl}/-/ready`)).ok ? true : undefined),
      30_000,
    );
    await waitFor(
      'the first scrape of the worker',
      async () => ((await instant('up{job="liftoff-worker"} == 1')).length > 0 ? true : undefined),
      30_000,
    );
    // Idle: nothing deployed yet. Both workers over the same window, the measured one scraped every second,
    // after their start has settled.
    await new Promise((r) => setTimeout(r, 5000));
    const from = { measured: cpuSeconds(measured.pid!), plain: cpuSeconds(plain.pid!), at: Date.now() };
    await new Promise((r) => setTimeout(r, idleWindowMs));
    const seconds = (Date.now() - from.at) / 1000;
    const withMetrics = (100 * (cpuSeconds(measured.pid!) - from.measured)) / seconds;
    const without = (100 * (cpuSeconds(plain.pid!) - from.plain)) / seconds;
    // The difference is within the clock's 1/100 s ticks and the two workers' own noise; the whole measured
    // worker's CPU bounds the endpoint's cost from above, so the verdict is taken on that bound.
    figures.push(
      `FIGURE: idle worker CPU over ${seconds.toFixed(0)} s: ${withMetrics.toFixed(2)}% of a core with --metrics scraped every 1 s, ${without.toFixed(2)}% without --metrics beside it (difference ${(withMetrics - without).toFixed(2)}%); the endpoint costs at most ${withMetrics.toFixed(2)}% of a core idle (issue 32 wants < 1%: ${withMetrics < 1 ? 'met' : without + 1 > withMetrics ? 'met by the difference only' : 'missed'})`,
    );
    plain.kill('SIGTERM');
  });

  after(async () => {
    process.stdout.write(figures.map((f) => `# ${f}\n`).join(''));
    for (const child of children.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGTERM');
      const ended = new Promise((r) => child.once('exit', r));
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await ended;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the SDK worker metrics and liftoff’s cluster and deploy series, through a kill and relaunch', async () => {
    const startedAt = Date.now() / 1000;
    // A bare port is refused (where it listens is for the operator to say), before anything connects.
    const bare = spawn(process.execPath, liftoffArgv(['worker', '--metrics', '9464']), {
      env: { ...process.env, ...e2e.temporalEnv },
      stdio: 'ignore',
    });
    const bareCode = await new Promise((r) => bare.once('exit', r));
    assert.equal(bareCode, 2, 'a bare port is refused as invalid input');

    const spec = {
      ...simDeploySpec(sim, { cluster }),
      // Healthy rounds reported every 3 s (three a watch), so the rounds and their series move within seconds.
      supervise: {
        interval: '1s',
        reportEvery: '3s',
        failureThreshold: 2,
        backoff: '1s',
        maxRelaunches: 3,
        window: '1h',
      },
    };
    // The worker wrote the file at its start, with nothing serving yet.
    await waitFor(
      'the empty targets file',
      () => Promise.resolve(readTargets()?.length === 0 || undefined),
      10_000,
    );
    const result = await (await startDeploy(client, spec, 'cli')).result();
    assert.match(result.supervision ?? '', /supervised by/);
    await waitFor(
      'a passed probe round',
      async () => {
        const s = await supervisorState();
        return s.status === 'serving' && s.rounds >= 2 ? s : undefined;
      },
      60_000,
    );
    // The worker's poll puts the endpoint in the file, and Prometheus scrapes vLLM there.
    const vllmUp = `up{job="vllm",cluster="${cluster}"}`;
    await waitFor(
      'vLLM scraped through the file',
      async () => ((await instant(`${vllmUp} == 1`)).length > 0 ? true : undefined),
      30_000,
    );
    const groups = readTargets() ?? [];
    assert.equal(groups.length, 1, JSON.stringify(groups));
    assert.deepEqual(groups[0]?.labels, { cluster, host: sim.hosts[0]!.name });
    const launches = readFileSync(join(sim.hosts[0]!.hostDir, 'launches.log'), 'utf8').trim().split('\n');
    const { pid } = JSON.parse(launches.at(-1)!) as { pid: number };
    process.kill(pid, 'SIGKILL');
    await waitFor(
      'serving again after a relaunch',
      async () => {
        const s = await supervisorState();
        return s.status === 'serving' && s.relaunches.length >= 1 && s.rounds >= 1 ? s : undefined;
      },
      180_000,
    );
    await waitFor(
      'vLLM scraped again after the relaunch',
      async () => ((await instant(`${vllmUp} == 1`)).length > 0 ? true : undefined),
      30_000,
    );
    // Two scrapes after the last change, so Prometheus has it.
    await new Promise((r) => setTimeout(r, 3000));
    const endAt = Date.now() / 1000;

    // vLLM's target, second by second: up (1), down (0) or gone from the file (-).
    const upRange = await prom('query_range', {
      query: vllmUp,
      start: String(Math.floor(startedAt)),
      end: String(Math.ceil(endAt)),
      step: '1',
    });
    const upAt = new Map<number, string>();
    for (const series of upRange) for (const [t, v] of series.values ?? []) upAt.set(t, v);
    const seconds = [...upAt.keys()].sort((a, b) => a - b);
    const upTimeline =
      seconds.length === 0
        ? []
        : Array.from(
            { length: seconds.at(-1)! - seconds[0]! + 1 },
            (_, i) => upAt.get(seconds[0]! + i) ?? '-',
          );
    const upChanges = upTimeline.filter((s, i) => i === 0 || upTimeline[i - 1] !== s).join(' → ');
    assert.match(upChanges, /^(?:0 → )?1 → (?:0|-)(?: → (?:0|-))* → 1$/, `vLLM's up: ${upChanges}`);
    assert.deepEqual(readTargets(), groups, 'the same endpoint after the relaunch');
    figures.push(`vLLM's up through the worker's file_sd file: ${upChanges}`);

    // The state, second by second: which state was 1 at each step.
    const range = await prom('query_range', {
      query: `${clusterMetrics.state}{cluster="${cluster}"} == 1`,
      start: String(Math.floor(startedAt)),
      end: String(Math.ceil(endAt)),
      step: '1',
    });
    const at = new Map<number, string>();
    for (const series of range) for (const [t] of series.values ?? []) at.set(t, series.metric.state ?? '?');
    const timeline = [...at.entries()].sort((a, b) => a[0] - b[0]).map(([, s]) => s);
    const changes = timeline.filter((s, i) => i === 0 || timeline[i - 1] !== s);
    const said = changes.join(' → ');
    const firstServing = changes.indexOf('serving');
    assert.ok(firstServing >= 0, `the cluster served: ${said}`);
    const trouble = changes.findIndex((s, i) => i > firstServing && (s === 'lost' || s === 'relaunching'));
    assert.ok(trouble > firstServing, `lost or relaunching after serving: ${said}`);
    assert.ok(changes.indexOf('serving', trouble) > trouble, `serving again: ${said}`);
    figures.push(`liftoff_cluster_state as Prometheus saw it: ${said}`);

    const one = async (query: string): Promise<number> => value((await instant(query))[0]);
    const c = `cluster="${cluster}"`;
    assert.ok((await one(`${deployMetrics.outcomes}{${c},outcome="succeeded"}`)) >= 1, 'succeeded deploys');
    const waitCount = await one(`${deployMetrics.stepDuration}_count{${c},step="waitHealthy"}`);
    const waitSum = await one(`${deployMetrics.stepDuration}_sum{${c},step="waitHealthy"}`);
    assert.ok(waitCount >= 2 && waitSum > 0, `waitHealthy durations: ${waitCount} steps, ${waitSum} s`);
    assert.equal(await one(`${deployMetrics.loadProgress}{${c}}`), 1, 'the load finished');
    assert.equal(await one(`${deployMetrics.loadPhase}{${c},phase="ready"}`), 1, 'its phase: ready');
    assert.equal((await instant(`${deployMetrics.etaError}{${c}}`)).length, 2, 'ETA error, late and early');
    assert.ok((await one(`${clusterMetrics.probeRounds}{${c},verdict="failed"}`)) >= 2, 'failed rounds');
    assert.ok((await one(`${clusterMetrics.probeRounds}{${c},verdict="passed"}`)) >= 2, 'passed rounds');
    assert.equal(await one(`${clusterMetrics.probeOk}{${c}}`), 1, 'the last probe passed');
    assert.ok((await one(`${clusterMetrics.probeLatency}{${c}}`)) > 0, 'probe latency');
    assert.equal(await one(`${clusterMetrics.relaunches}{${c}}`), 1, 'one relaunch');
    assert.equal(await one(`${clusterMetrics.relaunchBudgetLeft}{${c}}`), 2, 'budget left: 3 - 1');
    const servingSince = await one(`${clusterMetrics.servingSince}{${c}}`);
    assert.ok(servingSince > startedAt && servingSince <= endAt, `serving since ${servingSince}`);
    assert.ok((await one(`${clusterMetrics.revision}{${c}}`)) >= 1, 'the revision serving');
    // No `workflow_type` label: the supervisor's, the deploy's and down's series of a cluster are the same.
    const stateLabels = Object.keys((await instant(`${clusterMetrics.state}{${c}}`))[0]?.metric ?? {});
    assert.ok(!stateLabels.some((l) => /workflow_?type/i.test(l)), `labels: ${stateLabels.join(', ')}`);

    // The SDK's own worker metrics.
    for (const name of [
      'temporal_worker_task_slots_available',
      'temporal_workflow_task_schedule_to_start_latency_count',
      'temporal_activity_execution_latency_count',
    ])
      assert.ok((await instant(name)).length > 0, `${name} is exported`);
    const sdk = await instant('count({__name__=~"temporal_.+"})');
    figures.push(`series: ${value(sdk[0])} temporal_* (the SDK's), liftoff_* as above`);
  });
});
