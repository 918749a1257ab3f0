// The bench's fault and steady-state runs on a 2-host cluster with a load that takes time: crash detection,
// resume after the worker is SIGKILLed, and what supervising a healthy cluster costs the control host.
import { readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { downCluster, reseedCluster, setFaults, upCluster, type SimCluster } from '../sim/cluster.js';
import { paths } from '../sim/host-state.js';
import { deployWorkflowId, superviseWorkflowId } from '../src/shared/constants.js';
import { superviseSchema } from '../src/config/supervise.js';
import { parseDuration } from '../src/config/duration.js';
import { startWorkerProcess } from '../scripts/lib/worker-process.js';
import {
  deploySpec,
  heartbeatTimeoutSeconds,
  liftoffBin,
  log,
  netIndex,
  pollSeconds,
  queryProgress,
  simDir,
  sleep,
  writeSpec,
  type Env,
} from './context.js';
import { activityRuns, round, timeProcess } from './measure.js';
import { cpuPerHour, supervisionCost, supervisorControl, type SupervisionCost } from './supervise-cost.js';

const loadingTools = (shards: number) => ({
  shards,
  shardSeconds: 0.5,
  graphCaptureSeconds: 1,
  memoryMiB: 1024,
});

async function withCluster<T>(shards: number, fn: (sim: SimCluster) => Promise<T>): Promise<T> {
  const sim = await upCluster({
    hosts: 2,
    mode: 'netns',
    stateDir: simDir,
    netIndex,
    vllm: loadingTools(shards),
    // Every measurement seeds the reference state itself, right before its deploy.
    seedReferenceState: false,
  });
  try {
    return await fn(sim);
  } finally {
    await downCluster(simDir);
  }
}

const deployArgs = (specFile: string, follow: boolean) => [
  liftoffBin,
  'deploy',
  '-c',
  specFile,
  ...(follow ? ['--follow'] : []),
  '--json',
];

// ------------------------------------------------------------------------------------------- crash

export interface CrashRun {
  crashIntoLoadS: number;
  detectedAfterS: number;
  failureType: string;
}

export const crashSettings = { crashAtShard: 6, pollIntervalS: pollSeconds, blindWaitS: 25 * 60 };

export async function measureCrash(env: Env, repeats: number): Promise<CrashRun[]> {
  log(`crash detection: a 2-host load that crashes 3 s in, ${repeats} times`);
  return withCluster(40, async (sim) => {
    const cluster = 'bench-crash';
    const spec = deploySpec(sim, cluster, { loadTimeout: '25m' });
    const specFile = writeSpec(spec, cluster);
    const head = sim.hosts[0];
    // The simulated server's last words are its traceback: the log's mtime is the moment of the crash.
    const logFile = join(paths.home(head?.hostDir ?? ''), relative('/home', spec.serve.logPath));
    const runs: CrashRun[] = [];
    for (let r = 0; r < repeats; r++) {
      await reseedCluster(simDir);
      setFaults(simDir, head?.name ?? '', { crashAtShard: crashSettings.crashAtShard });
      const run = await timeProcess(process.execPath, deployArgs(specFile, true), env.cliEnv);
      if (run.code === 0) throw new Error('the crashing deploy succeeded');
      const handle = env.client.workflow.getHandle(deployWorkflowId(cluster));
      const described = await handle.describe().catch((err: unknown) => {
        throw new Error(`the crash deploy did not run (exit ${run.code}): ${run.stdout}${run.stderr}`, {
          cause: err,
        });
      });
      const closedAtMs = described.closeTime?.getTime() ?? Number.NaN;
      const crashedAtMs = statSync(logFile).mtimeMs;
      const launchedAtMs =
        activityRuns(await handle.fetchHistory()).find((x) => x.type === 'launchServe')?.completedAtMs ??
        Number.NaN;
      runs.push({
        crashIntoLoadS: round((crashedAtMs - launchedAtMs) / 1000, 1),
        detectedAfterS: round((closedAtMs - crashedAtMs) / 1000, 2),
        failureType: /"type"\s*:\s*"(\w+)"/.exec(run.stdout)?.[1] ?? 'unknown',
      });
      log(`crash ${r + 1}/${repeats}: detected ${runs.at(-1)?.detectedAfterS} s after the crash`);
    }
    return runs;
  });
}

// ------------------------------------------------------------------------------------------- resume

export interface ResumeRun {
  killedAtShard: number;
  progressMovedAfterS: number;
  launches: number;
  deploySucceeded: boolean;
}

export const resumeSettings = { shards: 40, heartbeatTimeoutS: heartbeatTimeoutSeconds };

export async function measureResume(env: Env, repeats: number): Promise<ResumeRun[]> {
  log(`resume: SIGKILL the worker mid-load, start another; ${repeats} times`);
  return withCluster(resumeSettings.shards, async (sim) => {
    const cluster = 'bench-resume';
    const specFile = writeSpec(deploySpec(sim, cluster), cluster);
    const launchesFile = paths.launches(sim.hosts[0]?.hostDir ?? '');
    const launches = () => readFileSync(launchesFile, 'utf8').split('\n').filter(Boolean).length;
    const runs: ResumeRun[] = [];
    for (let r = 0; r < repeats; r++) {
      await reseedCluster(simDir);
      const launchesBefore = launches();
      const start = await timeProcess(process.execPath, deployArgs(specFile, false), env.cliEnv);
      if (start.code !== 0) throw new Error(`deploy did not start: ${start.stdout}${start.stderr}`);
      let atKill: number | undefined;
      while (atKill === undefined) {
        const p = await queryProgress(env, cluster);
        if ((p?.load?.shardsDone ?? 0) >= 10) atKill = p?.load?.shardsDone;
        else await sleep(200);
      }
      await env.worker.kill('SIGKILL');
      const killedAtMs = Date.now();
      env.worker = await startWorkerProcess({
        address: env.server.address,
        namespace: env.server.namespace,
        workerPolicyPath: env.workerPolicyPath,
      });
      let movedAtMs: number | undefined;
      while (movedAtMs === undefined) {
        const p = await queryProgress(env, cluster);
        if ((p?.load?.shardsDone ?? 0) > atKill) movedAtMs = Date.now();
        else await sleep(100);
      }
      const succeeded = await env.client.workflow
        .getHandle(deployWorkflowId(cluster))
        .result()
        .then(
          () => true,
          () => false,
        );
      runs.push({
        killedAtShard: atKill,
        progressMovedAfterS: round((movedAtMs - killedAtMs) / 1000, 1),
        launches: launches() - launchesBefore,
        deploySucceeded: succeeded,
      });
      log(`resume ${r + 1}/${repeats}: progress moved ${runs.at(-1)?.progressMovedAfterS} s after the kill`);
    }
    return runs;
  });
}

// ------------------------------------------------------------------------------------------- supervision

export interface SupervisionResult {
  measuredIntervalS: number;
  defaultIntervalS: number;
  cost: SupervisionCost;
  /** Control-host CPU-s per hour of supervising one healthy cluster at the default interval (worker + Temporal). */
  cpuSPerHourAtDefault: number;
  /** The same, per process. */
  perProcessPerHourAtDefault: Record<string, number>;
  /** Each process's CPU-s per hour in the supervised windows, and in the idle ones (not counted above). */
  supervisedPerHour: Record<string, number>;
  idlePerHour: Record<string, number>;
}

/**
 * The supervise-faults test's method (bench/supervise-cost.ts): windows of passed rounds at a short interval, as
 * many a report as the defaults make, interleaved with idle ones, the difference per round scaled to the default
 * interval's rounds per hour.
 */
export async function measureSupervision(env: Env, windowMs = 15_000): Promise<SupervisionResult> {
  const intervalS = 2;
  const defaultIntervalS = (parseDuration(superviseSchema.parse(undefined).interval) ?? 30_000) / 1000;
  log(
    `supervision: 2 × ${windowMs / 1000} s of supervising a healthy 2-host cluster every ${intervalS} s, 2 × ${windowMs / 1000} s idle`,
  );
  return withCluster(6, async (sim) => {
    const cluster = 'bench-supervise';
    // As many rounds a report as the defaults make (10m over 30s: 20), at this interval.
    const roundsPerReport =
      (parseDuration(superviseSchema.parse(undefined).reportEvery) ?? 600_000) / 1000 / defaultIntervalS;
    const supervise = {
      interval: `${intervalS}s`,
      reportEvery: `${roundsPerReport * intervalS}s`,
      failureThreshold: 2,
      backoff: '1s',
      maxRelaunches: 3,
      window: '1h',
    };
    await reseedCluster(simDir);
    const specFile = writeSpec(deploySpec(sim, cluster, { supervise }), cluster);
    const pids = { worker: env.worker.pid, temporal: env.server.pid };
    const run = await timeProcess(process.execPath, deployArgs(specFile, true), env.cliEnv);
    if (run.code !== 0) throw new Error(`the supervised deploy failed: ${run.stdout}${run.stderr}`);
    const supervisor = env.client.workflow.getHandle(superviseWorkflowId(cluster));
    try {
      const control = supervisorControl(env.client, superviseWorkflowId(cluster));
      const cost = await supervisionCost(pids, control, windowMs);
      const perProcess = Object.fromEntries(
        Object.entries(cost.perRoundS).map(([k, v]) => [k, round(v * (3600 / defaultIntervalS), 1)]),
      );
      return {
        measuredIntervalS: intervalS,
        defaultIntervalS,
        cost,
        cpuSPerHourAtDefault: round(cpuPerHour(cost, defaultIntervalS), 1),
        perProcessPerHourAtDefault: perProcess,
        supervisedPerHour: perHour(cost.supervisedRate),
        idlePerHour: perHour(cost.idleRate),
      };
    } finally {
      await supervisor.terminate('bench: supervision measured').catch(() => undefined);
    }
  });
}

const perHour = (rates: Record<string, number>) =>
  Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, round(v * 3600, 1)]));
