// Outages on the simulated cluster with the real sequence (issue 33, part 4): how long a cluster does not serve
// after its vLLM server dies under supervision, and after an upgrade fails and rolls back, each split into its
// phases from Temporal's own records (the supervisor's query and history, the deploys' progress and history);
// and the wall time of `liftoff status` over 20 and 50 recorded clusters and of `liftoff down` at 2 and 16 hosts.
// No target is stated for any of them (issue 33 and the README give none): each figure says so.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, relative } from 'node:path';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { downCluster, setFaults, upCluster, type SimCluster } from '../sim/cluster.js';
import { paths } from '../sim/host-state.js';
import { superviseSchema } from '../src/config/supervise.js';
import { parseDuration } from '../src/config/duration.js';
import { table } from '../src/cli/render.js';
import { fleetStatus } from '../src/commands/fleet-status.js';
import { TASK_QUEUE, deployWorkflowId, superviseWorkflowId } from '../src/shared/constants.js';
import { clusterWorkflowId, holdUpdate, releaseUpdate } from '../src/shared/cluster-api.js';
import { isRecord, readHistoryEvents } from '../src/report/events.js';
import { startDeploy } from '../src/temporal/start-deploy.js';
import type { DeploySpecInput } from '../src/config/schema.js';
import type { DeployProgress, StepName } from '../src/workflows/steps.js';
import { supervisionQuery, type SuperviseState } from '../src/workflows/supervise-api.js';
import {
  deploySpec,
  instantTools,
  liftoffBin,
  log,
  netIndex,
  simDir,
  sleep,
  writeSpec,
  type Env,
} from './context.js';
import { median, round, timeProcess } from './measure.js';

/** A load of about 5 s (8 shards of 0.5 s, 1 s of graph capture), so the load phase is visible beside the others. */
const loadingTools = { shards: 8, shardSeconds: 0.5, graphCaptureSeconds: 1, memoryMiB: 1024 };
/** The upgrade's load crashes here (2 s in): a fatal line the deploy's load poll reads. */
const crashAtShard = 4;
const outageCluster = 'bench-outage';
const noTarget = 'none set: issue 33 and the README state no target for this figure';

/**
 * One outage, each phase in seconds. The phases follow each other: `between` is what lies between them (the
 * supervisor's turn from the loss to scheduling the bundle and from the bundle to starting the deploy; in a rollback,
 * recording the bad revision and continuing as new), so the phases and `between` add up to `totalS`.
 */
export interface OutageRun {
  /** The fault (the kill, the crash) to the loss seen: the supervisor's lostAtMs, or the failed load step's end. */
  detectionS: number;
  /** The evidence: collectFailureBundle (supervisor) or collectDiagnostics (the failed deploy), scheduled → done. */
  bundleS: number;
  /** The new deploy's start to its load's start (preflight, stop, remove, GPUs, Ray, launch). */
  orchestrationS: number;
  /** The load's start to the server's health answering (the deploy's waitHealthy step). */
  loadS: number;
  /** Healthy to serving as liftoff counts it: the smoke test, the revision recorded, the deploy's end. */
  confirmS: number;
  betweenS: number;
  /** The fault to serving again. */
  totalS: number;
  /** Supervised: how far into a probe interval the server was killed (from the start of a passed round). */
  killIntoIntervalS?: number;
  /** The steps orchestration is made of, each one's duration: what it spent its time on. */
  orchestrationStepsS?: Record<string, number>;
}

export interface OutageSetting {
  name: string;
  /** The supervise section deployed (absent for the rollback). */
  supervise?: Record<string, unknown>;
  runs: OutageRun[];
  /** The median of each phase over the runs. */
  medianS: OutageRun;
  /** The median of each orchestration step over the runs. */
  orchestrationStepsMedianS: Record<string, number>;
  target: null;
  targetNote: string;
}

export interface TimedCommand {
  name: string;
  /** Wall time of the whole CLI process, each run, and their median. */
  runsS: number[];
  medianS: number;
  /** What the command's own work took: the listing in process (status), the down workflow (down). */
  innerRunsS: number[];
  innerMedianS: number;
  how: string;
  target: null;
  targetNote: string;
}

/** What each phase spans, as results.json says it beside the figures. */
const phaseDefinitions = {
  detectionS:
    'supervised: the SIGKILL of the head vLLM to the supervisor’s lostAtMs; rollback: the crash (the serve log’s mtime on its traceback) to the end of the failed run’s waitHealthy step',
  bundleS:
    'supervised: collectFailureBundle in the supervisor’s history, scheduled → completed; rollback: the failed run’s collectDiagnostics, first scheduled → last completed',
  orchestrationS:
    'the relaunch’s (or the rollback run’s) start to its waitHealthy step’s start: preflight, stop, remove, GPUs clear, Ray, launch',
  loadS: 'waitHealthy’s start to its end: the server answers /health',
  confirmS:
    'healthy to serving as liftoff counts it: the smoke test and the record (supervised: the supervisor’s relaunch entry endedAtMs; rollback: the record step’s end)',
  betweenS:
    'the rest of the total: the supervisor’s turns between loss, bundle and the child deploy’s start; in a rollback, recording the bad revision and continuing as new',
  totalS: 'the fault to serving again',
};

export interface OutageResults {
  date: string;
  phases: typeof phaseDefinitions;
  repeats: number;
  loadingTools: typeof loadingTools;
  supervised: OutageSetting[];
  rollback: OutageSetting;
  status: TimedCommand[];
  down: TimedCommand[];
  benchSeconds: number;
}

// ------------------------------------------------------------------------------------------- from Temporal

const s = (ms: number): number => round(ms / 1000, 2);

function query<T>(env: Env, workflowId: string, runId: string | undefined, name: string): Promise<T> {
  const handle = env.client.workflow.getHandle(workflowId, runId);
  return env.client.connection.withDeadline(Date.now() + 10_000, () => handle.query<T>(name));
}

const supervision = (env: Env, cluster: string): Promise<SuperviseState | undefined> =>
  query<SuperviseState>(env, superviseWorkflowId(cluster), undefined, supervisionQuery.name).catch(
    () => undefined,
  );

async function until<T>(what: string, look: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(200)) {
    const v = await look();
    if (v !== undefined) return v;
    if (Date.now() > deadline)
      throw new Error(`outages: timed out after ${timeoutMs / 1000} s waiting for ${what}`);
  }
}

/** Every run of an activity type in a history: when it was scheduled and when it ended (completed or failed). */
function activitySpans(history: unknown, type: string): { scheduledAtMs: number; endedAtMs?: number }[] {
  const spans = new Map<number, { scheduledAtMs: number; endedAtMs?: number }>();
  const ends = [
    'activityTaskCompleted',
    'activityTaskFailed',
    'activityTaskTimedOut',
    'activityTaskCanceled',
  ];
  for (const e of readHistoryEvents(history)) {
    if (e.kind === 'activityTaskScheduled') {
      const name = isRecord(e.attrs.activityType) ? e.attrs.activityType.name : undefined;
      if (name === type) spans.set(e.eventId, { scheduledAtMs: e.timeMs });
    } else if (ends.includes(e.kind)) {
      const span = spans.get(Number(e.attrs.scheduledEventId));
      if (span) span.endedAtMs = e.timeMs;
    }
  }
  return [...spans.values()];
}

/** The first scheduling and the last end of an activity type's runs (several hosts' run side by side). */
function spanOf(history: unknown, type: string): { fromMs: number; toMs: number } {
  const spans = activitySpans(history, type);
  if (spans.length === 0) throw new Error(`outages: no ${type} in the history`);
  return {
    fromMs: Math.min(...spans.map((x) => x.scheduledAtMs)),
    toMs: Math.max(...spans.map((x) => x.endedAtMs ?? Number.NaN)),
  };
}

function step(p: DeployProgress, name: StepName): { startedAtMs: number; endedAtMs: number } {
  const st = p.steps.find((x) => x.name === name);
  if (st?.startedAtMs === undefined || st.endedAtMs === undefined)
    throw new Error(
      `outages: the deploy ${p.launchId} has no timed ${name} step (${st?.status ?? 'absent'})`,
    );
  return { startedAtMs: st.startedAtMs, endedAtMs: st.endedAtMs };
}

/** The deploy's steps that ended before its load began, with their durations. */
function stepsBeforeLoad(p: DeployProgress): Record<string, number> {
  const loadAtMs = step(p, 'waitHealthy').startedAtMs;
  return Object.fromEntries(
    p.steps
      .filter((x) => x.durationMs !== undefined && (x.endedAtMs ?? Infinity) <= loadAtMs)
      .map((x) => [x.name, s(x.durationMs ?? 0)]),
  );
}

/** The phases of an outage from its moments, in the order they happen. */
function phases(m: {
  faultMs: number;
  detectedMs: number;
  bundle: { fromMs: number; toMs: number };
  deployStartMs: number;
  load: { startedAtMs: number; endedAtMs: number };
  servingMs: number;
}): OutageRun {
  const run = {
    detectionS: s(m.detectedMs - m.faultMs),
    bundleS: s(m.bundle.toMs - m.bundle.fromMs),
    orchestrationS: s(m.load.startedAtMs - m.deployStartMs),
    loadS: s(m.load.endedAtMs - m.load.startedAtMs),
    confirmS: s(m.servingMs - m.load.endedAtMs),
    betweenS: 0,
    totalS: s(m.servingMs - m.faultMs),
  };
  const parts = run.detectionS + run.bundleS + run.orchestrationS + run.loadS + run.confirmS;
  run.betweenS = round(run.totalS - parts, 2);
  return run;
}

const phaseKeys = [
  'detectionS',
  'bundleS',
  'orchestrationS',
  'loadS',
  'confirmS',
  'betweenS',
  'totalS',
] as const satisfies readonly (keyof OutageRun)[];

function stepMedians(runs: readonly OutageRun[]): Record<string, number> {
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.orchestrationStepsS ?? {})))];
  return Object.fromEntries(
    names.map((n) => [n, round(median(runs.map((r) => r.orchestrationStepsS?.[n] ?? 0)), 2)]),
  );
}

/** Each phase's median over the runs (each taken alone: they need not add up to the total's). */
function medians(runs: readonly OutageRun[]): OutageRun {
  return Object.fromEntries(
    phaseKeys.map((k) => [k, round(median(runs.map((r) => r[k])), 2)]),
  ) as unknown as OutageRun;
}

// ------------------------------------------------------------------------------------------- supervised

const headLaunchPids = (sim: SimCluster): number[] =>
  readFileSync(paths.launches(sim.hosts[0]?.hostDir ?? ''), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { pid: number }).pid);

/**
 * Deploys with `supervise` (a fresh supervisor, so each loss is its first: no backoff), waits for a passed round,
 * SIGKILLs the head's vLLM server (as test/e2e/supervise.test.ts does) `phase` of an interval after a round began,
 * and reads the recovery from Temporal. Detection depends on where in the interval the server dies (from
 * (threshold - 1) to threshold intervals): the runs spread the kill over it rather than all landing just after a
 * round, the worst case.
 */
async function supervisedOutage(
  env: Env,
  sim: SimCluster,
  supervise: Record<string, unknown>,
  phase: number,
  timeoutMs: number,
): Promise<OutageRun> {
  const spec = deploySpec(sim, outageCluster, { supervise }) as DeploySpecInput;
  const deployed = await startDeploy(env.client, spec, 'cli');
  await deployed.result();
  const before = await until(
    'a passed round',
    async () => {
      const st = await supervision(env, outageCluster);
      return st?.status === 'serving' && st.rounds >= 1 && st.launch.launchId ? st : undefined;
    },
    120_000,
  );
  const intervalMs = parseDuration(superviseSchema.parse(supervise).interval) ?? 30_000;
  const roundAtMs = before.lastProbe?.atMs ?? Date.now();
  let killAtMs = roundAtMs + phase * intervalMs;
  while (killAtMs < Date.now()) killAtMs += intervalMs;
  await sleep(killAtMs - Date.now());
  const pid = headLaunchPids(sim).at(-1);
  if (pid === undefined) throw new Error('outages: no launch on the head');
  process.kill(pid, 'SIGKILL');
  const faultMs = Date.now();
  const back = await until(
    'serving again',
    async () => {
      const st = await supervision(env, outageCluster);
      return st && st.status === 'serving' && st.relaunches.length > before.relaunches.length
        ? st
        : undefined;
    },
    timeoutMs,
  );
  const entry = back.relaunches.at(-1);
  if (entry?.outcome !== 'serving' || entry.endedAtMs === undefined || !entry.deployRunId)
    throw new Error(`outages: the relaunch did not serve: ${JSON.stringify(entry)}`);
  const supervisorHistory = await env.client.workflow
    .getHandle(superviseWorkflowId(outageCluster))
    .fetchHistory();
  const child = await query<DeployProgress>(
    env,
    deployWorkflowId(outageCluster),
    entry.deployRunId,
    'progress',
  );
  const run = phases({
    faultMs,
    detectedMs: entry.lostAtMs,
    bundle: spanOf(supervisorHistory, 'collectFailureBundle'),
    deployStartMs: child.startedAtMs,
    load: step(child, 'waitHealthy'),
    servingMs: entry.endedAtMs,
  });
  return {
    ...run,
    killIntoIntervalS: s((faultMs - roundAtMs) % intervalMs),
    orchestrationStepsS: stepsBeforeLoad(child),
  };
}

// ------------------------------------------------------------------------------------------- rollback

/**
 * A known-good serves; the upgrade (another max-model-len) crashes in its load after the stop, so with
 * rollout.onFailure: rollback it records itself bad and continues as new as the deploy of the known-good. The
 * crash is the server's traceback: the log's mtime once it holds it (the fault is cleared then, so the rollback's
 * own load does not crash too).
 */
async function rollbackOutage(env: Env, sim: SimCluster, good: DeploySpecInput): Promise<OutageRun> {
  const head = sim.hosts[0];
  if (!head) throw new Error('no head');
  const upgrade = {
    ...good,
    serve: { ...good.serve, args: ['--gpu-memory-utilization', '0.85', '--max-model-len', '16384'] },
  };
  const logFile = join(paths.home(head.hostDir), relative('/home', good.serve.logPath));
  const launchesBefore = headLaunchPids(sim).length;
  setFaults(simDir, head.name, { crashAtShard });
  let faultMs: number;
  let failedRunId: string;
  try {
    const handle = await startDeploy(env.client, upgrade, 'cli');
    failedRunId = handle.firstExecutionRunId;
    // The launch truncates the log: once the upgrade's launch is recorded, a traceback in it is the upgrade's.
    const crashedAtMs = (): number | undefined => {
      if (headLaunchPids(sim).length <= launchesBefore || !existsSync(logFile)) return undefined;
      return /SafetensorError/.test(readFileSync(logFile, 'utf8')) ? statSync(logFile).mtimeMs : undefined;
    };
    faultMs = await until('the upgrade’s crash', () => Promise.resolve(crashedAtMs()), 120_000);
  } finally {
    setFaults(simDir, head.name, {});
  }
  const handle = env.client.workflow.getHandle(deployWorkflowId(outageCluster));
  const result = (await handle.result()) as { rolledBack?: { to: number } };
  if (!result.rolledBack)
    throw new Error(`outages: the upgrade did not roll back: ${JSON.stringify(result)}`);
  const failed = await query<DeployProgress>(env, handle.workflowId, failedRunId, 'progress');
  const failedHistory = await env.client.workflow.getHandle(handle.workflowId, failedRunId).fetchHistory();
  const rollback = await query<DeployProgress>(env, handle.workflowId, undefined, 'progress');
  const run = phases({
    faultMs,
    detectedMs: step(failed, 'waitHealthy').endedAtMs,
    bundle: spanOf(failedHistory, 'collectDiagnostics'),
    deployStartMs: rollback.startedAtMs,
    load: step(rollback, 'waitHealthy'),
    servingMs: step(rollback, 'record').endedAtMs,
  });
  return { ...run, orchestrationStepsS: stepsBeforeLoad(rollback) };
}

// ------------------------------------------------------------------------------------------- status, down

/**
 * `liftoff status` (no cluster) over `count` recorded clusters: those the namespace knows already, and made-up
 * ones up to the count, each a real cluster workflow started as a deploy starts it (Update-with-Start of `hold`)
 * holding one made-up machine, as test/e2e/lifecycle.test.ts does. No host is reached: status reads visibility.
 */
async function statusTimes(env: Env, counts: readonly number[], repeats: number): Promise<TimedCommand[]> {
  const made: string[] = [];
  const out: TimedCommand[] = [];
  try {
    for (const count of counts) {
      const known = (await fleetStatus(env.client)).clusters.length;
      const extra = Array.from(
        { length: Math.max(0, count - known) },
        (_, i) => `bench-fleet-${made.length + i}`,
      );
      await Promise.all(
        extra.map((cluster) =>
          env.client.workflow.executeUpdateWithStart(holdUpdate, {
            args: [
              {
                hosts: [{ name: 'h1', address: '10.9.9.9', machineId: randomBytes(16).toString('hex') }],
                spec: {},
                model: 'm',
                containers: {},
                deploy: { workflowId: deployWorkflowId(cluster), trigger: 'cli', startedAtMs: Date.now() },
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
      made.push(...extra);
      await until(
        `${count} clusters in visibility`,
        async () => ((await fleetStatus(env.client)).clusters.length >= count ? true : undefined),
        60_000,
      );
      const cli: number[] = [];
      const inner: number[] = [];
      for (let r = 0; r < repeats; r++) {
        const t0 = performance.now();
        const listed = (await fleetStatus(env.client)).clusters.length;
        inner.push(s(performance.now() - t0));
        const run = await timeProcess(process.execPath, [liftoffBin, 'status', '--json'], env.cliEnv);
        if (run.code !== 0) throw new Error(`liftoff status failed (exit ${run.code}): ${run.stderr}`);
        const shown = (JSON.parse(run.stdout) as { clusters: unknown[] }).clusters.length;
        if (shown !== listed)
          throw new Error(`liftoff status listed ${shown} clusters, the namespace ${listed}`);
        cli.push(s(run.ms));
      }
      out.push({
        name: `liftoff status, ${count} clusters`,
        runsS: cli,
        medianS: round(median(cli), 2),
        innerRunsS: inner,
        innerMedianS: round(median(inner), 3),
        how: `${known} clusters the namespace knew and ${extra.length} made-up ones: cluster workflows started by Update-with-Start of hold (one made-up machine each), as a deploy starts them; no live cluster. Inner: the listing (fleetStatus) in the bench's process`,
        target: null,
        targetNote: noTarget,
      });
      log(`status of ${count} clusters: ${cli.join(', ')} s (listing ${inner.join(', ')} s)`);
    }
  } finally {
    await Promise.all(
      made.map((cluster) =>
        env.client.workflow
          .getHandle(clusterWorkflowId(cluster))
          .executeUpdate(releaseUpdate, { args: [{ by: 'bench' }] })
          .catch(() => undefined),
      ),
    );
  }
  return out;
}

/** `liftoff down` of a serving `hosts`-host cluster (instant tools), deployed again before each run. */
async function downTimes(env: Env, hosts: number, repeats: number): Promise<TimedCommand> {
  log(`liftoff down at ${hosts} hosts: bringing up the simulated cluster`);
  const sim = await upCluster({ hosts, mode: 'netns', stateDir: simDir, netIndex, vllm: instantTools });
  const cluster = `bench-down-${hosts}`;
  const specFile = writeSpec(deploySpec(sim, cluster), cluster);
  const cli: number[] = [];
  const inner: number[] = [];
  try {
    for (let r = 0; r < repeats; r++) {
      const deployed = await timeProcess(
        process.execPath,
        [liftoffBin, 'deploy', '-c', specFile, '--follow', '--json'],
        env.cliEnv,
      );
      if (deployed.code !== 0)
        throw new Error(`deploy before down failed: ${deployed.stdout}${deployed.stderr}`);
      const run = await timeProcess(process.execPath, [liftoffBin, 'down', cluster, '--json'], env.cliEnv);
      if (run.code !== 0)
        throw new Error(`liftoff down failed (exit ${run.code}): ${run.stdout}${run.stderr}`);
      const { workflowId, runId } = JSON.parse(run.stdout) as { workflowId: string; runId?: string };
      const d = await env.client.workflow.getHandle(workflowId, runId).describe();
      cli.push(s(run.ms));
      inner.push(s((d.closeTime?.getTime() ?? Number.NaN) - d.startTime.getTime()));
      log(`down at ${hosts} hosts, run ${r + 1}/${repeats}: ${cli.at(-1)} s (workflow ${inner.at(-1)} s)`);
    }
  } finally {
    await downCluster(simDir);
  }
  return {
    name: `liftoff down, ${hosts} hosts`,
    runsS: cli,
    medianS: round(median(cli), 2),
    innerRunsS: inner,
    innerMedianS: round(median(inner), 2),
    how: `a serving ${hosts}-host simulated cluster (instant tools, no supervisor), deployed before each run. Inner: the down workflow, start to close`,
    target: null,
    targetNote: noTarget,
  };
}

// ------------------------------------------------------------------------------------------- the whole

export async function measureOutages(env: Env, repeats: number): Promise<OutageResults> {
  const startedAt = Date.now();
  const status = await statusTimes(env, [20, 50], repeats);
  const defaults = superviseSchema.parse(undefined);
  const settings: { name: string; supervise: Record<string, unknown>; timeoutMs: number }[] = [
    {
      name: `supervised, defaults (interval ${defaults.interval} × failureThreshold ${defaults.failureThreshold})`,
      supervise: {},
      timeoutMs: 600_000,
    },
    {
      name: 'supervised, interval 2s × failureThreshold 2',
      supervise: { interval: '2s', failureThreshold: 2 },
      timeoutMs: 300_000,
    },
  ];
  log(
    `outages: a 2-host cluster with a ${loadingTools.shards * loadingTools.shardSeconds + loadingTools.graphCaptureSeconds} s load`,
  );
  const sim = await upCluster({ hosts: 2, mode: 'netns', stateDir: simDir, netIndex, vllm: loadingTools });
  const supervised: OutageSetting[] = [];
  let rollback: OutageSetting;
  try {
    for (const setting of settings) {
      const runs: OutageRun[] = [];
      for (let r = 0; r < repeats; r++) {
        const phase = (r + 0.5) / repeats;
        runs.push(await supervisedOutage(env, sim, setting.supervise, phase, setting.timeoutMs));
        log(`${setting.name}, run ${r + 1}/${repeats}: ${JSON.stringify(runs.at(-1))}`);
      }
      supervised.push({
        ...setting,
        runs,
        medianS: medians(runs),
        orchestrationStepsMedianS: stepMedians(runs),
        target: null,
        targetNote: noTarget,
      });
    }
    await env.client.workflow
      .getHandle(superviseWorkflowId(outageCluster))
      .terminate('bench: outages measured')
      .catch(() => undefined);
    const good = {
      ...deploySpec(sim, outageCluster),
      rollout: { onFailure: 'rollback' as const },
    } as DeploySpecInput;
    await (await startDeploy(env.client, good, 'cli')).result();
    const runs: OutageRun[] = [];
    for (let r = 0; r < repeats; r++) {
      runs.push(await rollbackOutage(env, sim, good));
      log(`automatic rollback, run ${r + 1}/${repeats}: ${JSON.stringify(runs.at(-1))}`);
    }
    rollback = {
      name: `automatic rollback: the upgrade's load crashes at shard ${crashAtShard} of ${loadingTools.shards}, the known-good serves again`,
      runs,
      medianS: medians(runs),
      orchestrationStepsMedianS: stepMedians(runs),
      target: null,
      targetNote: noTarget,
    };
  } finally {
    await env.client.workflow
      .getHandle(superviseWorkflowId(outageCluster))
      .terminate('bench: outages measured')
      .catch(() => undefined);
    await downCluster(simDir);
  }
  const down = [await downTimes(env, 2, repeats), await downTimes(env, 16, repeats)];
  return {
    date: new Date().toISOString(),
    phases: phaseDefinitions,
    repeats,
    loadingTools,
    supervised,
    rollback,
    status,
    down,
    benchSeconds: round((Date.now() - startedAt) / 1000, 0),
  };
}

/**
 * Measures the outages and merges them into bench/results.json as its `outages` (the file's other figures kept),
 * then prints them. `npm run bench -- --only outages` runs this alone.
 */
export async function outageBench(
  env: Env,
  repeats: number,
  resultsFile = 'bench/results.json',
): Promise<void> {
  const outages = await measureOutages(env, repeats);
  const existing: unknown = existsSync(resultsFile) ? JSON.parse(readFileSync(resultsFile, 'utf8')) : {};
  writeFileSync(
    resultsFile,
    `${JSON.stringify({ ...(isRecord(existing) ? existing : {}), outages }, null, 2)}\n`,
  );
  const row = (x: OutageSetting) => [
    x.name,
    ...[
      x.medianS.detectionS,
      x.medianS.bundleS,
      x.medianS.orchestrationS,
      x.medianS.loadS,
      x.medianS.confirmS,
      x.medianS.betweenS,
      x.medianS.totalS,
    ].map((v) => v.toFixed(1)),
  ];
  const lines = [
    table([
      ['outage (medians, s)', 'detection', 'bundle', 'orchestration', 'load', 'confirm', 'between', 'total'],
      ...outages.supervised.map(row),
      row(outages.rollback),
    ]),
    ...[...outages.supervised, outages.rollback].map(
      (x) =>
        `${x.name}, orchestration by step (medians, s): ${Object.entries(x.orchestrationStepsMedianS)
          .map(([k, v]) => `${k} ${v.toFixed(1)}`)
          .join(', ')}`,
    ),
    '',
    table([
      ['command', 'wall s (median; runs)', 'inner s (median)'],
      ...[...outages.status, ...outages.down].map((c) => [
        c.name,
        `${c.medianS.toFixed(2)}; ${c.runsS.join(', ')}`,
        c.innerMedianS.toFixed(2),
      ]),
    ]),
    `no targets set for these (issue 33 states none); ${repeats} runs each; took ${outages.benchSeconds} s; in ${resultsFile} as "outages"`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
