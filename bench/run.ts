// `npm run bench`: liftoff's orchestration measured against the shell-script way (bench/baseline.sh), on the
// simulated cluster with a real Temporal dev server, a `liftoff worker` process and the real CLI.
// Prints a table and writes bench/results.json. LIFTOFF_BENCH_REPEATS (default 3) sets the runs per size;
// LIFTOFF_BENCH_SIZES (default 2,8,16,32) the cluster sizes.
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { execFileSync } from 'node:child_process';
import { stringify } from 'yaml';
import { Client, Connection } from '@temporalio/client';
import {
  countRemoteCommands,
  countSshHandshakes,
  downCluster,
  reseedCluster,
  setFaults,
  upCluster,
  writeSimWorkerPolicy,
  type SimCluster,
} from '../sim/cluster.js';
import { paths } from '../sim/host-state.js';
import { simDeploySpec } from '../sim/spec.js';
import { startDevServer, type DevServer } from '../src/temporal/dev-server.js';
import { temporalCliPath } from '../src/temporal/cli-path.js';
import { deployWorkflowId } from '../src/shared/constants.js';
import { shellQuote as quote } from '../src/ssh/quote.js';
import type { DeployProgress } from '../src/workflows/steps.js';
import { table } from '../src/cli/render.js';
import { startWorkerProcess, type WorkerProcess } from '../scripts/lib/worker-process.js';
import {
  activityRuns,
  cpuSecondsBetween,
  machineCpu,
  median,
  processUsage,
  resetPeakRss,
  round,
  timeProcess,
  type ProcessUsage,
} from './measure.js';

const sizes = (process.env.LIFTOFF_BENCH_SIZES ?? '2,8,16,32').split(',').map(Number);
const repeats = Number(process.env.LIFTOFF_BENCH_REPEATS ?? '3');
const workDir = '/tmp/liftoff-bench';
const simDir = join(workDir, 'sim');
// Its own network layout and ports, so the bench can run beside the test suite or `liftoff dev`.
const netIndex = 30;
const temporalPort = 27533;
const uiPort = 28533;
const pollSeconds = 1;
const heartbeatTimeoutSeconds = 10; // src/workflows/deploy.ts
const instantTools = { shards: 1, shardSeconds: 0, graphCaptureSeconds: 0, memoryMiB: 1024 };

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const liftoffBin = join(process.cwd(), 'bin', 'liftoff.js');

interface Env {
  server: DevServer;
  client: Client;
  cliEnv: NodeJS.ProcessEnv;
  worker: WorkerProcess;
  /** The worker's LIFTOFF_WORKER_POLICY: the simulated cluster's key and known_hosts. */
  workerPolicyPath: string;
}

// ------------------------------------------------------------------------------------------- specs

function deploySpec(sim: SimCluster, cluster: string, overrides: { loadTimeout?: string } = {}) {
  const spec = simDeploySpec(sim, { cluster });
  return {
    ...spec,
    serve: {
      ...spec.serve,
      pollInterval: `${pollSeconds}s`,
      ...(overrides.loadTimeout ? { loadTimeout: overrides.loadTimeout } : {}),
    },
  };
}

function writeSpec(spec: object, name: string): string {
  const file = join(workDir, `${name}.yaml`);
  writeFileSync(file, stringify(spec));
  return file;
}

/** The baseline's settings: the same cluster, images, ports and paths as the liftoff spec. */
function writeBaselineSettings(sim: SimCluster, spec: ReturnType<typeof deploySpec>): string {
  const arr = (xs: readonly string[]) => `(${xs.map((x) => quote(x)).join(' ')})`;
  const head = sim.hosts[0];
  if (!head) throw new Error('no hosts');
  const lines = [
    `SSH_CONFIG=${quote(sim.sshConfigPath)}`,
    `HOSTS=${arr(sim.hosts.map((h) => h.name))}`,
    `CLUSTER_IPS=${arr(sim.hosts.map((h) => h.clusterIp))}`,
    `HEAD_ADDRESS=${quote(head.address)}`,
    `UNITS=${arr(spec.cleanup.services)}`,
    `OLD_CONTAINERS=${arr(spec.cleanup.containers)}`,
    `CONTAINER=${quote(spec.ray.container)}`,
    `IMAGE=${quote(spec.ray.image)}`,
    `RAY_PORT=${quote(String(spec.ray.port))}`,
    `GPUS_PER_HOST=${quote(String(spec.gpu.perHost))}`,
    `MODEL=${quote(spec.serve.model)}`,
    `SERVE_PORT=${quote(String(spec.serve.port))}`,
    `LOG_PATH=${quote(spec.serve.logPath)}`,
    `POLL_SECONDS=${quote(String(pollSeconds))}`,
    `IFACE=${quote(head.clusterIface)}`,
  ];
  const file = join(workDir, `baseline-${sim.hosts.length}.sh`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

// ------------------------------------------------------------------------------------------- runs

interface RunFigures {
  ms: number;
  /** Machine CPU busy during the run, CPU-seconds (every process: control host and simulated hosts). */
  machineCpuS: number;
  /** What the control host spent: the CLI or script and its children, plus (liftoff) worker and Temporal server. */
  controlCpuS: number;
  handshakes: Record<string, number>;
  commands: Record<string, number>;
}

function hostCounts(sim: SimCluster): {
  handshakes: Record<string, number>;
  commands: Record<string, number>;
} {
  return {
    handshakes: Object.fromEntries(sim.hosts.map((h) => [h.name, countSshHandshakes(sim.stateDir, h.name)])),
    commands: Object.fromEntries(sim.hosts.map((h) => [h.name, countRemoteCommands(sim.stateDir, h.name)])),
  };
}

const diff = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));

/** Runs one deploy (liftoff's or the baseline's) from the reference state, measuring it from outside. */
async function measuredRun(
  env: Env,
  sim: SimCluster,
  command: [string, string[]],
): Promise<RunFigures & { stdout: string }> {
  await reseedCluster(simDir);
  const countsBefore = hostCounts(sim);
  const machineBefore = machineCpu();
  const serverBefore = processUsage(env.server.pid).cpuSeconds;
  const workerBefore = processUsage(env.worker.pid).cpuSeconds;
  const run = await timeProcess(command[0], command[1], env.cliEnv);
  if (run.code !== 0)
    throw new Error(`${command[1].join(' ')} failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  const machineAfter = machineCpu();
  const isLiftoff = command[0] === process.execPath;
  const services = isLiftoff
    ? processUsage(env.server.pid).cpuSeconds -
      serverBefore +
      processUsage(env.worker.pid).cpuSeconds -
      workerBefore
    : 0;
  const countsAfter = hostCounts(sim);
  return {
    ms: run.ms,
    machineCpuS: cpuSecondsBetween(machineBefore, machineAfter),
    controlCpuS: run.cpuSeconds + services,
    handshakes: diff(countsAfter.handshakes, countsBefore.handshakes),
    commands: diff(countsAfter.commands, countsBefore.commands),
    stdout: run.stdout,
  };
}

interface SizeResult {
  hosts: number;
  liftoff: RunFigures[];
  baseline: RunFigures[];
  workflowSeconds: number[];
  stepsMs: Record<string, number>[];
  liftoffMedianS: number;
  baselineMedianS: number;
  ratio: number;
  ssh?: SshCost;
  footprint?: ProcessUsage & { deployCpuSeconds: number };
}

interface SshCost {
  handshakesPerHost: Record<string, number>;
  activityAttemptsPerHost: Record<string, number>;
  /** The highest ratio over the hosts. */
  maxHandshakesPerActivity: number;
}

async function measureSize(env: Env, hosts: number): Promise<SizeResult> {
  log(`${hosts} hosts: bringing up the simulated cluster`);
  const sim = await upCluster({
    hosts,
    mode: 'netns',
    stateDir: simDir,
    netIndex,
    vllm: instantTools,
    // Seeded before each run instead.
    seedReferenceState: false,
  });
  const cluster = `bench-${hosts}`;
  const spec = deploySpec(sim, cluster);
  const specFile = writeSpec(spec, cluster);
  const settings = writeBaselineSettings(sim, spec);
  const result: SizeResult = {
    hosts,
    liftoff: [],
    baseline: [],
    workflowSeconds: [],
    stepsMs: [],
    liftoffMedianS: 0,
    baselineMedianS: 0,
    ratio: 0,
  };
  try {
    for (let r = 0; r < repeats; r++) {
      result.baseline.push(await measuredRun(env, sim, ['bash', ['bench/baseline.sh', settings]]));

      const measureFootprint = hosts === Math.max(...sizes) && r === 0;
      const workerCpuBefore = processUsage(env.worker.pid).cpuSeconds;
      if (measureFootprint) resetPeakRss(env.worker.pid);
      const run = await measuredRun(env, sim, [
        process.execPath,
        [liftoffBin, 'deploy', '-c', specFile, '--follow', '--json'],
      ]);
      if (measureFootprint) {
        const usage = processUsage(env.worker.pid);
        result.footprint = { ...usage, deployCpuSeconds: usage.cpuSeconds - workerCpuBefore };
      }
      const deployResult = JSON.parse(run.stdout) as {
        totalSeconds: number;
        stepDurationsMs: Record<string, number>;
      };
      const { stdout: _stdout, ...figures } = run;
      result.liftoff.push(figures);
      result.workflowSeconds.push(deployResult.totalSeconds);
      result.stepsMs.push(deployResult.stepDurationsMs);
      if (r === 0) result.ssh = await sshCost(env, sim, cluster, run.handshakes);
      const b = result.baseline.at(-1);
      log(
        `${hosts} hosts, run ${r + 1}/${repeats}: baseline ${((b?.ms ?? 0) / 1000).toFixed(1)} s, ` +
          `liftoff ${(run.ms / 1000).toFixed(1)} s (workflow ${deployResult.totalSeconds.toFixed(1)} s: ` +
          `${Object.entries(deployResult.stepDurationsMs)
            .map(([step, ms]) => `${step} ${(ms / 1000).toFixed(1)}`)
            .join(', ')})`,
      );
    }
  } finally {
    await downCluster(simDir);
  }
  result.liftoffMedianS = median(result.liftoff.map((x) => x.ms)) / 1000;
  result.baselineMedianS = median(result.baseline.map((x) => x.ms)) / 1000;
  result.ratio = result.liftoffMedianS / result.baselineMedianS;
  return result;
}

async function sshCost(
  env: Env,
  sim: SimCluster,
  cluster: string,
  handshakesPerHost: Record<string, number>,
): Promise<SshCost> {
  const history = await env.client.workflow.getHandle(deployWorkflowId(cluster)).fetchHistory();
  const attempts: Record<string, number> = Object.fromEntries(sim.hosts.map((h) => [h.name, 0]));
  for (const run of activityRuns(history)) {
    if (run.host && run.host in attempts) attempts[run.host] = (attempts[run.host] ?? 0) + run.attempts;
  }
  const ratios = sim.hosts.map((h) => (handshakesPerHost[h.name] ?? 0) / Math.max(1, attempts[h.name] ?? 0));
  return {
    handshakesPerHost,
    activityAttemptsPerHost: attempts,
    maxHandshakesPerActivity: Math.max(...ratios),
  };
}

// ------------------------------------------------------------------------------------------- crash

interface CrashResult {
  crashAtShard: number;
  crashIntoLoadS: number;
  detectedAfterS: number;
  pollIntervalS: number;
  blindWaitS: number;
  failureType: string;
}

async function measureCrash(env: Env): Promise<CrashResult> {
  log('crash detection: a 2-host load that crashes 3 s in');
  const shardSeconds = 0.5;
  const crashAtShard = 6; // 6 × 0.5 s = 3 s into the load
  const sim = await upCluster({
    hosts: 2,
    mode: 'netns',
    stateDir: simDir,
    netIndex,
    vllm: { shards: 40, shardSeconds, graphCaptureSeconds: 1, memoryMiB: 1024 },
  });
  try {
    const cluster = 'bench-crash';
    const loadTimeout = '25m';
    const spec = deploySpec(sim, cluster, { loadTimeout });
    const specFile = writeSpec(spec, cluster);
    setFaults(simDir, sim.hosts[0]?.name ?? '', { crashAtShard });
    const run = await timeProcess(
      process.execPath,
      [liftoffBin, 'deploy', '-c', specFile, '--follow', '--json'],
      env.cliEnv,
    );
    if (run.code === 0) throw new Error('the crashing deploy succeeded');
    const handle = env.client.workflow.getHandle(deployWorkflowId(cluster));
    const described = await handle.describe().catch((err: unknown) => {
      throw new Error(`the crash deploy did not run (exit ${run.code}): ${run.stdout}${run.stderr}`, {
        cause: err,
      });
    });
    const closedAtMs = described.closeTime?.getTime() ?? Number.NaN;
    const head = sim.hosts[0];
    // The simulated server's last words are its traceback: the log's mtime is the moment of the crash.
    const logFile = join(paths.home(head?.hostDir ?? ''), relative('/home', spec.serve.logPath));
    const crashedAtMs = statSync(logFile).mtimeMs;
    const launchedAtMs =
      activityRuns(await handle.fetchHistory()).find((r) => r.type === 'launchServe')?.completedAtMs ??
      Number.NaN;
    const failure = /"type"\s*:\s*"(\w+)"/.exec(run.stdout)?.[1] ?? 'unknown';
    return {
      crashAtShard,
      crashIntoLoadS: round((crashedAtMs - launchedAtMs) / 1000, 1),
      detectedAfterS: round((closedAtMs - crashedAtMs) / 1000, 2),
      pollIntervalS: pollSeconds,
      blindWaitS: 25 * 60,
      failureType: failure,
    };
  } finally {
    await downCluster(simDir);
  }
}

// ------------------------------------------------------------------------------------------- resume

interface ResumeResult {
  killedAtShard: number;
  shardsTotal: number;
  progressMovedAfterS: number;
  heartbeatTimeoutS: number;
  launches: number;
  deploySucceeded: boolean;
}

async function queryProgress(env: Env, cluster: string): Promise<DeployProgress | undefined> {
  const handle = env.client.workflow.getHandle(deployWorkflowId(cluster));
  try {
    return await env.client.connection.withDeadline(Date.now() + 2000, () =>
      handle.query<DeployProgress>('progress'),
    );
  } catch {
    return undefined;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measureResume(env: Env): Promise<ResumeResult> {
  log('resume: SIGKILL the worker mid-load, start another');
  const shards = 40;
  const sim = await upCluster({
    hosts: 2,
    mode: 'netns',
    stateDir: simDir,
    netIndex,
    vllm: { shards, shardSeconds: 0.5, graphCaptureSeconds: 1, memoryMiB: 1024 },
  });
  try {
    const cluster = 'bench-resume';
    const specFile = writeSpec(deploySpec(sim, cluster), cluster);
    const launchesFile = paths.launches(sim.hosts[0]?.hostDir ?? '');
    const launches = () => readFileSync(launchesFile, 'utf8').split('\n').filter(Boolean).length;
    const launchesBefore = launches();
    const start = await timeProcess(
      process.execPath,
      [liftoffBin, 'deploy', '-c', specFile, '--json'],
      env.cliEnv,
    );
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
    const handle = env.client.workflow.getHandle(deployWorkflowId(cluster));
    const succeeded = await handle.result().then(
      () => true,
      () => false,
    );
    return {
      killedAtShard: atKill,
      shardsTotal: shards,
      progressMovedAfterS: round((movedAtMs - killedAtMs) / 1000, 1),
      heartbeatTimeoutS: heartbeatTimeoutSeconds,
      launches: launches() - launchesBefore,
      deploySucceeded: succeeded,
    };
  } finally {
    await downCluster(simDir);
  }
}

// ------------------------------------------------------------------------------------------- report

const medianOf = (runs: RunFigures[], key: 'machineCpuS' | 'controlCpuS'): number =>
  round(median(runs.map((r) => r[key])), 1);

/** Mean over the hosts (the head runs a few more commands than the workers). */
function perHost(counts: Record<string, number> | undefined): number {
  const values = Object.values(counts ?? {});
  return round(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length), 1);
}

function medianSteps(runs: Record<string, number>[]): Record<string, number> {
  const steps = Object.keys(runs[0] ?? {});
  return Object.fromEntries(steps.map((step) => [step, round(median(runs.map((r) => r[step] ?? 0)) / 1000)]));
}

function versions(): Record<string, string> {
  const pkg = (name: string) =>
    (JSON.parse(readFileSync(join('node_modules', name, 'package.json'), 'utf8')) as { version: string })
      .version;
  const first = (cmd: string, args: string[]) => {
    try {
      return (
        execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
          .split('\n')[0]
          ?.trim() ?? ''
      );
    } catch {
      return 'unknown';
    }
  };
  return {
    node: process.version,
    liftoff: (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version,
    temporalSdk: pkg('@temporalio/worker'),
    temporalCli: first(temporalCliPath(), ['--version']),
    openssh: first('ssh', ['-V']) || first('sh', ['-c', 'ssh -V 2>&1']),
    bash: first('bash', ['--version']),
  };
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  await downCluster(simDir);
  log(
    `Temporal dev server on 127.0.0.1:${temporalPort}; ${repeats} runs per size: ${sizes.join(', ')} hosts`,
  );
  const server = await startDevServer({ stateDir: join(workDir, 'temporal'), port: temporalPort, uiPort });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const cliEnv = { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace };
  // Every size's cluster comes up in simDir with the same key and known_hosts paths: one policy serves them all.
  const workerPolicyPath = writeSimWorkerPolicy(simDir);
  const worker = await startWorkerProcess({
    address: server.address,
    namespace: server.namespace,
    workerPolicyPath,
  });
  const env: Env = { server, client, cliEnv, worker, workerPolicyPath };
  const workerStartup = processUsage(worker.pid);
  try {
    const bySize: SizeResult[] = [];
    for (const hosts of sizes) bySize.push(await measureSize(env, hosts));
    const crash = await measureCrash(env);
    const resume = await measureResume(env);

    const first = bySize[0];
    const last = bySize.at(-1);
    const scale = first && last ? last.liftoffMedianS / first.liftoffMedianS : Number.NaN;
    const ssh = bySize.map((s) => s.ssh?.maxHandshakesPerActivity ?? Number.NaN);
    const footprint = bySize.find((s) => s.footprint)?.footprint;
    const results = {
      date: new Date().toISOString(),
      machine: {
        cores: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        memoryGiB: round(totalmem() / 2 ** 30, 1),
      },
      versions: versions(),
      settings: {
        repeats,
        sizes,
        pollIntervalS: pollSeconds,
        heartbeatTimeoutS: heartbeatTimeoutSeconds,
        tools: instantTools,
      },
      overhead: bySize.map((s) => ({
        hosts: s.hosts,
        liftoffMedianS: round(s.liftoffMedianS),
        baselineMedianS: round(s.baselineMedianS),
        ratio: round(s.ratio),
        liftoffRunsS: s.liftoff.map((x) => round(x.ms / 1000)),
        baselineRunsS: s.baseline.map((x) => round(x.ms / 1000)),
        workflowRunsS: s.workflowSeconds.map((x) => round(x)),
        stepsS: medianSteps(s.stepsMs),
        // Where the time went: the whole machine's busy CPU (simulated hosts included) and the control host's share.
        machineCpuS: {
          liftoff: medianOf(s.liftoff, 'machineCpuS'),
          baseline: medianOf(s.baseline, 'machineCpuS'),
        },
        controlCpuS: {
          liftoff: medianOf(s.liftoff, 'controlCpuS'),
          baseline: medianOf(s.baseline, 'controlCpuS'),
        },
        remoteCommandsPerHost: {
          liftoff: perHost(s.liftoff[0]?.commands),
          baseline: perHost(s.baseline[0]?.commands),
        },
        sshHandshakesPerHost: {
          liftoff: perHost(s.liftoff[0]?.handshakes),
          baseline: perHost(s.baseline[0]?.handshakes),
        },
        ssh: s.ssh,
      })),
      scale: { fromHosts: first?.hosts, toHosts: last?.hosts, ratio: round(scale) },
      crash,
      resume,
      sshHandshakesPerHostPerActivity: Math.max(...ssh),
      footprint: footprint && {
        hosts: last?.hosts,
        peakRssMiB: round(footprint.peakRssMiB, 0),
        cpuSecondsDuringDeploy: round(footprint.deployCpuSeconds),
        startupPeakRssMiB: round(workerStartup.peakRssMiB, 0),
      },
      benchSeconds: round((Date.now() - startedAt) / 1000, 0),
    };
    writeFileSync('bench/results.json', `${JSON.stringify(results, null, 2)}\n`);
    printReport(results);
  } catch (err) {
    // Said before the cleanup below, whose own error would otherwise be the only one shown.
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    throw err;
  } finally {
    await env.worker.kill('SIGTERM').catch(() => undefined);
    await connection.close();
    await server.stop();
    await downCluster(simDir);
  }
}

type Results = {
  overhead: {
    hosts: number;
    liftoffMedianS: number;
    baselineMedianS: number;
    ratio: number;
    machineCpuS: { liftoff: number; baseline: number };
    controlCpuS: { liftoff: number; baseline: number };
    remoteCommandsPerHost: { liftoff: number; baseline: number };
  }[];
  scale: { fromHosts?: number; toHosts?: number; ratio: number };
  crash: CrashResult;
  resume: ResumeResult;
  sshHandshakesPerHostPerActivity: number;
  footprint?: {
    hosts?: number;
    peakRssMiB: number;
    cpuSecondsDuringDeploy: number;
    startupPeakRssMiB: number;
  };
  machine: { cores: number };
  benchSeconds: number;
};

function printReport(r: Results): void {
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
  const ratioAt = (n: number) => r.overhead.find((o) => o.hosts === n)?.ratio;
  const rows = [
    ['measure', 'figure', 'target', ''],
    ...r.overhead.map((o) => {
      const target = o.hosts === 2 ? 1.0 : o.hosts === 16 ? 0.3 : undefined;
      return [
        `overhead, ${o.hosts} hosts`,
        `liftoff ${o.liftoffMedianS.toFixed(1)} s / baseline ${o.baselineMedianS.toFixed(1)} s = ${o.ratio.toFixed(2)}`,
        target === undefined ? '' : `≤ ${target.toFixed(1)}`,
        target === undefined ? '' : mark(o.ratio <= target),
      ];
    }),
    // One size has nothing to compare.
    ...(r.scale.toHosts !== r.scale.fromHosts
      ? [
          [
            `scale, ${r.scale.toHosts} / ${r.scale.fromHosts} hosts`,
            `${r.scale.ratio.toFixed(2)}×`,
            '≤ 2×',
            mark(r.scale.ratio <= 2),
          ],
        ]
      : []),
    [
      'crash detection',
      `${r.crash.detectedAfterS.toFixed(1)} s after a crash ${r.crash.crashIntoLoadS.toFixed(1)} s into the load (poll ${r.crash.pollIntervalS} s; blind wait ${r.crash.blindWaitS / 60} min)`,
      `≤ poll + 2 s`,
      mark(r.crash.detectedAfterS <= r.crash.pollIntervalS + 2),
    ],
    [
      'resume after worker SIGKILL',
      `progress moved ${r.resume.progressMovedAfterS.toFixed(1)} s after the kill (shard ${r.resume.killedAtShard}/${r.resume.shardsTotal}); ${r.resume.launches} launch`,
      `≤ ${r.resume.heartbeatTimeoutS + 5} s, 1 launch`,
      mark(r.resume.progressMovedAfterS <= r.resume.heartbeatTimeoutS + 5 && r.resume.launches === 1),
    ],
    [
      'SSH handshakes per host per activity',
      `${r.sshHandshakesPerHostPerActivity.toFixed(2)} (max over hosts and sizes)`,
      '≤ 1',
      mark(r.sshHandshakesPerHostPerActivity <= 1),
    ],
    ...(r.footprint
      ? [
          [
            `worker footprint, ${r.footprint.hosts}-host deploy`,
            `peak RSS ${r.footprint.peakRssMiB} MiB, ${r.footprint.cpuSecondsDuringDeploy.toFixed(1)} CPU s (startup peak ${r.footprint.startupPeakRssMiB} MiB)`,
            '< 250 MB',
            mark(r.footprint.peakRssMiB * 1.048576 < 250),
          ],
        ]
      : []),
  ];
  const bySize = [
    [
      'hosts',
      'baseline s',
      'liftoff s',
      'ratio',
      'commands/host (liftoff, baseline)',
      'busy CPU-s, all processes (liftoff, baseline)',
      'control-host CPU-s (liftoff, baseline)',
    ],
    ...r.overhead.map((o) => [
      String(o.hosts),
      o.baselineMedianS.toFixed(1),
      o.liftoffMedianS.toFixed(1),
      o.ratio.toFixed(2),
      `${o.remoteCommandsPerHost.liftoff}, ${o.remoteCommandsPerHost.baseline}`,
      `${o.machineCpuS.liftoff}, ${o.machineCpuS.baseline}`,
      `${o.controlCpuS.liftoff}, ${o.controlCpuS.baseline}`,
    ]),
  ];
  process.stdout.write(`${table(rows)}\n\n${table(bySize)}\n`);
  process.stdout.write(
    `${r.machine.cores} cores; medians; ratios at 2 and 16 hosts: ${ratioAt(2) ?? '-'}, ${ratioAt(16) ?? '-'}; bench took ${r.benchSeconds} s; figures in bench/results.json\n`,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
