// `liftoff plan`'s text for the demo's 2-host spec, compared with test/golden (docker/cli's golden files): the
// plan is built by the deploy's own pure plan functions (src/plan/host-plan.ts) from the spec scripts/demo.ts
// deploys and a fixed look at freshly seeded hosts; what preflight found is test/golden/plan-demo-preflight.json,
// the details the simulated hosts gave test/e2e/plan-init.test.ts's plan (its PREFLIGHT FOUND line), with the
// demo network's addresses and its 39 shards. A change of the plan's text shows as a diff of the golden files;
// UPDATE_GOLDEN=1 rewrites them, to be read and committed with the change.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { deploySpecSchema } from '../../src/config/schema.js';
import { resolveSshTarget } from '../../src/config/targets.js';
import { planHost, type HostObservation } from '../../src/plan/host-plan.js';
import type { PlanHost } from '../../src/steps/plan-entry.js';
import { renderPlan } from '../../src/commands/plan-render.js';
import { planWidth } from '../../src/commands/plan-wrap.js';
import type { PlanFindings, PlanResult } from '../../src/workflows/index.js';
import { simDeploySpec } from '../../sim/spec.js';
import { embeddingsCompanion, rerankerCompanion } from '../helpers/companions.js';
import type { SimCluster } from '../../sim/cluster-state.js';

const golden = (name: string) => new URL(`../golden/${name}`, import.meta.url);

// The demo's cluster (sim netIndex 0): spark2 only on the fabric, reached through spark1.
const sim: SimCluster = {
  mode: 'netns',
  stateDir: '/tmp/liftoff-sim',
  sshUser: 'root',
  privateKeyPath: '/tmp/liftoff-sim/ssh/id_ed25519',
  knownHostsPath: '/tmp/liftoff-sim/ssh/known_hosts',
  sshConfigPath: '/tmp/liftoff-sim/ssh/config',
  workerPolicyPath: '/tmp/liftoff-sim/worker-policy.json',
  netIndex: 0,
  hosts: [1, 2].map((n) => ({
    name: `spark${n}`,
    address: n === 1 ? '10.213.1.11' : '10.213.2.12',
    sshPort: 22,
    clusterIp: `10.213.2.1${n}`,
    clusterIface: 'enp1s0f1np1',
    hostDir: `/tmp/liftoff-sim/spark${n}`,
    reachableFromControl: n === 1,
  })),
};

/** The demo's spec with two companions (issue 31): an embeddings server on the head, a reranker on the worker. */
function withCompanions(spec: Record<string, unknown>): Record<string, unknown> {
  return {
    ...spec,
    companions: [embeddingsCompanion('spark1'), rerankerCompanion('spark2')],
  };
}

export function demoPlan(opts: { companions?: boolean } = {}): PlanResult {
  const base = simDeploySpec(sim, { cluster: 'sim-demo' });
  const spec = deploySpecSchema.parse(opts.companions ? withCompanions(base) : base);
  const auth = { privateKeyPath: spec.ssh.privateKeyPath, knownHostsPath: spec.ssh.knownHostsPath };
  const hosts: PlanHost[] = spec.hosts.map((h) => ({
    name: h.name,
    role: h.role,
    clusterIp: h.clusterIp,
    ref: { target: resolveSshTarget(spec.hosts, spec.ssh, h.name), auth },
  }));
  const [head, ...workers] = hosts;
  assert.ok(head);
  // A freshly seeded simulated host (sim/seed.ts): every listed unit loaded, the reference containers there.
  const seen: HostObservation = {
    uid: '0',
    loadedUnits: [...spec.cleanup.services],
    containers: ['vllm_node', 'reranker', 'vllm_embeddings'],
    labelled: [],
  };
  return {
    cluster: spec.cluster,
    wouldStart: true,
    problems: [],
    warnings: [],
    hosts: hosts.map((h) => planHost(spec, h, head, workers, seen)),
    secrets: [],
    preflight: JSON.parse(readFileSync(golden('plan-demo-preflight.json'), 'utf8')) as PlanFindings[],
  };
}

function matchesGolden(name: string, text: string): void {
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(golden(name), `${text}\n`);
  assert.equal(
    `${text}\n`,
    readFileSync(golden(name), 'utf8'),
    `${name} differs (UPDATE_GOLDEN=1 rewrites it)`,
  );
}

describe('plan text of the demo spec (golden files)', () => {
  const plan = demoPlan();

  it('default: matches test/golden/plan-demo.txt, under 80 lines, none over 200 characters', () => {
    const text = renderPlan(plan);
    const lines = text.split('\n');
    console.log(
      `FIGURE: demo plan: ${lines.length} lines, ${text.length} chars, longest line ${Math.max(...lines.map((l) => l.length))}`,
    );
    matchesGolden('plan-demo.txt', text);
    assert.ok(lines.length < 80, `${lines.length} lines`);
    const wide = lines.filter((l) => l.length > planWidth);
    assert.deepEqual(wide, [], 'no line over the plan width');
  });

  it('--verbose: matches test/golden/plan-demo-verbose.txt and adds each round trip script', () => {
    const text = renderPlan(plan, { verbose: true });
    matchesGolden('plan-demo-verbose.txt', text);
  });
});

describe('plan text of the demo spec with two companions (golden file)', () => {
  const plan = demoPlan({ companions: true });

  it('matches test/golden/plan-companions.txt: each companion after the smoke test on its own host, no line over 200 characters', () => {
    const text = renderPlan(plan);
    const lines = text.split('\n');
    matchesGolden('plan-companions.txt', text);
    const wide = lines.filter((l) => l.length > planWidth);
    assert.deepEqual(wide, [], 'no line over the plan width');
    const order = text.split('\n').filter((l) => /\[(smokeTest|startCompanions|record)\]$/.test(l));
    assert.deepEqual(
      order.map((l) => /\[(\w+)\]$/.exec(l)?.[1]),
      ['smokeTest', 'startCompanions'],
      'the companions come right after the smoke test',
    );
    const block = text.slice(text.indexOf('[startCompanions]'));
    assert.match(block, /spark1: start embeddings \(liftoff-embeddings/);
    assert.match(block, /spark2: start reranker \(liftoff-reranker/);
  });

  it('--json carries the startCompanions step on each host, after smokeTest on the head', () => {
    const json = JSON.parse(JSON.stringify(plan)) as PlanResult;
    const [head, worker] = json.hosts;
    const names = head?.steps.map((s) => s.step) ?? [];
    assert.equal(names.indexOf('startCompanions'), names.indexOf('smokeTest') + 1);
    assert.ok(worker?.steps.some((s) => s.step === 'startCompanions'));
  });

  it('the demo plan (no companions) has no startCompanions step', () => {
    assert.ok(demoPlan().hosts.every((h) => h.steps.every((s) => s.step !== 'startCompanions')));
  });
});
