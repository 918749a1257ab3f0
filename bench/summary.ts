// From the bench's raw runs to its figures: medians of the repeats, per-host counts, and each target of issue 33
// (with issue 18's per-host commands and handshakes) judged against its figure. The report prints these;
// bench/results.json holds them with the raw runs.
import { median, round } from './measure.js';
import type { CpuGroups, RunFigures, SizeResult } from './size-runs.js';
import type { CrashRun, ResumeRun } from './fault-runs.js';
import { crashSettings, resumeSettings } from './fault-runs.js';

type Counts = Record<string, number>;

export interface HostFigure {
  /** The head (the first host): it runs the Ray head, the server and the load polls. */
  head: number;
  mean: number;
  max: number;
}

export interface CommandFigures {
  all: HostFigure;
  excludingPolls: HostFigure;
  /** Load polls: liftoff's poll activities from its history, one remote command each; none for the baseline. */
  polls: HostFigure;
}

export interface SizeSummary {
  hosts: number;
  notMeasured?: string;
  liftoffMedianS: number;
  baselineMedianS: number;
  ratio: number;
  liftoffRunsS: number[];
  baselineRunsS: number[];
  workflowRunsS: number[];
  stepsS: Record<string, number>;
  /** Median CPU-s per process group over the runs. */
  cpuS: { liftoff: CpuGroups; baseline: CpuGroups };
  /** Median busy CPU of the whole machine over the run, as a fraction of all cores. */
  machineBusy: { liftoff: number; baseline: number };
  machineCpuS: { liftoff: number; baseline: number };
  controlCpuS: { liftoff: number; baseline: number };
  commandsPerHost: { liftoff: CommandFigures; baseline: CommandFigures };
  /** Median over the runs: a worker's later deploys reuse the connections its first one opened. */
  sshHandshakesPerHostPerDeploy: { liftoff: HostFigure; baseline: HostFigure };
  /** The size's first liftoff deploy: the worker opens its connections to the new cluster's hosts. */
  sshHandshakesPerHostFirstDeploy: HostFigure;
  /** The highest handshakes / activity attempts ratio over the hosts (median over the runs). */
  sshHandshakesPerActivityMax: number;
  workerPeakRssMiB: number;
  /** liftoff's own CPU-s per host of a deploy (CLI, worker and Temporal server), each the median over the runs. */
  ownCpuSPerHost: OwnCpuPerHost;
}

export interface OwnCpuPerHost {
  /** CLI + worker + Temporal server, summed per run, then divided by the hosts. */
  total: number;
  client: number;
  worker: number;
  temporal: number;
}

const medianBy = <T>(xs: readonly T[], f: (x: T) => number, digits = 2): number =>
  round(median(xs.map(f)), digits);

function hostFigure(runs: readonly Counts[], head: string): HostFigure {
  const per = (c: Counts) => Object.values(c);
  return {
    head: medianBy(runs, (c) => c[head] ?? 0, 1),
    mean: medianBy(runs, (c) => per(c).reduce((a, b) => a + b, 0) / Math.max(1, per(c).length), 1),
    max: medianBy(runs, (c) => Math.max(...per(c)), 1),
  };
}

const minus = (a: Counts, b: Counts): Counts =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - (b[k] ?? 0)]));

/** A run's load polls per host: every host is there, with 0 where it polled nothing (the baseline). */
const pollsOf = (r: RunFigures): Counts =>
  Object.fromEntries(Object.keys(r.commands).map((h) => [h, r.polls?.[h] ?? 0]));

function commandFigures(runs: readonly RunFigures[], head: string): CommandFigures {
  return {
    all: hostFigure(
      runs.map((r) => r.commands),
      head,
    ),
    excludingPolls: hostFigure(
      runs.map((r) => minus(r.commands, pollsOf(r))),
      head,
    ),
    polls: hostFigure(runs.map(pollsOf), head),
  };
}

function cpuGroups(runs: readonly RunFigures[]): CpuGroups {
  const keys = ['client', 'worker', 'temporal', 'simTools', 'simSshd', 'rest'] as const;
  return Object.fromEntries(keys.map((k) => [k, medianBy(runs, (r) => r.cpu[k], 1)])) as unknown as CpuGroups;
}

function ownCpuPerHost(runs: readonly RunFigures[], hosts: number): OwnCpuPerHost {
  const per = (f: (c: CpuGroups) => number) => medianBy(runs, (r) => f(r.cpu) / hosts, 3);
  return {
    total: per((c) => c.client + c.worker + c.temporal),
    client: per((c) => c.client),
    worker: per((c) => c.worker),
    temporal: per((c) => c.temporal),
  };
}

export function summarizeSize(s: SizeResult, cores: number): SizeSummary {
  const head = Object.keys(s.liftoff[0]?.commands ?? s.baseline[0]?.commands ?? {})[0] ?? '';
  const l = s.liftoff;
  const b = s.baseline;
  const liftoffMedianS = medianBy(l, (r) => r.ms / 1000);
  const baselineMedianS = medianBy(b, (r) => r.ms / 1000);
  const steps = Object.keys(l[0]?.stepsMs ?? {});
  return {
    hosts: s.hosts,
    ...(s.notMeasured ? { notMeasured: s.notMeasured } : {}),
    liftoffMedianS,
    baselineMedianS,
    ratio: round(liftoffMedianS / baselineMedianS),
    liftoffRunsS: l.map((r) => round(r.ms / 1000)),
    baselineRunsS: b.map((r) => round(r.ms / 1000)),
    workflowRunsS: l.map((r) => round(r.workflowSeconds ?? Number.NaN)),
    stepsS: Object.fromEntries(steps.map((st) => [st, medianBy(l, (r) => (r.stepsMs?.[st] ?? 0) / 1000)])),
    cpuS: { liftoff: cpuGroups(l), baseline: cpuGroups(b) },
    machineBusy: {
      liftoff: medianBy(l, (r) => r.machineCpuS / (cores * (r.ms / 1000))),
      baseline: medianBy(b, (r) => r.machineCpuS / (cores * (r.ms / 1000))),
    },
    machineCpuS: {
      liftoff: medianBy(l, (r) => r.machineCpuS, 1),
      baseline: medianBy(b, (r) => r.machineCpuS, 1),
    },
    controlCpuS: {
      liftoff: medianBy(l, (r) => r.controlCpuS, 1),
      baseline: medianBy(b, (r) => r.controlCpuS, 1),
    },
    commandsPerHost: { liftoff: commandFigures(l, head), baseline: commandFigures(b, head) },
    sshHandshakesPerHostPerDeploy: {
      liftoff: hostFigure(
        l.map((r) => r.handshakes),
        head,
      ),
      baseline: hostFigure(
        b.map((r) => r.handshakes),
        head,
      ),
    },
    sshHandshakesPerHostFirstDeploy: hostFigure(
      l.slice(0, 1).map((r) => r.handshakes),
      head,
    ),
    sshHandshakesPerActivityMax: medianBy(l, (r) =>
      Math.max(...Object.entries(r.handshakes).map(([h, n]) => n / Math.max(1, r.attempts?.[h] ?? 0))),
    ),
    workerPeakRssMiB: medianBy(l, (r) => r.workerPeakRssMiB ?? Number.NaN, 0),
    ownCpuSPerHost: ownCpuPerHost(l, s.hosts),
  };
}

export interface Target {
  measure: string;
  figure: string;
  target: string;
  met: boolean;
  /** What the figure is bound by, when the target is missed. */
  binds?: string[];
}

const fmt = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');

/** The three steps of a size's liftoff deploy that took longest (median seconds), where its wall time went. */
const slowestSteps = (s: SizeSummary): string =>
  Object.entries(s.stepsS)
    .sort(([, a], [, b]) => b - a)
    .slice(0, 3)
    .map(([step, secs]) => `${step} ${fmt(secs)} s`)
    .join(', ') || '-';

/** Where the CPU of a size's liftoff deploy went, and the commands it ran: the lines printed under a missed target. */
export function bindingLines(s: SizeSummary): string[] {
  const c = s.cpuS.liftoff;
  const cb = s.cpuS.baseline;
  const cmd = s.commandsPerHost.liftoff;
  return [
    `${s.hosts} hosts, CPU-s by process group (liftoff | baseline): CLI ${fmt(c.client)} | script+ssh ${fmt(cb.client)}, ` +
      `worker ${fmt(c.worker)}, Temporal server ${fmt(c.temporal)}, simulated hosts' tools ${fmt(c.simTools)} | ${fmt(cb.simTools)}, ` +
      `sshd ${fmt(c.simSshd)} | ${fmt(cb.simSshd)}, other ${fmt(c.rest)} | ${fmt(cb.rest)}; ` +
      `machine ${Math.round(s.machineBusy.liftoff * 100)}% | ${Math.round(s.machineBusy.baseline * 100)}% busy`,
    `${s.hosts} hosts, remote commands per host (head / mean): liftoff ${fmt(cmd.excludingPolls.head)} / ${fmt(cmd.excludingPolls.mean)} ` +
      `+ load polls ${fmt(cmd.polls.head)} / ${fmt(cmd.polls.mean)}; baseline ${fmt(s.commandsPerHost.baseline.all.head)} / ${fmt(s.commandsPerHost.baseline.all.mean)}`,
    `${s.hosts} hosts, liftoff's slowest steps: ${slowestSteps(s)}`,
  ];
}

/** Issue 33's targets, by the sizes they are read at. */
export const scaleTargets = {
  /** liftoff's wall time over the baseline's, at most. */
  overhead: [
    { hosts: 2, ratio: 0.8 },
    { hosts: 16, ratio: 0.35 },
  ],
  /** The larger size's liftoff wall time over the smaller's, at most. */
  scale: { hosts: 64, over: 2, times: 3 },
  /** Measured at all, with the worker's peak RSS below this. */
  rss: { hosts: 128, belowMiB: 250 },
  /**
   * liftoff's own CPU per host per deploy flat or falling with size: no larger size's figure above the smaller
   * one's by more than this fraction (the runs' noise: a few tenths of a CPU-s over a whole deploy at 2 hosts).
   */
  ownCpuFlatWithin: 0.1,
} as const;

/** One size's liftoff CPU per host in words, by process. */
const ownCpuLine = (s: SizeSummary): string =>
  `${s.hosts} hosts: ${fmt(s.ownCpuSPerHost.total, 3)} CPU-s per host (CLI ${fmt(s.ownCpuSPerHost.client, 3)}, ` +
  `worker ${fmt(s.ownCpuSPerHost.worker, 3)}, Temporal server ${fmt(s.ownCpuSPerHost.temporal, 3)})`;

export function judge(
  sizes: readonly SizeSummary[],
  crash: readonly CrashRun[],
  resume: readonly ResumeRun[],
): Target[] {
  const measured = sizes.filter((s) => !s.notMeasured);
  const at = (n: number) => measured.find((s) => s.hosts === n);
  const targets: Target[] = [];
  for (const { hosts: n, ratio: limit } of scaleTargets.overhead) {
    const s = at(n);
    if (!s) continue;
    targets.push({
      measure: `overhead, ${n} hosts`,
      figure: `liftoff ${fmt(s.liftoffMedianS)} s / baseline ${fmt(s.baselineMedianS)} s = ${fmt(s.ratio, 2)}`,
      target: `≤ ${limit.toFixed(2)}`,
      met: s.ratio <= limit,
      binds: bindingLines(s),
    });
  }
  const { hosts: bigN, over: smallN, times } = scaleTargets.scale;
  const small = at(smallN);
  const big = at(bigN);
  if (small && big) {
    const scale = big.liftoffMedianS / small.liftoffMedianS;
    targets.push({
      measure: `scale, ${bigN} / ${smallN} hosts`,
      figure: `${fmt(scale, 2)}× (liftoff ${fmt(big.liftoffMedianS)} s / ${fmt(small.liftoffMedianS)} s; baseline ${fmt(big.baselineMedianS / small.baselineMedianS, 2)}×)`,
      target: `≤ ${times}×`,
      met: scale <= times,
      binds: [...bindingLines(small), ...bindingLines(big)],
    });
  }
  const rss = scaleTargets.rss;
  const rssSize = sizes.find((s) => s.hosts === rss.hosts);
  if (rssSize) {
    const rssBy = `peak RSS by size: ${measured.map((s) => `${s.hosts}: ${fmt(s.workerPeakRssMiB, 0)} MiB`).join(', ')}`;
    targets.push({
      measure: `${rss.hosts} hosts measured, worker peak RSS`,
      figure: rssSize.notMeasured
        ? `not measured: ${rssSize.notMeasured}`
        : `${fmt(rssSize.workerPeakRssMiB, 0)} MiB`,
      target: `measured, < ${rss.belowMiB} MiB`,
      met: !rssSize.notMeasured && rssSize.workerPeakRssMiB < rss.belowMiB,
      binds: rssSize.notMeasured ? [rssSize.notMeasured] : [rssBy],
    });
  }
  if (measured.length >= 2) {
    const bySize = [...measured].sort((a, b) => a.hosts - b.hosts);
    const rises = bySize.flatMap((s, i) => {
      const before = bySize[i - 1];
      return before &&
        s.ownCpuSPerHost.total > before.ownCpuSPerHost.total * (1 + scaleTargets.ownCpuFlatWithin)
        ? [{ before, s }]
        : [];
    });
    targets.push({
      measure: "liftoff's own CPU per host per deploy (CLI + worker + Temporal)",
      figure: bySize.map((s) => `${s.hosts}: ${fmt(s.ownCpuSPerHost.total, 3)}`).join(', ') + ' CPU-s',
      target: `flat or falling with size (within ${Math.round(scaleTargets.ownCpuFlatWithin * 100)}%)`,
      met: rises.length === 0,
      binds: [
        ...rises.map(
          ({ before, s }) =>
            `rises from ${before.hosts} to ${s.hosts} hosts: ${fmt(before.ownCpuSPerHost.total, 3)} → ${fmt(s.ownCpuSPerHost.total, 3)} CPU-s per host`,
        ),
        ...bySize.map(ownCpuLine),
      ],
    });
  }
  if (crash.length) {
    const d = median(crash.map((c) => c.detectedAfterS));
    targets.push({
      measure: 'crash detection',
      figure: `${fmt(d, 2)} s after a crash ${fmt(median(crash.map((c) => c.crashIntoLoadS)))} s into the load (poll ${crashSettings.pollIntervalS} s; runs ${crash.map((c) => c.detectedAfterS).join(', ')} s; without liftoff ${crashSettings.blindWaitS / 60} min)`,
      target: `≤ poll + 1 s`,
      met: d <= crashSettings.pollIntervalS + 1,
      binds: [`failure types: ${crash.map((c) => c.failureType).join(', ')}`],
    });
  }
  if (resume.length) {
    const m = median(resume.map((r) => r.progressMovedAfterS));
    const launches = resume.map((r) => r.launches);
    targets.push({
      measure: 'resume after worker SIGKILL',
      figure: `progress moved ${fmt(m)} s after the kill (runs ${resume.map((r) => r.progressMovedAfterS).join(', ')} s); launches ${launches.join(', ')}`,
      target: `≤ heartbeat ${resumeSettings.heartbeatTimeoutS} s + 5 s, 1 launch`,
      met:
        m <= resumeSettings.heartbeatTimeoutS + 5 &&
        launches.every((n) => n === 1) &&
        resume.every((r) => r.deploySucceeded),
      binds: [
        `killed at shards ${resume.map((r) => r.killedAtShard).join(', ')} of ${resumeSettings.shards}`,
      ],
    });
  }
  if (measured.length) {
    const worst = measured.reduce((a, b) =>
      b.commandsPerHost.liftoff.excludingPolls.max > a.commandsPerHost.liftoff.excludingPolls.max ? b : a,
    );
    const e = worst.commandsPerHost.liftoff.excludingPolls;
    targets.push({
      measure: 'remote commands per host, excluding load polls',
      figure: `${fmt(e.max)} on the busiest host (${worst.hosts} hosts; head ${fmt(e.head)}, mean ${fmt(e.mean)}); load polls ${measured.map((s) => `${s.hosts}: ${fmt(s.commandsPerHost.liftoff.polls.head)} head / ${fmt(s.commandsPerHost.liftoff.polls.mean)} mean`).join(', ')}`,
      target: '≤ 10',
      met: e.max <= 10,
      binds: measured.map((s) => bindingLines(s)[1] ?? ''),
    });
    // The first deploy of each size counts too: it is the one that opens the worker's connections.
    const hs = Math.max(
      ...measured.map((s) =>
        Math.max(s.sshHandshakesPerHostPerDeploy.liftoff.max, s.sshHandshakesPerHostFirstDeploy.max),
      ),
    );
    targets.push({
      measure: 'SSH handshakes per host per deploy',
      figure: `${fmt(hs, 1)} on the busiest host, largest over sizes and the first deploys (mean per host, first deploy / median: ${measured.map((s) => `${s.hosts}: ${fmt(s.sshHandshakesPerHostFirstDeploy.mean)} / ${fmt(s.sshHandshakesPerHostPerDeploy.liftoff.mean)}`).join(', ')}); per activity ≤ ${fmt(Math.max(...measured.map((s) => s.sshHandshakesPerActivityMax)), 2)}`,
      target: '≤ 1.5',
      met: hs <= 1.5,
      binds: measured.map(
        (s) =>
          `${s.hosts} hosts: handshakes per host head ${fmt(s.sshHandshakesPerHostPerDeploy.liftoff.head)}, mean ${fmt(s.sshHandshakesPerHostPerDeploy.liftoff.mean)}, max ${fmt(s.sshHandshakesPerHostPerDeploy.liftoff.max)}; per activity attempt ≤ ${fmt(s.sshHandshakesPerActivityMax, 2)}`,
      ),
    });
  }
  return targets;
}
