// `npm run bench`: liftoff's orchestration measured against the shell-script way (bench/baseline.sh), on the
// simulated cluster with a real Temporal dev server, a `liftoff worker` process and the real CLI: every size's
// baseline and liftoff deploys, crash detection, resume after a worker SIGKILL, and the cost of supervising.
// Prints each target of issue 33 (sizes up to 128 hosts) and issue 18 beside its figure (met / not met, and what
// binds a missed one) and writes every figure to bench/results.json.
//
//   npm run bench [-- --sizes 2,16,64,128] [--repeats 3] [--no-faults]
//   npm run bench -- --only idle-metrics    (one measurement alone, its figure merged into bench/results.json)
//   npm run bench -- --only fleet [--clusters 50] [--fleet-minutes 10] [--idle-minutes 5]   (bench/fleet-supervision.ts;
//                                                                    a full run ends with it, unless --no-faults)
//   npm run bench -- --only outages [--repeats 3]   (bench/outage-runs.ts, merged into bench/results.json as outages)
//
// LIFTOFF_BENCH_SIZES and LIFTOFF_BENCH_REPEATS set the same as the flags. A size this machine cannot bring up
// (bench/capacity.ts) is reported with the limit that stops it, and the others are still measured.
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { downCluster, writeSimWorkerPolicy } from '../sim/cluster.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { temporalCliPath } from '../src/temporal/cli-path.js';
import { table } from '../src/cli/render.js';
import { startWorkerProcess } from '../scripts/lib/worker-process.js';
import {
  heartbeatTimeoutSeconds,
  instantTools,
  log,
  pollSeconds,
  simDir,
  temporalPort,
  uiPort,
  workDir,
  type Env,
} from './context.js';
import { SimCpuMeter } from './cpu-groups.js';
import {
  measureCrash,
  measureResume,
  measureSupervision,
  crashSettings,
  resumeSettings,
} from './fault-runs.js';
import { runFleetBench } from './fleet-supervision.js';
import { processUsage, round } from './measure.js';
import { outageBench } from './outage-runs.js';
import { measureSize, type SizeResult } from './size-runs.js';
import { judge, summarizeSize, type SizeSummary, type Target } from './summary.js';
import { idleMetricsTarget, measureIdleMetrics, type IdleMetricsResult } from './metrics-idle.js';

// The bench measures liftoff, not the simulator: its hosts' read-only tool calls go to their tool servers (~2 ms
// of CPU each instead of a Node process's ~50; sim/tool-server.ts).
process.env.LIFTOFF_SIM_TOOL_SERVER ??= '1';

const { values: flags } = parseArgs({
  options: {
    sizes: { type: 'string', default: process.env.LIFTOFF_BENCH_SIZES ?? '2,16,64,128' },
    repeats: { type: 'string', default: process.env.LIFTOFF_BENCH_REPEATS ?? '3' },
    // Sizes only: for a quick look at the deploy figures.
    'no-faults': { type: 'boolean', default: false },
    // One measurement alone, against a Temporal of its own; its figure replaces its own in bench/results.json.
    only: { type: 'string' },
    // `--only fleet`: one worker supervising many clusters (bench/fleet-supervision.ts).
    clusters: { type: 'string', default: '50' },
    'fleet-minutes': { type: 'string', default: '10' },
    'idle-minutes': { type: 'string', default: '5' },
  },
});
const sizes = (flags.sizes ?? '').split(',').map(Number);
const repeats = Number(flags.repeats);
if (!sizes.every((n) => Number.isInteger(n) && n > 0) || !(repeats >= 1))
  throw new Error(
    `--sizes wants e.g. 2,16,64 and --repeats a count; got ${flags.sizes} and ${flags.repeats}`,
  );

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
    liftoffCommit: first('git', ['rev-parse', 'HEAD']),
    temporalSdk: pkg('@temporalio/worker'),
    temporalCli: first(temporalCliPath(), ['--version']),
    openssh: first('sh', ['-c', 'ssh -V 2>&1']),
    bash: first('bash', ['--version']),
    kernel: first('uname', ['-r']),
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
  const server = await startDevServer({
    stateDir: join(workDir, 'temporal'),
    port: temporalPort,
    uiPort,
  });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const cliEnv = { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace };
  // Every size's cluster comes up in simDir with the same key and known_hosts paths: one policy serves them all.
  // Kept outside simDir: a cluster's bring-up refuses a state dir that holds files of no cluster.
  const workerPolicyPath = join(workDir, 'worker-policy.yaml');
  renameSync(writeSimWorkerPolicy(simDir), workerPolicyPath);
  rmSync(simDir, { recursive: true, force: true });
  const worker = await startWorkerProcess({
    address: server.address,
    namespace: server.namespace,
    workerPolicyPath,
  });
  const simCpu = new SimCpuMeter(workDir);
  if (!simCpu.available) log(`CPU of the simulated hosts' sshd and tools not measured: ${simCpu.why}`);
  const env: Env = { server, client, cliEnv, worker, workerPolicyPath, simCpu };
  const workerStartup = processUsage(worker.pid);
  const cores = cpus().length;
  try {
    if (flags.only === 'outages') return await outageBench(env, repeats);
    const bySize: SizeResult[] = [];
    for (const hosts of sizes) bySize.push(await measureSize(env, hosts, repeats));
    const faults = !flags['no-faults'];
    const crash = faults ? await measureCrash(env, repeats) : [];
    const resume = faults ? await measureResume(env, repeats) : [];
    const supervision = faults ? await measureSupervision(env) : undefined;
    const idleMetrics = faults ? await measureIdleMetrics(server.address, server.namespace) : undefined;
    const summaries = bySize.map((s) => summarizeSize(s, cores));
    const targets = [
      ...judge(summaries, crash, resume),
      ...(idleMetrics ? [idleMetricsTarget(idleMetrics)] : []),
    ];
    const results = {
      date: new Date().toISOString(),
      machine: {
        cores,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        memoryGiB: round(totalmem() / 2 ** 30, 1),
        loadAverageAtEnd: loadAverage(),
      },
      versions: versions(),
      settings: {
        repeats,
        sizes,
        pollIntervalS: pollSeconds,
        heartbeatTimeoutS: heartbeatTimeoutSeconds,
        tools: instantTools,
      },
      targets,
      sizes: summaries,
      capacity: bySize.map((s) => s.capacity),
      crash: { ...crashSettings, runs: crash },
      resume: { ...resumeSettings, runs: resume },
      supervision,
      idleMetrics,
      workerStartupPeakRssMiB: round(workerStartup.peakRssMiB, 0),
      cpuGroupsMeasured: simCpu.available ? 'yes' : simCpu.why,
      raw: bySize,
      benchSeconds: round((Date.now() - startedAt) / 1000, 0),
    };
    writeFileSync('bench/results.json', `${JSON.stringify(results, null, 2)}\n`);
    printReport(summaries, targets, supervision, cores, results.benchSeconds);
    if (faults) await outageBench(env, repeats);
  } catch (err) {
    // Said before the cleanup below, whose own error would otherwise be the only one shown.
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    throw err;
  } finally {
    await env.worker.kill('SIGTERM').catch(() => undefined);
    await connection.close();
    await server.stop();
    // Never hide the error that brought us here behind one of the teardown's.
    await downCluster(simDir).catch((err: unknown) => log(`teardown: ${(err as Error).message}`));
    simCpu.close();
  }
}

function printReport(
  sizes: readonly SizeSummary[],
  targets: readonly Target[],
  supervision: Awaited<ReturnType<typeof measureSupervision>> | undefined,
  cores: number,
  benchSeconds: number,
): void {
  const out: string[] = [];
  out.push(
    table([
      ['measure', 'figure', 'target', ''],
      ...targets.map((t) => [t.measure, t.figure, t.target, t.met ? 'met' : 'not met']),
      ...(supervision
        ? [
            [
              'supervision cost',
              `${supervision.cpuSPerHourAtDefault} control-host CPU-s per hour per cluster at the default ${supervision.defaultIntervalS} s interval (worker ${supervision.perProcessPerHourAtDefault.worker}, Temporal server ${supervision.perProcessPerHourAtDefault.temporal}; measured over ${supervision.cost.rounds} rounds at ${supervision.measuredIntervalS} s against idle windows of the same length${supervision.cost.belowNoise.length ? `; below the idle noise: ${supervision.cost.belowNoise.join(', ')}` : ''})`,
              '',
              '',
            ],
          ]
        : []),
    ]),
  );
  const missed = targets.filter((t) => !t.met && t.binds?.length);
  if (missed.length) {
    out.push('', 'What binds the missed targets:');
    for (const t of missed) out.push(`  ${t.measure}:`, ...(t.binds ?? []).map((b) => `    ${b}`));
  }
  const cell = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  out.push(
    '',
    table([
      [
        'hosts',
        'baseline s',
        'liftoff s',
        'ratio',
        "liftoff's own CPU-s/host (CLI+worker+Temporal)",
        'commands/host excl. polls (liftoff head/mean; baseline)',
        'load-poll commands/host (head/mean)',
        'handshakes/host (liftoff first deploy/median; baseline)',
        'worker peak RSS MiB',
        'CPU-s CLI / worker / Temporal / sim tools / sshd',
        'machine busy',
      ],
      ...sizes.map((s) =>
        s.notMeasured
          ? [String(s.hosts), `not measured: ${s.notMeasured}`, '', '', '', '', '', '', '', '', '']
          : [
              String(s.hosts),
              cell(s.baselineMedianS),
              cell(s.liftoffMedianS),
              cell(s.ratio, 2),
              cell(s.ownCpuSPerHost.total, 3),
              `${cell(s.commandsPerHost.liftoff.excludingPolls.head)}/${cell(s.commandsPerHost.liftoff.excludingPolls.mean)}; ${cell(s.commandsPerHost.baseline.all.mean)}`,
              `${cell(s.commandsPerHost.liftoff.polls.head)}/${cell(s.commandsPerHost.liftoff.polls.mean)}`,
              `${cell(s.sshHandshakesPerHostFirstDeploy.mean)}/${cell(s.sshHandshakesPerHostPerDeploy.liftoff.mean)}; ${cell(s.sshHandshakesPerHostPerDeploy.baseline.mean)}`,
              cell(s.workerPeakRssMiB, 0),
              [
                s.cpuS.liftoff.client,
                s.cpuS.liftoff.worker,
                s.cpuS.liftoff.temporal,
                s.cpuS.liftoff.simTools,
                s.cpuS.liftoff.simSshd,
              ]
                .map((x) => cell(x))
                .join(' / '),
              `${Math.round(s.machineBusy.liftoff * 100)}%`,
            ],
      ),
    ]),
    `${cores} cores; medians of ${repeats}; bench took ${benchSeconds} s; every figure in bench/results.json`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

/**
 * `--only idle-metrics`: the idle cost of the metrics endpoint alone, against a dev server of its own, merged into
 * bench/results.json (its `idleMetrics` and its target replaced, every other figure left as the last full run
 * wrote it). The result says when it was measured and at which commit, since the file's `date` is the full run's.
 */
async function onlyIdleMetrics(): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), 'liftoff-bench-idle-temporal-'));
  const server = await startDevServer({ stateDir, port: temporalPort, uiPort });
  let result: IdleMetricsResult;
  try {
    result = await measureIdleMetrics(server.address, server.namespace);
  } finally {
    await server.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
  const target = idleMetricsTarget(result);
  const file = 'bench/results.json';
  const results = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> & { targets?: Target[] };
  results.targets = [...(results.targets ?? []).filter((t) => t.measure !== target.measure), target];
  results.idleMetrics = {
    ...result,
    alone: { cores: cpus().length, liftoffCommit: versions().liftoffCommit, loadAverageAtEnd: loadAverage() },
  };
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(
    `${table([
      ['measure', 'figure', 'target', ''],
      [target.measure, target.figure, target.target, target.met ? 'met' : 'not met'],
    ])}\n${target.binds?.join('\n') ?? ''}\nmerged into ${file}\n`,
  );
}

const loadAverage = (): number[] => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

/** The measurements `--only NAME` runs alone. */
const alone: Record<string, () => Promise<void>> = {
  'idle-metrics': onlyIdleMetrics,
  fleet: () =>
    runFleetBench({
      clusters: Number(flags.clusters),
      minutes: Number(flags['fleet-minutes']),
      idleMinutes: Number(flags['idle-minutes']),
    }),
  // The outages need the bench's dev server, worker and simulated cluster: main() sets them up and runs only these.
  outages: main,
};

async function chosen(): Promise<void> {
  if (flags.only === undefined) {
    await main();
    // Against a Temporal and clusters of its own, after main's have gone; it merges its figure into the results.
    if (!flags['no-faults']) await alone.fleet?.();
    return;
  }
  const run = alone[flags.only];
  if (!run) throw new Error(`--only wants one of ${Object.keys(alone).join(', ')}; got ${flags.only}`);
  return run();
}

chosen().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
