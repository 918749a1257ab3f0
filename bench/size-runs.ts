// One cluster size of `npm run bench`: the baseline and liftoff deploys from the same reference state, each
// measured from outside (wall time, CPU by process group, remote commands and SSH handshakes per host).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  countRemoteCommands,
  countSshHandshakes,
  downCluster,
  reseedCluster,
  upCluster,
  type SimCluster,
} from '../sim/cluster.js';
import { readSshdPid } from '../sim/sshd.js';
import { toolServerPid } from '../sim/tool-server.js';
import { clusterWorkflowId } from '../src/shared/cluster-api.js';
import { deployWorkflowId } from '../src/shared/constants.js';
import { shellQuote as quote } from '../src/ssh/quote.js';
import { stepOfActivity } from '../src/workflows/steps.js';
import { capacityFor, type Capacity } from './capacity.js';
import {
  deploySpec,
  instantTools,
  liftoffBin,
  log,
  netIndex,
  pollSeconds,
  simDir,
  workDir,
  writeSpec,
  type Env,
} from './context.js';
import {
  activityRuns,
  cpuSecondsBetween,
  machineCpu,
  processUsage,
  resetPeakRss,
  timeProcess,
} from './measure.js';

/** CPU-s of one run by process group; `rest` is the machine's busy CPU that none of the groups accounts for. */
export interface CpuGroups {
  /** The liftoff CLI, or the baseline script with its OpenSSH clients. */
  client: number;
  worker: number;
  temporal: number;
  simTools: number;
  simSshd: number;
  rest: number;
}

export interface RunFigures {
  ms: number;
  /** Machine CPU busy during the run, CPU-seconds (every process: control host and simulated hosts). */
  machineCpuS: number;
  /** What the control host spent: the CLI or script and its children, plus (liftoff) worker and Temporal server. */
  controlCpuS: number;
  cpu: CpuGroups;
  handshakes: Record<string, number>;
  /** Every remote command (SSH session) per host. */
  commands: Record<string, number>;
  /**
   * Of which load polls (liftoff; from the history): its waitHealthy activities (checkServeHealth on the head,
   * checkRayWorker on the others), each one remote command. The baseline has none: it polls from the control host.
   */
  polls?: Record<string, number>;
  /** Every activity attempt per host (liftoff; from the history). */
  attempts?: Record<string, number>;
  /** The worker's peak RSS during the run (liftoff), MiB. */
  workerPeakRssMiB?: number;
  workflowSeconds?: number;
  stepsMs?: Record<string, number>;
}

export interface SizeResult {
  hosts: number;
  capacity: Capacity;
  /** Why the size was not measured; undefined when it was. */
  notMeasured?: string;
  liftoff: RunFigures[];
  baseline: RunFigures[];
  /** `liftoff down` of the cluster the last liftoff run left serving: wall time of the CLI process. */
  down?: { ms: number };
}

type Counts = Record<string, number>;

function hostCounts(sim: SimCluster): { handshakes: Counts; commands: Counts } {
  return {
    handshakes: Object.fromEntries(sim.hosts.map((h) => [h.name, countSshHandshakes(sim.stateDir, h.name)])),
    commands: Object.fromEntries(sim.hosts.map((h) => [h.name, countRemoteCommands(sim.stateDir, h.name)])),
  };
}

const diff = (after: Counts, before: Counts): Counts =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));

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

/** Runs one deploy (liftoff's or the baseline's) from the reference state, measuring it from outside. */
async function measuredRun(
  env: Env,
  sim: SimCluster,
  command: [string, string[]],
  isLiftoff: boolean,
): Promise<RunFigures & { stdout: string }> {
  await reseedCluster(simDir);
  const countsBefore = hostCounts(sim);
  if (isLiftoff) resetPeakRss(env.worker.pid);
  const machineBefore = machineCpu();
  const simBefore = env.simCpu.mark();
  const serverBefore = processUsage(env.server.pid).cpuSeconds;
  const workerBefore = processUsage(env.worker.pid).cpuSeconds;
  const run = await timeProcess(command[0], command[1], env.cliEnv);
  const machineCpuS = cpuSecondsBetween(machineBefore, machineCpu());
  const sim_ = env.simCpu.since(simBefore);
  const worker = processUsage(env.worker.pid);
  if (run.code !== 0)
    throw new Error(`${command[1].join(' ')} failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  const cpu = {
    client: run.cpuSeconds,
    worker: worker.cpuSeconds - workerBefore,
    temporal: processUsage(env.server.pid).cpuSeconds - serverBefore,
    simTools: sim_.toolsS,
    simSshd: sim_.sshdS,
    rest: 0,
  };
  cpu.rest =
    machineCpuS -
    cpu.client -
    cpu.worker -
    cpu.temporal -
    (Number.isNaN(sim_.simTotalS) ? 0 : sim_.simTotalS);
  const countsAfter = hostCounts(sim);
  return {
    ms: run.ms,
    machineCpuS,
    controlCpuS: run.cpuSeconds + (isLiftoff ? cpu.worker + cpu.temporal : 0),
    cpu,
    handshakes: diff(countsAfter.handshakes, countsBefore.handshakes),
    commands: diff(countsAfter.commands, countsBefore.commands),
    ...(isLiftoff ? { workerPeakRssMiB: worker.peakRssMiB } : {}),
    stdout: run.stdout,
  };
}

/** Per host, from the deploy's history: poll activities, and every activity attempt. */
async function activitiesPerHost(
  env: Env,
  sim: SimCluster,
  cluster: string,
): Promise<{ polls: Counts; attempts: Counts }> {
  const history = await env.client.workflow.getHandle(deployWorkflowId(cluster)).fetchHistory();
  const zero = (): Counts => Object.fromEntries(sim.hosts.map((h) => [h.name, 0]));
  const polls = zero();
  const attempts = zero();
  for (const run of activityRuns(history)) {
    if (!run.host || !(run.host in attempts)) continue;
    attempts[run.host] = (attempts[run.host] ?? 0) + run.attempts;
    if (stepOfActivity(run.type) === 'waitHealthy') polls[run.host] = (polls[run.host] ?? 0) + run.attempts;
  }
  return { polls, attempts };
}

export async function measureSize(env: Env, hosts: number, repeats: number): Promise<SizeResult> {
  const capacity = capacityFor(hosts);
  const result: SizeResult = { hosts, capacity, liftoff: [], baseline: [] };
  if (!capacity.ok) {
    result.notMeasured = `this machine's limit: ${capacity.reason}`;
    log(`${hosts} hosts: not measured (${result.notMeasured})`);
    return result;
  }
  log(`${hosts} hosts: bringing up the simulated cluster`);
  let sim: SimCluster;
  try {
    sim = await upCluster({
      hosts,
      mode: 'netns',
      stateDir: simDir,
      netIndex,
      vllm: instantTools,
      // Seeded before each run instead.
      seedReferenceState: false,
    });
  } catch (err) {
    await downCluster(simDir).catch(() => undefined);
    result.notMeasured = `the ${hosts}-host cluster did not come up on this machine: ${(err as Error).message.split('\n')[0]}`;
    log(`${hosts} hosts: not measured (${result.notMeasured})`);
    return result;
  }
  // The tool servers too: bring-up started them from this process, outside the sshds' group, and the read-only
  // tool calls they serve are the simulated hosts' work.
  env.simCpu.adopt(sim.hosts.flatMap((h) => [readSshdPid(h.hostDir), toolServerPid(h.hostDir)]));
  const cluster = `bench-${hosts}`;
  const spec = deploySpec(sim, cluster);
  const specFile = writeSpec(spec, cluster);
  const settings = writeBaselineSettings(sim, spec);
  try {
    await measureRuns(env, sim, result, { cluster, specFile, settings, repeats });
  } catch (err) {
    // One size's failure is its figure: the others are still measured, and the report says what stopped it.
    result.notMeasured = `the ${hosts}-host deploy failed: ${await whyFailed(env, cluster, err)}`;
    log(`${hosts} hosts: not measured (${result.notMeasured})`);
  } finally {
    await downCluster(simDir);
  }
  return result;
}

/**
 * Why a run failed, in one line: a workflow task the server refused (the cluster's or the deploy's workflow; the
 * CLI only sees the update or the deploy fail) names the limit, else the first line of the error.
 */
async function whyFailed(env: Env, cluster: string, err: unknown): Promise<string> {
  for (const id of [clusterWorkflowId(cluster), deployWorkflowId(cluster)]) {
    try {
      const events = (await env.client.workflow.getHandle(id).fetchHistory()).events ?? [];
      for (const e of [...events].reverse()) {
        const why =
          e.workflowTaskFailedEventAttributes?.failure?.message ??
          e.workflowExecutionTerminatedEventAttributes?.reason;
        if (why) return `${id}: ${why.split('\n')[0]?.slice(0, 400) ?? ''}`;
      }
    } catch {
      // no such workflow: the failure was elsewhere
    }
  }
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]?.slice(0, 400) ?? '';
}

/** A size's repeats (baseline, then liftoff, each from the reference state), then `liftoff down`. */
async function measureRuns(
  env: Env,
  sim: SimCluster,
  result: SizeResult,
  files: { cluster: string; specFile: string; settings: string; repeats: number },
): Promise<void> {
  const { cluster, specFile, settings, repeats } = files;
  const { hosts } = result;
  for (let r = 0; r < repeats; r++) {
    const { stdout: _b, ...b } = await measuredRun(
      env,
      sim,
      ['bash', ['bench/baseline.sh', settings]],
      false,
    );
    result.baseline.push(b);
    const run = await measuredRun(
      env,
      sim,
      [process.execPath, [liftoffBin, 'deploy', '-c', specFile, '--follow', '--json']],
      true,
    );
    const deploy = JSON.parse(run.stdout) as {
      totalSeconds: number;
      stepDurationsMs: Record<string, number>;
    };
    const { stdout: _l, ...figures } = run;
    const activities = await activitiesPerHost(env, sim, cluster);
    result.liftoff.push({
      ...figures,
      ...activities,
      workflowSeconds: deploy.totalSeconds,
      stepsMs: deploy.stepDurationsMs,
    });
    log(
      `${hosts} hosts, run ${r + 1}/${repeats}: baseline ${(b.ms / 1000).toFixed(1)} s, ` +
        `liftoff ${(run.ms / 1000).toFixed(1)} s (workflow ${deploy.totalSeconds.toFixed(1)} s: ` +
        `${Object.entries(deploy.stepDurationsMs)
          .map(([step, ms]) => `${step} ${(ms / 1000).toFixed(1)}`)
          .join(', ')})`,
    );
  }
  const down = await timeProcess(process.execPath, [liftoffBin, 'down', cluster, '--json'], env.cliEnv);
  if (down.code !== 0)
    throw new Error(`liftoff down ${cluster} failed (exit ${down.code}):\n${down.stdout}\n${down.stderr}`);
  result.down = { ms: down.ms };
  log(`${hosts} hosts: liftoff down ${(down.ms / 1000).toFixed(1)} s`);
}
