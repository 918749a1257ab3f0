// What the agreement checks add to preflight, on the simulated cluster: the preflight step's activities as the
// workflow runs them, without (preflightHost on every host) and with them (preflightHost beside checkHostsAgree,
// as under the agreement-checks patch). Medians of LIFTOFF_BENCH_REPEATS (default 5) runs at each size of
// LIFTOFF_BENCH_SIZES (default 2,16). Run it alone on the machine: `flock /tmp/liftoff-e2e.lock npx tsx
// bench/agreement-preflight.ts` (it brings up its own cluster on netIndex 40).
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { downCluster, upCluster } from '../sim/cluster.js';
import { simDeploySpec } from '../sim/spec.js';
import { preflightHost } from '../src/activities/preflight.js';
import { checkHostsAgree, type AgreementResult } from '../src/activities/agreement.js';
import type { PreflightInput } from '../src/activities/types.js';
import { clusterHosts, validate } from '../src/workflows/cluster-run.js';
import { agreementInput } from '../src/workflows/preflight.js';
import { dirnameOf, modelPathFor } from '../src/config/derive.js';
import { median, round } from './measure.js';

const stateDir = '/tmp/liftoff-bench-agreement';
const sizes = (process.env.LIFTOFF_BENCH_SIZES ?? '2,16').split(',').map(Number);
const repeats = Number(process.env.LIFTOFF_BENCH_REPEATS ?? 5);

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

async function measure(hosts: number): Promise<{ before: number; after: number }> {
  const sim = await upCluster({ hosts, mode: 'netns', netIndex: 40, stateDir });
  process.env.LIFTOFF_WORKER_POLICY = sim.workerPolicyPath;
  try {
    const spec = validate(simDeploySpec(sim, { cluster: 'bench' }));
    const named = clusterHosts(spec);
    const head = named.find((h) => h.role === 'head');
    if (!head) throw new Error('no head');
    const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
    const input = (h: (typeof named)[number], iface: string | undefined): PreflightInput => ({
      host: h.ref,
      clusterIp: h.clusterIp,
      iface,
      image: spec.ray.image,
      modelPath: modelPathFor(spec) ?? '',
      volumes: spec.ray.volumes,
      logDir: h === head ? dirnameOf(spec.serve.logPath) : undefined,
      logPath: h === head ? spec.serve.logPath : undefined,
      minFreeDiskGiB: spec.preflight.minFreeDiskGiB,
    });
    const nccl = spec.ray.env.NCCL_SOCKET_IFNAME as string;
    const agreement = agreementInput(spec, named, head, modelPathFor(spec) ?? '');
    const before = (): Promise<unknown> =>
      Promise.all(named.map((h) => env.run(preflightHost, input(h, nccl))));
    const after = (): Promise<unknown> =>
      Promise.all([
        ...named.map((h) => env.run(preflightHost, input(h, undefined))),
        env
          .run<[typeof agreement], AgreementResult, typeof checkHostsAgree>(checkHostsAgree, agreement)
          .then((r) => {
            if (!r.ok || r.unread.length) throw new Error(`the sim disagrees: ${JSON.stringify(r)}`);
          }),
      ]);
    await before(); // warm: the first SSH connections and tool starts
    await after();
    const b: number[] = [];
    const a: number[] = [];
    // Interleaved, so drift in the machine's load falls on both.
    for (let i = 0; i < repeats; i++) {
      b.push(await timed(before));
      a.push(await timed(after));
    }
    return { before: median(b), after: median(a) };
  } finally {
    await downCluster(stateDir);
  }
}

for (const n of sizes) {
  const { before, after } = await measure(n);
  console.log(
    `FIGURE: preflight at ${n} simulated hosts: ${round(before / 1000)} s before, ${round(after / 1000)} s with the agreement checks (+${round((after - before) / 1000)} s; median of ${repeats})`,
  );
}
