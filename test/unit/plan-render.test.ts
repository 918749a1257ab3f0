// liftoff plan's per-host command list and its text form: pure, from a spec and what a host showed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deploySpecSchema } from '../../src/config/schema.js';
import { planHost, type HostObservation, type PlanHost } from '../../src/plan/host-plan.js';
import { renderPlan } from '../../src/commands/plan-render.js';
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
    const text = renderPlan({
      cluster: 'lab',
      wouldStart: true,
      problems: [],
      warnings: [],
      hosts: plans,
      secrets: [],
    });
    assert.match(text, /^ {2}Start the Ray head \[startRayHead\]: skipped \(serve\.backend multiproc: /m);
    assert.match(text, /^ {6}\(only when something listens on serve\.masterPort\)$/m);
    assert.match(
      text,
      /^would start: {3}a: vLLM rank 0 container liftoff_ray .*; b: vLLM rank 1 \(headless\) container liftoff_ray/m,
    );
  });
});

describe('plan text', () => {
  it('lists each host in order and ends with what would stop, be removed and start', () => {
    const result: PlanResult = {
      cluster: 'lab',
      wouldStart: true,
      problems: [],
      warnings: ['clock skew: b is 7.0 s ahead of a (preflight.maxClockSkew 5s)'],
      hosts: [planHost(spec, head, head, [worker], seen), planHost(spec, worker, head, [worker], seen)],
      secrets: [{ field: 'ray.env.HF_TOKEN', source: 'worker env HF_TOKEN' }],
    };
    const text = renderPlan(result);
    assert.ok(text.indexOf('\na (head)\n') < text.indexOf('\nb (worker)\n'));
    assert.match(text, /^warning: clock skew: b is 7\.0 s ahead of a/m);
    assert.match(
      text,
      /secrets \(sent on stdin, never on a command line\): ray\.env\.HF_TOKEN = \(worker env HF_TOKEN\)/,
    );
    assert.match(
      text,
      /^ {4}! one round trip:\n {6}! sudo -n systemctl stop -- vllm\.service\n {6}! sudo -n systemctl disable -- vllm\.service\n {6}\$ systemctl show /m,
    );
    assert.match(
      text,
      /^ {6}! while IFS= .* docker run -d --name liftoff_ray .*\n {10}\(only when no container of that name\)$/m,
    );
    assert.match(text, /^ {6}\(repeated until the GPUs are clear/m);
    const tail = text.split('\n').slice(-4);
    assert.deepEqual(
      tail.map((l) => l.split(':')[0]),
      ['would stop', 'would disable', 'would remove', 'would start'],
    );
    assert.match(tail[2] ?? '', /a: old_vllm, liftoff_ray; b: old_vllm, liftoff_ray/);
  });

  it('shows a line break inside a command as \\n, so a command cannot fake lines of the plan', () => {
    const fake = 'x\n    ! rm -rf /srv/models\nb (worker)';
    const tricky = deploySpecSchema.parse({
      ...spec,
      ray: { ...spec.ray, env: { ...spec.ray.env, NOTE: fake } },
    });
    const text = renderPlan({
      cluster: 'lab',
      wouldStart: true,
      problems: [],
      warnings: [],
      hosts: [planHost(tricky, head, head, [], seen)],
      secrets: [],
    });
    assert.doesNotMatch(text, /^ {4}! rm -rf/m);
    assert.doesNotMatch(text, /^b \(worker\)$/m);
    assert.match(text, /^ {6}! .*docker run .*'NOTE=x\\n {4}! rm -rf \/srv\/models\\nb \(worker\)'/m);
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
