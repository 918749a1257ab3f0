// The bench's figures and targets (bench/summary.ts): issue 33's list judged from made-up runs, so a target's
// verdict and what it names as binding are the arithmetic's, not a machine's.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { judge, scaleTargets, summarizeSize, type SizeSummary } from '../../bench/summary.js';
import type { Capacity } from '../../bench/capacity.js';
import type { CpuGroups, RunFigures, SizeResult } from '../../bench/size-runs.js';

const capacity = (hosts: number): Capacity => ({ hosts, ok: true, limits: [], reason: '' });

const names = (hosts: number): string[] => Array.from({ length: hosts }, (_, i) => `spark${i + 1}`);
const each = (hosts: number, n: number): Record<string, number> =>
  Object.fromEntries(names(hosts).map((h) => [h, n]));

function run(
  hosts: number,
  figures: { s: number; cpu?: Partial<CpuGroups>; handshakes?: number; rssMiB?: number },
): RunFigures {
  const cpu: CpuGroups = {
    client: 0,
    worker: 0,
    temporal: 0,
    simTools: 0,
    simSshd: 0,
    rest: 0,
    ...figures.cpu,
  };
  return {
    ms: figures.s * 1000,
    machineCpuS: 1,
    controlCpuS: cpu.client + cpu.worker + cpu.temporal,
    cpu,
    handshakes: each(hosts, figures.handshakes ?? 0),
    commands: each(hosts, 8),
    polls: each(hosts, 1),
    attempts: each(hosts, 7),
    ...(figures.rssMiB === undefined ? {} : { workerPeakRssMiB: figures.rssMiB }),
    stepsMs: { preflight: 1000, stopServices: figures.s * 400, waitHealthy: 500 },
  };
}

/** A size whose liftoff deploys took `liftoffS` (and used `ownCpuS` of liftoff's own CPU in all) and baseline `baselineS`. */
function size(
  hosts: number,
  liftoffS: number,
  baselineS: number,
  ownCpuS: number,
  rssMiB = 180,
): SizeSummary {
  const result: SizeResult = {
    hosts,
    capacity: capacity(hosts),
    liftoff: [0, 1, 2].map((i) =>
      run(hosts, {
        s: liftoffS,
        cpu: { client: ownCpuS / 2, worker: ownCpuS / 4, temporal: ownCpuS / 4 },
        // The first deploy of a size opens the worker's connection to each host; the later ones reuse it.
        handshakes: i === 0 ? 1 : 0,
        rssMiB,
      }),
    ),
    baseline: [0, 1, 2].map(() => run(hosts, { s: baselineS, handshakes: 5 })),
  };
  return summarizeSize(result, 2);
}

const targetOf = (targets: ReturnType<typeof judge>, measure: string) => {
  const t = targets.find((x) => x.measure.startsWith(measure));
  assert.ok(t, `a target "${measure}" among ${targets.map((x) => x.measure).join(' | ')}`);
  return t;
};

describe('bench summary (issue 33 targets)', () => {
  it("sums liftoff's own CPU (CLI, worker, Temporal) per host and counts the first deploy's handshakes apart", () => {
    const s = size(16, 10, 20, 3.2);
    assert.equal(s.ownCpuSPerHost.total, 0.2);
    assert.equal(s.ownCpuSPerHost.client, 0.1);
    assert.equal(s.ownCpuSPerHost.worker, 0.05);
    assert.equal(s.ownCpuSPerHost.temporal, 0.05);
    assert.equal(s.sshHandshakesPerHostFirstDeploy.mean, 1);
    assert.equal(s.sshHandshakesPerHostPerDeploy.liftoff.mean, 0);
    assert.equal(s.ratio, 0.5);
  });

  it('judges every size target: overhead at 2 and 16, 64 against 2, RSS at 128, CPU per host by size', () => {
    const sizes = [size(2, 3, 4, 1.2), size(16, 5, 20, 3.2), size(64, 8, 60, 6.4), size(128, 15, 120, 9)];
    const targets = judge(sizes, [], []);
    const two = targetOf(targets, 'overhead, 2 hosts');
    assert.equal(two.target, '≤ 0.80');
    assert.equal(two.met, true); // 0.75
    const sixteen = targetOf(targets, 'overhead, 16 hosts');
    assert.equal(sixteen.target, '≤ 0.35');
    assert.equal(sixteen.met, true); // 0.25
    const scale = targetOf(targets, 'scale, 64 / 2 hosts');
    assert.equal(scale.met, true); // 8 / 3
    const rss = targetOf(targets, '128 hosts measured, worker peak RSS');
    assert.equal(rss.met, true);
    assert.equal(rss.figure, '180 MiB');
    const cpu = targetOf(targets, "liftoff's own CPU per host");
    assert.equal(cpu.met, true); // 0.6, 0.2, 0.1, 0.07
    assert.match(cpu.figure, /^2: 0\.600, 16: 0\.200, 64: 0\.100, 128: 0\.070 CPU-s$/);
    // issue 18's per-host figures stay judged beside them
    assert.equal(targetOf(targets, 'remote commands per host').met, true);
    const hs = targetOf(targets, 'SSH handshakes per host per deploy');
    assert.equal(hs.met, true);
    assert.match(hs.figure, /^1\.0 on the busiest host/);
    // no target of the older issues' sizes is left
    assert.ok(!targets.some((t) => /32/.test(t.measure)), targets.map((t) => t.measure).join(' | '));
  });

  it('names what binds a missed target', () => {
    const sizes = [
      size(2, 4, 4, 1),
      size(16, 12, 20, 3.2),
      size(64, 30, 60, 16),
      size(128, 60, 120, 38, 260),
    ];
    const targets = judge(sizes, [], []);
    const two = targetOf(targets, 'overhead, 2 hosts');
    assert.equal(two.met, false); // 1.0
    assert.ok(two.binds?.some((b) => b.startsWith('2 hosts, CPU-s by process group')));
    assert.equal(targetOf(targets, 'overhead, 16 hosts').met, false); // 0.6
    const scale = targetOf(targets, 'scale, 64 / 2 hosts');
    assert.equal(scale.met, false); // 7.5×
    assert.ok(scale.binds?.some((b) => /^64 hosts, liftoff's slowest steps: stopServices 12\.0 s/.test(b)));
    const rss = targetOf(targets, '128 hosts measured');
    assert.equal(rss.met, false);
    assert.deepEqual(rss.binds, ['peak RSS by size: 2: 180 MiB, 16: 180 MiB, 64: 180 MiB, 128: 260 MiB']);
    // 0.5, 0.2, 0.25 (a rise of 25%: missed), 0.297 (a rise of 19%: missed too)
    const cpu = targetOf(targets, "liftoff's own CPU per host");
    assert.equal(cpu.met, false);
    assert.ok(cpu.binds?.includes('rises from 16 to 64 hosts: 0.200 → 0.250 CPU-s per host'));
    assert.ok(cpu.binds?.includes('rises from 64 to 128 hosts: 0.250 → 0.297 CPU-s per host'));
    assert.ok(
      cpu.binds?.includes('128 hosts: 0.297 CPU-s per host (CLI 0.148, worker 0.074, Temporal server 0.074)'),
    );
  });

  it('takes a rise within the runs’ noise as flat', () => {
    const within = 1 + scaleTargets.ownCpuFlatWithin / 2;
    const targets = judge([size(2, 3, 4, 0.4), size(16, 5, 20, 3.2 * within)], [], []);
    assert.equal(targetOf(targets, "liftoff's own CPU per host").met, true);
  });

  it('a requested 128 that this machine could not bring up misses its target with the limit that stopped it', () => {
    const notMeasured: SizeSummary = {
      ...size(128, 1, 1, 1),
      notMeasured: "this machine's limit: free memory, MiB: 9000 available, 128 hosts need 11740",
    };
    const targets = judge([size(2, 3, 4, 1), notMeasured], [], []);
    const rss = targetOf(targets, '128 hosts measured');
    assert.equal(rss.met, false);
    assert.match(rss.figure, /^not measured: this machine's limit: free memory/);
    assert.deepEqual(rss.binds, [notMeasured.notMeasured]);
    // a size not measured is in no other target
    assert.equal(targets.filter((t) => t.measure.startsWith("liftoff's own CPU")).length, 0);
  });
});
