// Issue 33, part 3: one worker supervising many clusters. Brings up N two-host simulated clusters (instant tools),
// deploys each with supervision on at the default 30 s interval, lets them settle, then measures the control host
// (the worker and the Temporal dev server) over a supervised window and, with every supervisor stopped and the
// clusters still serving, an idle window: CPU-s per hour in all, the worker's RSS, and the probe rounds' latency
// as each supervisor's history records it: a round run alone is a local activity (its marker's schedule-to-complete);
// a healthy cluster's rounds run in watches (supervise.reportEvery), whose results carry each round's duration.
// The rounds in the window are counted on the hosts themselves (every round runs `ray status` on its head once),
// since a watch reports its rounds only when it ends.
//
//   npm run bench -- --only fleet [--clusters 50] [--fleet-minutes 10] [--idle-minutes 5]
//
// Runs alone, beside another bench or the tests: its own folder, Temporal ports and simulated networks
// (LIFTOFF_BENCH_FLEET_PORT, LIFTOFF_BENCH_NET_INDEX: the first of the network indexes it takes). Its figures are
// merged into bench/results.json (`fleetSupervision`, and its line in `targets`); the rest of the file is kept.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { paths } from '../sim/host-state.js';
import { downCluster, upCluster, type SimCluster } from '../sim/cluster.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { deployWorkflowId, superviseWorkflowId } from '../src/shared/constants.js';
import {
  stopSupervisionSignal,
  supervisionQuery,
  type SuperviseState,
} from '../src/workflows/supervise-api.js';
import { startWorkerProcess, type WorkerProcess } from '../scripts/lib/worker-process.js';
import { capacityFor, simMaxHosts } from './capacity.js';
import { deploySpec, instantTools, liftoffBin, log, sleep } from './context.js';
import {
  machineCpu,
  cpuSecondsBetween,
  median,
  processUsage,
  resetPeakRss,
  round,
  timeProcess,
} from './measure.js';
import type { Target } from './summary.js';

export interface FleetOptions {
  clusters: number;
  /** Length of the supervised window. */
  minutes: number;
  /** Length of the idle window that follows it (0: none). */
  idleMinutes: number;
}

const intervalS = 30; // supervise.interval's default: the setting
const targetCpuSPerHour = 60;
const hostsPerCluster = 2;
/** Hosts per simulated cluster: an even number (a liftoff cluster's two hosts share one network), ≤ simMaxHosts. */
const hostsPerSim = 50;
const deployConcurrency = 4;

const workDir = '/tmp/liftoff-bench-fleet';
const envNumber = (name: string, fallback: number): number => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} wants a whole number, got ${v}`);
  return n;
};
// Apart from bench/context.ts's (netIndex 30, port 27533) and every e2e suite's (test/helpers/suites.ts).
const firstNetIndex = envNumber('LIFTOFF_BENCH_NET_INDEX', 64);
const temporalPort = envNumber('LIFTOFF_BENCH_FLEET_PORT', 27633);
const uiPort = temporalPort + 1000;

export interface ProbeLatency {
  rounds: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

export interface WindowFigures {
  seconds: number;
  /** CPU-s of each control-host process over the window. */
  cpuS: { worker: number; temporal: number };
  /** The same, per hour. */
  perHour: { worker: number; temporal: number; total: number };
  /** Busy CPU-s of the whole machine (everything on it: simulated hosts, other helpers' jobs). */
  machineCpuS: number;
  loadAverage: { start: number[]; end: number[] };
  workerRssMiB: { median: number; max: number; samples: number };
  workerPeakRssMiB: number;
}

export interface FleetResult {
  clusters: number;
  hosts: number;
  intervalS: number;
  simClusters: { netIndex: number; hosts: number }[];
  capacity: ReturnType<typeof capacityFor>;
  deploySeconds: number;
  settleSeconds: number;
  /** Rounds the supervisors counted in the supervised window (all clusters), failed among them. */
  /** Rounds run in the window (counted on the heads), failed rounds reported since the deploys, rounds expected. */
  rounds: { run: number; failedSinceStart: number; expected: number };
  probeLatency: ProbeLatency;
  supervised: WindowFigures;
  idle?: WindowFigures;
  /** Worker + Temporal CPU-s per hour, the supervised window less the idle one: what supervising the N costs. */
  supervisionCpuSPerHour?: { worker: number; temporal: number; total: number };
  /** The worker's VmHWM from its start to the end of the supervised window (the deploys included). */
  workerPeakRssMiBSinceStart: number;
  cores: number;
}

/** Runs the fleet measure with its own services, prints its figures and merges them into bench/results.json. */
export async function runFleetBench(opts: FleetOptions): Promise<void> {
  const { clusters } = opts;
  if (!Number.isInteger(clusters) || clusters < 1)
    throw new Error(`--clusters wants a count, got ${clusters}`);
  if (!(opts.minutes > 0) || !(opts.idleMinutes >= 0))
    throw new Error(`--fleet-minutes wants > 0 and --idle-minutes ≥ 0`);
  const hosts = clusters * hostsPerCluster;
  const capacity = fleetCapacity(hosts);
  if (!capacity.ok)
    throw new Error(`${clusters} clusters (${hosts} hosts) do not fit here: ${capacity.reason}`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const simSizes: number[] = [];
  for (let left = hosts; left > 0; left -= hostsPerSim) simSizes.push(Math.min(hostsPerSim, left));
  const simDirs = simSizes.map((_, k) => join(workDir, `sim${k}`));
  log(
    `fleet: ${clusters} two-host clusters on ${simSizes.length} simulated networks (netIndex ${firstNetIndex}…${firstNetIndex + simSizes.length - 1}), Temporal on 127.0.0.1:${temporalPort}`,
  );
  const server = await startDevServer({ stateDir: join(workDir, 'temporal'), port: temporalPort, uiPort });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const cliEnv = { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace };
  let worker: WorkerProcess | undefined;
  try {
    const sims: SimCluster[] = [];
    for (const [k, size] of simSizes.entries()) {
      log(`fleet: bringing up ${size} simulated hosts (network ${k + 1} of ${simSizes.length})`);
      sims.push(
        await upCluster({
          hosts: size,
          mode: 'netns',
          stateDir: simDirs[k] ?? '',
          netIndex: firstNetIndex + k,
          namePrefix: `f${k}h`,
          vllm: instantTools,
        }),
      );
    }
    const workerPolicyPath = join(workDir, 'worker-policy.yaml');
    writeFileSync(
      workerPolicyPath,
      [
        `knownHosts: ${JSON.stringify(sims.map((s) => s.knownHostsPath))}`,
        `privateKeys: ${JSON.stringify(sims.map((s) => s.privateKeyPath))}`,
        '',
      ].join('\n'),
    );
    worker = await startWorkerProcess({
      address: server.address,
      namespace: server.namespace,
      workerPolicyPath,
    });
    const result = await measureFleet(
      { client, cliEnv, workerPid: worker.pid, serverPid: server.pid, sims },
      opts,
      capacity,
    );
    const target = judgeFleet(result);
    mergeResults(result, target);
    printFleet(result, target);
  } catch (err) {
    log(`fleet failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    throw err;
  } finally {
    await worker?.kill('SIGTERM').catch(() => undefined);
    await connection.close();
    await server.stop();
    for (const dir of simDirs)
      if (existsSync(dir))
        await downCluster(dir).catch((err: unknown) => log(`teardown: ${(err as Error).message}`));
  }
}

/** The machine's limits for `hosts` in all: bench/capacity.ts's, its per-cluster host cap applied per network. */
function fleetCapacity(hosts: number): ReturnType<typeof capacityFor> {
  const all = capacityFor(hosts);
  const limits = all.limits.map((l) =>
    l.name.startsWith('simulator hosts')
      ? {
          ...l,
          name: `${l.name}, per network`,
          need: Math.min(hosts, hostsPerSim),
          ok: hostsPerSim <= simMaxHosts,
        }
      : l,
  );
  const bad = limits.find((l) => !l.ok);
  return {
    hosts,
    ok: !bad,
    limits,
    reason: bad ? `${bad.name}: ${bad.have} available, ${hosts} hosts need ${bad.need}` : '',
  };
}

interface FleetEnv {
  client: Client;
  cliEnv: NodeJS.ProcessEnv;
  workerPid: number;
  serverPid: number;
  sims: SimCluster[];
}

/** The deploy spec of cluster `i`: two consecutive hosts of one simulated network, supervised every 30 s. */
function clusterSpec(sims: readonly SimCluster[], i: number) {
  const perSim = hostsPerSim / hostsPerCluster;
  const sim = sims[Math.floor(i / perSim)];
  if (!sim) throw new Error(`no simulated network for cluster ${i}`);
  const first = (i % perSim) * hostsPerCluster;
  const cluster = `fleet-${i + 1}`;
  const full = deploySpec(sim, cluster, { supervise: { enabled: true, interval: `${intervalS}s` } });
  const pair = full.hosts
    .slice(first, first + hostsPerCluster)
    .map((h, n) => ({ ...h, role: n === 0 ? ('head' as const) : ('worker' as const) }));
  if (pair.length !== hostsPerCluster) throw new Error(`cluster ${cluster}: its network has too few hosts`);
  return {
    cluster,
    spec: { ...full, hosts: pair, serve: { ...full.serve, tensorParallelSize: hostsPerCluster } },
  };
}

async function measureFleet(
  env: FleetEnv,
  opts: FleetOptions,
  capacity: ReturnType<typeof capacityFor>,
): Promise<FleetResult> {
  const names: string[] = [];
  const deployStarted = Date.now();
  const specs = Array.from({ length: opts.clusters }, (_, i) => clusterSpec(env.sims, i));
  let next = 0;
  const deployOne = async (): Promise<void> => {
    for (let i = next++; i < specs.length; i = next++) {
      const { cluster, spec } = specs[i] as (typeof specs)[number];
      const file = join(workDir, `${cluster}.yaml`);
      writeFileSync(file, JSON.stringify(spec));
      const run = await timeProcess(
        process.execPath,
        [liftoffBin, 'deploy', '-c', file, '--json'],
        env.cliEnv,
      );
      if (run.code !== 0) throw new Error(`${cluster}: deploy did not start: ${run.stdout}${run.stderr}`);
      await env.client.workflow.getHandle(deployWorkflowId(cluster)).result();
      names.push(cluster);
      if (names.length % 10 === 0 || names.length === specs.length)
        log(`fleet: ${names.length} of ${specs.length} clusters deployed`);
    }
  };
  await Promise.all(Array.from({ length: deployConcurrency }, deployOne));
  const deploySeconds = round((Date.now() - deployStarted) / 1000, 0);
  names.sort();
  // Settled: every supervisor serving with a passed round, then two more intervals for the rounds' phases to
  // spread and the deploys' garbage to be collected.
  const settleStarted = Date.now();
  for (const cluster of names) await firstPassedRound(env.client, cluster);
  await sleep(2 * intervalS * 1000);
  const settleSeconds = round((Date.now() - settleStarted) / 1000, 0);
  const workerPeakBefore = processUsage(env.workerPid).peakRssMiB;

  log(`fleet: supervised window, ${opts.minutes} min`);
  const supervised = await measureWindow(env, opts.minutes * 60_000);
  const windowStartMs = supervised.startMs;
  const windowEndMs = supervised.startMs + supervised.figures.seconds * 1000;
  const after = await roundCounts(env.client, names);
  const roundsRun = raysStatusCalls(env.sims, windowStartMs, windowEndMs);
  const workerPeakRssMiBSinceStart = Math.max(workerPeakBefore, supervised.figures.workerPeakRssMiB);

  log('fleet: stopping every supervisor (the clusters keep serving)');
  await Promise.all(
    names.map(async (cluster) => {
      const handle = env.client.workflow.getHandle(superviseWorkflowId(cluster));
      await handle.signal(stopSupervisionSignal, { reason: 'bench: the fleet idle window' });
      await handle.result();
    }),
  );
  const probeLatency = await probeLatencyBetween(env.client, names, windowStartMs, windowEndMs);
  let idle: WindowFigures | undefined;
  if (opts.idleMinutes > 0) {
    await sleep(intervalS * 1000);
    log(`fleet: idle window, ${opts.idleMinutes} min`);
    idle = (await measureWindow(env, opts.idleMinutes * 60_000)).figures;
  }
  const s = supervised.figures.perHour;
  const diff = idle
    ? {
        worker: round(s.worker - idle.perHour.worker, 1),
        temporal: round(s.temporal - idle.perHour.temporal, 1),
        total: round(s.total - idle.perHour.total, 1),
      }
    : undefined;
  return {
    clusters: opts.clusters,
    hosts: opts.clusters * hostsPerCluster,
    intervalS,
    simClusters: env.sims.map((sim) => ({ netIndex: sim.netIndex, hosts: sim.hosts.length })),
    capacity,
    deploySeconds,
    settleSeconds,
    rounds: {
      run: roundsRun,
      failedSinceStart: after.failed,
      expected: Math.floor((opts.clusters * supervised.figures.seconds) / intervalS),
    },
    probeLatency,
    supervised: supervised.figures,
    ...(idle ? { idle } : {}),
    ...(diff ? { supervisionCpuSPerHour: diff } : {}),
    workerPeakRssMiBSinceStart: round(workerPeakRssMiBSinceStart, 0),
    cores: cpus().length,
  };
}

async function queryState(client: Client, cluster: string): Promise<SuperviseState | undefined> {
  const handle = client.workflow.getHandle(superviseWorkflowId(cluster));
  return client.connection
    .withDeadline(Date.now() + 10_000, () => handle.query(supervisionQuery))
    .catch(() => undefined);
}

async function firstPassedRound(client: Client, cluster: string): Promise<void> {
  for (const deadline = Date.now() + 3 * 60_000; Date.now() < deadline; await sleep(1000)) {
    const s = await queryState(client, cluster);
    if (s?.status === 'serving' && s.rounds - s.failedRounds >= 1) return;
  }
  throw new Error(`${cluster}: its supervisor did not pass a round within 3 minutes`);
}

/** `ray status` calls on the simulated hosts between the two times: one a round, on the cluster's head. */
function raysStatusCalls(sims: readonly SimCluster[], fromMs: number, toMs: number): number {
  let calls = 0;
  for (const host of sims.flatMap((sim) => sim.hosts)) {
    let text = '';
    try {
      text = readFileSync(paths.commands(host.hostDir), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line.includes('"status"')) continue;
      const rec = JSON.parse(line) as { time: number; argv: string[] };
      if (rec.argv[0] === 'ray' && rec.argv[1] === 'status' && rec.time >= fromMs && rec.time <= toMs)
        calls += 1;
    }
  }
  return calls;
}

async function roundCounts(
  client: Client,
  clusters: readonly string[],
): Promise<{ rounds: number; failed: number }> {
  let rounds = 0;
  let failed = 0;
  for (const cluster of clusters) {
    const s = await queryState(client, cluster);
    if (!s) throw new Error(`${cluster}: its supervisor did not answer its query`);
    rounds += s.rounds;
    failed += s.failedRounds;
  }
  return { rounds, failed };
}

/** CPU, RSS and load over `ms`, the worker's RSS sampled every 5 s (reading /proc costs nothing measurable). */
async function measureWindow(
  env: FleetEnv,
  ms: number,
): Promise<{ startMs: number; figures: WindowFigures }> {
  const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  resetPeakRss(env.workerPid);
  const loadStart = loadavg();
  const machineBefore = machineCpu();
  const workerBefore = processUsage(env.workerPid).cpuSeconds;
  const serverBefore = processUsage(env.serverPid).cpuSeconds;
  const startMs = Date.now();
  const rss: number[] = [];
  for (const end = startMs + ms; Date.now() < end;) {
    rss.push(processUsage(env.workerPid).rssMiB);
    await sleep(Math.min(5000, Math.max(0, end - Date.now())));
  }
  const seconds = (Date.now() - startMs) / 1000;
  const worker = processUsage(env.workerPid);
  const cpuS = {
    worker: round(worker.cpuSeconds - workerBefore, 2),
    temporal: round(processUsage(env.serverPid).cpuSeconds - serverBefore, 2),
  };
  const hourly = (x: number) => round((x * 3600) / seconds, 1);
  return {
    startMs,
    figures: {
      seconds: round(seconds, 0),
      cpuS,
      perHour: {
        worker: hourly(cpuS.worker),
        temporal: hourly(cpuS.temporal),
        total: hourly(cpuS.worker + cpuS.temporal),
      },
      machineCpuS: round(cpuSecondsBetween(machineBefore, machineCpu()), 1),
      loadAverage: { start: loadStart, end: loadavg() },
      workerRssMiB: { median: round(median(rss), 0), max: round(Math.max(...rss), 0), samples: rss.length },
      workerPeakRssMiB: round(worker.peakRssMiB, 0),
    },
  };
}

/**
 * Each probe round's latency from the supervisors' histories: a round run alone is one local activity
 * (probeServingCluster, src/workflows/supervise-round.ts), whose marker records when it was scheduled and when it
 * completed; a watch's result (watchServingCluster) carries its healthy rounds' durations. Rounds reported inside
 * the window count (a watch's are all counted when it reported inside it).
 */
async function probeLatencyBetween(
  client: Client,
  clusters: readonly string[],
  fromMs: number,
  toMs: number,
): Promise<ProbeLatency> {
  const latencies: number[] = [];
  for (const cluster of clusters) {
    const history = await client.workflow.getHandle(superviseWorkflowId(cluster)).fetchHistory();
    for (const e of history.events ?? []) {
      const watched = e.activityTaskCompletedEventAttributes?.result;
      if (watched && tsToMs(e.eventTime) >= fromMs && tsToMs(e.eventTime) <= toMs) {
        const outcome = await decodeFromPayloadsAtIndex<{ healthyDurationsMs?: number[] }>(
          client.options.loadedDataConverter,
          0,
          watched.payloads,
        );
        latencies.push(...(outcome.healthyDurationsMs ?? []));
        continue;
      }
      const marker = e.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_local_activity') continue;
      const data = marker.details?.data?.payloads?.[0]?.data;
      if (!data) continue;
      const d = markerTimes(new TextDecoder().decode(data));
      if (d && d.type === 'probeServingCluster' && d.completeMs >= fromMs && d.completeMs <= toMs)
        latencies.push(d.completeMs - d.scheduledMs);
    }
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
  return {
    rounds: sorted.length,
    p50Ms: round(median(sorted), 0),
    p95Ms: round(pct(0.95), 0),
    maxMs: round(sorted.at(-1) ?? Number.NaN, 0),
  };
}

interface ProtoTime {
  seconds: number | string;
  nanos?: number;
}

function markerTimes(json: string): { type: string; scheduledMs: number; completeMs: number } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const rec = parsed as {
    activity_type?: unknown;
    complete_time?: ProtoTime;
    original_schedule_time?: ProtoTime;
  };
  const ms = (t: ProtoTime | undefined) => (t ? Number(t.seconds) * 1000 + (t.nanos ?? 0) / 1e6 : Number.NaN);
  const completeMs = ms(rec.complete_time);
  const scheduledMs = ms(rec.original_schedule_time);
  if (typeof rec.activity_type !== 'string' || !Number.isFinite(completeMs) || !Number.isFinite(scheduledMs))
    return undefined;
  return { type: rec.activity_type, scheduledMs, completeMs };
}

export function judgeFleet(r: FleetResult): Target {
  const s = r.supervised;
  const judged = r.supervisionCpuSPerHour?.total ?? s.perHour.total;
  const perProcess = r.supervisionCpuSPerHour;
  // CPU-ms per probe round: an hour's CPU-s over the rounds the clusters make in an hour.
  const msPerRound = (cpuSPerHour: number) =>
    round((cpuSPerHour / r.clusters) * (r.intervalS / 3600) * 1000, 1);
  const load = `load average ${s.loadAverage.start.join(' ')} → ${s.loadAverage.end.join(' ')} on ${r.cores} cores shared with other jobs`;
  return {
    measure: `fleet supervision, ${r.clusters} clusters`,
    figure:
      `${judged} control-host CPU-s per hour for the ${r.clusters} at ${r.intervalS} s` +
      (r.supervisionCpuSPerHour && r.idle
        ? ` (supervised ${s.perHour.total} less idle ${r.idle.perHour.total})`
        : ' (no idle window: gross)') +
      `; probe round p50 ${r.probeLatency.p50Ms} ms, p95 ${r.probeLatency.p95Ms} ms over ${r.probeLatency.rounds} rounds; ` +
      `worker RSS steady ${s.workerRssMiB.median} MiB, peak ${r.workerPeakRssMiBSinceStart} MiB`,
    target: `< ${targetCpuSPerHour} CPU-s/h for 50 clusters`,
    met: r.clusters >= 50 && judged < targetCpuSPerHour,
    binds: [
      `supervised window ${s.seconds} s: worker ${s.perHour.worker}, Temporal server ${s.perHour.temporal} CPU-s/h (gross ${s.perHour.total})` +
        (r.idle
          ? `; idle window ${r.idle.seconds} s: worker ${r.idle.perHour.worker}, Temporal server ${r.idle.perHour.temporal}`
          : ''),
      `per cluster: ${round(judged / r.clusters, 2)} CPU-s/h, per round ${msPerRound(judged)} ms of CPU` +
        (perProcess
          ? ` (worker ${msPerRound(perProcess.worker)}, Temporal server ${msPerRound(perProcess.temporal)})`
          : '') +
        `; the target allows ${round((targetCpuSPerHour / 50) * (r.intervalS / 3600) * 1000, 1)} ms per round at 50 clusters every ${r.intervalS} s`,
      `rounds in the window: ${r.rounds.run} run (counted on the heads), ${r.rounds.expected} expected; ${r.rounds.failedSinceStart} failed since the deploys`,
      load,
      ...(r.clusters < 50 ? [`only ${r.clusters} clusters measured: the target is for 50`] : []),
    ],
  };
}

/** Puts this run's figures in bench/results.json beside the rest, replacing an earlier fleet run's. */
function mergeResults(result: FleetResult, target: Target): void {
  const file = 'bench/results.json';
  const existing: unknown = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const base = typeof existing === 'object' && existing !== null ? (existing as Record<string, unknown>) : {};
  const targets = Array.isArray(base.targets) ? (base.targets as Target[]) : [];
  const merged = {
    ...base,
    targets: [...targets.filter((t) => !t.measure.startsWith('fleet supervision')), target],
    fleetSupervision: { date: new Date().toISOString(), ...result },
  };
  writeFileSync(file, `${JSON.stringify(merged, null, 2)}\n`);
}

function printFleet(r: FleetResult, t: Target): void {
  const lines = [
    `${t.measure}: ${t.figure}`,
    `target ${t.target}: ${t.met ? 'met' : 'not met'}`,
    ...(t.binds ?? []).map((b) => `  ${b}`),
    `deploys ${r.deploySeconds} s, settle ${r.settleSeconds} s; figures in bench/results.json (fleetSupervision)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
