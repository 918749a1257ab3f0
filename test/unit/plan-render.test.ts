// liftoff plan's per-host command list and its text form: pure, from a spec and what a host showed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deploySpecSchema } from '../../src/config/schema.js';
import { planHost, type HostObservation } from '../../src/plan/host-plan.js';
import { renderPlan } from '../../src/commands/plan-render.js';
import { planWidth, wrapCommand } from '../../src/commands/plan-wrap.js';
import { plannedRun, type PlanHost } from '../../src/steps/plan-entry.js';
import { sh } from '../../src/ssh/quote.js';
import type { PlanResult } from '../../src/workflows/index.js';
import { rankPollCommand } from '../../src/host-commands/polls.js';

const spec = deploySpecSchema.parse({
  cluster: 'lab',
  ssh: { user: 'ops', knownHostsPath: '~/.ssh/known_hosts' },
  hosts: [
    { name: 'a', address: '192.168.1.11', clusterIp: '10.0.0.1', role: 'head' },
    { name: 'b', address: '10.0.0.2', clusterIp: '10.0.0.2', role: 'worker', jumpHost: 'a' },
  ],
  cleanup: { services: ['vllm.service', 'gone.service'], disableServices: true, containers: ['old_vllm'] },
  ray: {
    image: 'vllm/vllm-openai:v0.11.0',
    container: 'liftoff_ray',
    env: { NCCL_SOCKET_IFNAME: 'eth1', HF_TOKEN: { fromEnv: 'HF_TOKEN' } },
    volumes: ['/home/ops/.cache/huggingface:/root/.cache/huggingface'],
  },
  serve: {
    model: 'Qwen/Qwen3-8B',
    tensorParallelSize: 2,
    logPath: '/home/ops/serve.log',
    env: { VLLM_API_KEY: { fromFile: '/home/ops/.liftoff/secrets/key' } },
  },
});

const ref = (name: string, host: string) => ({
  target: { name, host, port: 22, user: 'ops' },
  auth: { knownHostsPath: '~/.ssh/known_hosts' },
});
const head: PlanHost = { name: 'a', role: 'head', clusterIp: '10.0.0.1', ref: ref('a', '192.168.1.11') };
const worker: PlanHost = { name: 'b', role: 'worker', clusterIp: '10.0.0.2', ref: ref('b', '10.0.0.2') };
const seen: HostObservation = {
  uid: '1000',
  loadedUnits: ['vllm.service'],
  containers: ['old_vllm', 'unrelated'],
  labelled: ['liftoff_ray'],
};

describe('plan of one host', () => {
  const plan = planHost(spec, head, head, [worker], seen);
  // A batch's changes are its parts (one round trip each batch).
  const changes = plan.steps
    .flatMap((s) => s.commands)
    .flatMap((c) => c.parts ?? [c])
    .filter((c) => c.change);

  it('changes only what is there: loaded units (through sudo -n), present and labelled containers', () => {
    assert.deepEqual(plan.stop, ['vllm.service']);
    assert.deepEqual(plan.disable, ['vllm.service']);
    assert.deepEqual(plan.remove, ['old_vllm', 'liftoff_ray']);
    assert.deepEqual(
      changes.map((c) =>
        c.text
          .replace(/^while IFS=.*?done; /, '')
          .split(' ')
          .slice(0, 4)
          .join(' '),
      ),
      [
        'sudo -n systemctl stop',
        'sudo -n systemctl disable',
        'docker rm -f --',
        'docker run -d --name',
        'if [ -L /home/ops/serve.log',
      ],
    );
  });

  it('shows secrets as names only and the run-time values as placeholders', () => {
    const run = changes.find((c) => c.text.includes('docker run'))?.text ?? '';
    assert.match(run, / -e HF_TOKEN /);
    assert.match(run, / -e 'VLLM_HOST_IP=10\.0\.0\.1' /);
    assert.match(run, /'liftoff\.launch=liftoff-lab:RUN_ID'/);
    const launch = changes.at(-1)?.text ?? '';
    assert.match(launch, / -e VLLM_API_KEY /);
    assert.match(launch, /"\$pid" START_MS >/);
  });

  it('a worker joins the head and launches nothing', () => {
    const w = planHost(spec, worker, head, [worker], { ...seen, uid: '0', labelled: [] });
    const texts = w.steps
      .flatMap((s) => s.commands)
      .flatMap((c) => c.parts ?? [c])
      .map((c) => c.text);
    assert.ok(
      texts.some((t) => t.includes('start --block --address 10.0.0.1:6379 --node-ip-address 10.0.0.2')),
    );
    assert.ok(
      texts.some((t) => t.startsWith('systemctl stop --')),
      'root needs no sudo',
    );
    assert.ok(!texts.some((t) => t.includes('vllm serve')));
    assert.deepEqual(w.start, ['Ray worker container liftoff_ray (vllm/vllm-openai:v0.11.0)']);
  });
});

describe('plan of a multiproc spec (serve.backend: multiproc)', () => {
  const { port: _port, verifyTimeout: _verify, ...ray } = spec.ray;
  const mp = deploySpecSchema.parse({
    ...spec,
    gpu: { perHost: 1 },
    ray,
    serve: { ...spec.serve, backend: 'multiproc', masterPort: 29501, distributedTimeout: '30s' },
  });
  const seenHere = { ...seen, clusterIface: 'eth1' };
  const plans = [
    planHost(mp, head, head, [worker], seenHere),
    planHost(mp, worker, head, [worker], seenHere),
  ];
  const runOf = (i: number): string =>
    plans[i]?.steps.find((s) => s.step === 'launchServe')?.commands.find((c) => c.change)?.text ?? '';

  it('shows the Ray steps skipped, with the reason, and runs no ray command', () => {
    const [h, w] = plans;
    assert.ok(h && w);
    const skipped = (p: typeof h) => p.steps.filter((s) => s.skipped).map((s) => s.step);
    assert.deepEqual(skipped(h), ['startRayHead', 'verifyRayCluster']);
    assert.deepEqual(skipped(w), ['startRayWorkers', 'verifyRayCluster']);
    for (const p of plans)
      assert.ok(!p.steps.flatMap((s) => s.commands).some((c) => /\bray (start|status)\b/.test(c.text)));
  });

  it("starts one rank per host with the deploy's argv: rank 0 serves, rank 1 headless and started first", () => {
    assert.match(
      runOf(0),
      / --entrypoint vllm .* serve Qwen\/Qwen3-8B --nnodes 2 --node-rank 0 --master-addr 10\.0\.0\.1 --master-port 29501 .*--distributed-timeout-seconds 30 --port 8000\b/,
    );
    assert.match(runOf(1), / --node-rank 1 .* --headless\b/);
    assert.doesNotMatch(runOf(1), / --port /);
    assert.match(runOf(1), /'liftoff\.role=rank1' --label 'liftoff\.backend=multiproc'/);
    // The rank's own address and interface first, then the spec's env; secrets by name only.
    assert.match(
      runOf(1),
      / -e 'VLLM_HOST_IP=10\.0\.0\.2' -e 'GLOO_SOCKET_IFNAME=eth1' -e 'NCCL_SOCKET_IFNAME=eth1' -e HF_TOKEN -e VLLM_API_KEY /,
    );
    assert.match(runOf(0), /"\$pid" START_MS >/);
    const notes = plans.map((p) => p.steps.find((s) => s.step === 'launchServe')?.note);
    assert.deepEqual(notes, [
      'rank 0, once the headless ranks (b) have started',
      'rank 1 (headless), started before rank 0 on a',
    ]);
  });

  it("reads the master port on the head in preflight and launchServe, and polls a headless rank's log", () => {
    const [h, w] = plans;
    assert.ok(h && w);
    const texts = (p: typeof h, step: string) =>
      p.steps.find((s) => s.step === step)?.commands.map((c) => c.text) ?? [];
    assert.ok(texts(h, 'preflight').includes("ss -Hltn 'sport = :29501'"));
    assert.ok(texts(h, 'launchServe').includes("ss -Hltn 'sport = :29501'"));
    assert.ok(!texts(w, 'preflight').some((t) => t.startsWith('ss ')));
    // One command per poll: the container, the log's tail and its new bytes (host-commands/polls.ts).
    assert.deepEqual(texts(w, 'waitHealthy'), [
      rankPollCommand('liftoff_ray', '/home/ops/serve.log', 0).command.text,
    ]);
    const result: PlanResult = {
      cluster: 'lab',
      wouldStart: true,
      problems: [],
      warnings: [],
      hosts: plans,
      secrets: [],
    };
    const text = renderPlan(result);
    assert.match(text, /^Start the Ray head \[startRayHead\]: skipped \(serve\.backend multiproc: /m);
    // Each rank's intent, then its container's run; the headless rank's first.
    assert.match(
      text,
      /^ {2}a: rank 0, once the headless ranks \(b\) have started\n {4}start vLLM rank 0 container liftoff_ray /m,
    );
    assert.match(
      text,
      /^ {2}b: rank 1 \(headless\), started before rank 0 on a\n {4}start vLLM rank 1 \(headless\) container/m,
    );
    // A conditional read is listed, with its case, under --verbose.
    assert.doesNotMatch(text, /rank0' --format/);
    assert.match(
      renderPlan(result, { verbose: true }),
      /^ {4}\$ docker ps --filter 'label=liftoff\.cluster=lab' --filter label=liftoff\.role=rank0 --format '\{\{\.Names\}\}' {2}# only when something listens on serve\.masterPort$/m,
    );
  });
});

describe('plan text', () => {
  const result: PlanResult = {
    cluster: 'lab',
    wouldStart: true,
    problems: [],
    warnings: ['clock skew: b is 7.0 s ahead of a (preflight.maxClockSkew 5s)'],
    hosts: [planHost(spec, head, head, [worker], seen), planHost(spec, worker, head, [worker], seen)],
    secrets: [{ field: 'ray.env.HF_TOKEN', source: 'worker env HF_TOKEN' }],
    preflight: [
      {
        host: 'a',
        checks: [
          { name: 'docker', ok: true, detail: 'Docker 27.3.1 answers' },
          { name: 'disk', ok: true, detail: '812.4 GiB free on /' },
        ],
      },
      {
        host: 'b',
        checks: [
          { name: 'docker', ok: true, detail: 'Docker 27.3.1 answers' },
          { name: 'disk', ok: true, detail: '790.1 GiB free on /' },
        ],
      },
    ],
  };

  it('goes step by step: what each host will do, then its changes exactly, what hosts share said once', () => {
    const text = renderPlan(result);
    assert.match(text, /^warning: clock skew: b is 7\.0 s ahead of a/m);
    assert.match(
      text,
      /secrets \(sent on stdin, never on a command line\): ray\.env\.HF_TOKEN = \(worker env HF_TOKEN\)/,
    );
    // Preflight's findings: a detail both hosts share once, the others per host.
    assert.match(text, /^ {2}✓ docker \(a, b\): Docker 27\.3\.1 answers$/m);
    assert.match(text, /^ {2}✓ disk: a: 812\.4 GiB free on \/; b: 790\.1 GiB free on \/$/m);
    // Both hosts stop the same unit through sudo -n: said once, the reads counted, the changes exact.
    assert.match(
      text,
      /^Stop old services \[stopServices\]\n {2}a, b: stop and disable vllm\.service\n {4}\$ 5 reads: states, uid, states-after, containers, labelled\n {4}! sudo -n systemctl stop -- vllm\.service\n {4}! sudo -n systemctl disable -- vllm\.service$/m,
    );
    // The env prelude is said once in the legend: a run shows `⇐` and the rest of its exact text.
    assert.match(text, /^`⇐`: the command runs after `while IFS= read -r kv; do/m);
    assert.match(
      text,
      /^ {4}# only when no container of that name\n {4}!⇐ docker run -d --name liftoff_ray /m,
    );
    assert.doesNotMatch(text, /^ {4}!.*while IFS= read/m);
    assert.doesNotMatch(text, /=liftoff-section/, 'no round trip script by default');
  });

  it('wraps a long command at its flags with ` \\`, so the lines joined are the exact command', () => {
    const text = renderPlan(result);
    const lines = text.split('\n');
    assert.deepEqual(
      lines.filter((l) => l.length > planWidth),
      [],
    );
    const at = lines.findIndex((l) => l.startsWith('    !⇐ docker run -d --name liftoff_ray'));
    assert.ok(at > 0);
    let joined = '';
    for (let i = at; ; i++) {
      const line = (lines[i] ?? '').replace(/^ +(!⇐ )?/, '');
      if (!line.endsWith(' \\')) {
        joined += line;
        break;
      }
      joined += line.slice(0, -1);
    }
    const run = result.hosts[0]?.steps
      .flatMap((s) => s.commands)
      .flatMap((c) => c.parts ?? [c])
      .find((c) => c.text.includes('docker run -d'))?.text;
    assert.equal(`while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done; ${joined}`, run);
  });

  it('--verbose lists every read, each round trip script and the env prelude', () => {
    const text = renderPlan(result, { verbose: true });
    assert.match(text, /^ {4}» one round trip: LC_ALL=C; export LC_ALL; exec 4>&1; /m);
    assert.match(
      text,
      /^ {4}\$ systemctl show --property=Id,LoadState,ActiveState,UnitFileState -- vllm\.service gone\.service$/m,
    );
    assert.match(text, /^ {4}! while IFS= read -r kv; do .* docker run -d --name liftoff_ray /m);
    assert.match(text, /^ {4}# repeated until the GPUs are clear/m);
  });

  it("leads with a step's own intent and names its declared reads (plannedRun's step commands)", () => {
    const step = {
      step: 'stopServices',
      intent: ['stop and disable a.service'],
      commands: [
        plannedRun([
          { name: 'states', command: sh`systemctl show -- a.service` },
          { name: 'uid', command: sh`id -u` },
        ]),
        plannedRun([
          { name: 'stop', command: sh`systemctl stop -- a.service`, change: true },
          { name: 'after', command: sh`systemctl show -- a.service` },
        ]),
      ],
    };
    const host = {
      host: 'a',
      role: 'head' as const,
      steps: [step],
      stop: [],
      disable: [],
      remove: [],
      start: [],
    };
    const text = renderPlan({ ...result, warnings: [], secrets: [], preflight: [], hosts: [host] });
    assert.match(
      text,
      /\nStop old services \[stopServices\]\n {2}a: stop and disable a\.service\n {4}\$ 3 reads: states, uid, after\n {4}! systemctl stop -- a\.service$/,
    );
  });

  it('shows a line break inside a command as \\n, so a command cannot fake lines of the plan', () => {
    const fake = 'x\n    ! rm -rf /srv/models\nb (worker)';
    const tricky = deploySpecSchema.parse({
      ...spec,
      ray: { ...spec.ray, env: { ...spec.ray.env, NOTE: fake } },
    });
    const plan: PlanResult = {
      cluster: 'lab',
      wouldStart: true,
      problems: [],
      warnings: [],
      hosts: [planHost(tricky, head, head, [], seen)],
      secrets: [],
    };
    const text = renderPlan(plan);
    for (const shown of [text, renderPlan(plan, { verbose: true })]) {
      assert.doesNotMatch(shown, /^ *! rm -rf/m);
      assert.doesNotMatch(shown, /^b \(worker\)$/m);
      assert.match(shown, /'NOTE=x\\n {4}! rm -rf \/srv\/models\\nb \(worker\)'/);
    }
  });

  it('a refusal lists the problems and nothing else', () => {
    const text = renderPlan({
      cluster: 'lab',
      wouldStart: false,
      problems: ['b: image: image x is not on the host'],
      warnings: [],
      hosts: [],
      secrets: [],
    });
    assert.equal(
      text,
      'plan for lab: preflight would refuse the deploy; nothing would be stopped, removed or started:\n  b: image: image x is not on the host',
    );
  });
});

describe('wrapping a long command', () => {
  const joined = (lines: string[]) =>
    lines.map((l, i) => (i < lines.length - 1 ? l.slice(0, -2) : l).trimStart()).join(' ');

  it('breaks only outside quotes, before a flag or after a `;`, and never cuts a word', () => {
    const quoted = `'${'a b '.repeat(20)}'`;
    const text = `run --one ${quoted} --two "x y z"; next -e K=V ${'w'.repeat(70)} --three`;
    const lines = wrapCommand(text, 60);
    assert.equal(joined(lines), text);
    for (const l of lines.slice(0, -1)) assert.ok(l.endsWith(' \\'), l);
    // The quoted argument stays on one line, longer than the width: a break inside it would change its value.
    assert.ok(lines.some((l) => l.trimStart().startsWith(quoted)));
    assert.ok(!lines.some((l) => /"x$|^ *y/.test(l)), 'no break inside double quotes');
  });

  it('prefers a break after a `;` to a later plain space', () => {
    const text = `${'x'.repeat(34)}; yy z ${'q'.repeat(20)}`;
    const lines = wrapCommand(text, 50);
    assert.equal(lines[0], `${'x'.repeat(34)}; \\`);
    assert.equal(joined(lines), text);
  });

  it('leaves a command that fits alone', () => {
    assert.deepEqual(wrapCommand('docker ps -a', 60), ['docker ps -a']);
  });
});
