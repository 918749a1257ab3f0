// `liftoff plan` and `liftoff init` end to end, as a user runs them (the CLI as its own process) against a real
// Temporal dev server, a liftoff worker and the simulated 2-host cluster (spark2 behind spark1). The hosts
// record every command they run (sim recordCommands): the evidence that plan changed nothing and that the
// deploy then ran exactly the plan's changes, and nothing the plan did not list.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { runLiftoff } from '../helpers/cli.js';
import { holdPort } from '../helpers/port-holder.js';
import { addHostInterface, hostCommands, reseedCluster } from '../../sim/cluster.js';
import { loadSpecFile } from '../../src/config/load.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { simDeploySpec } from '../../sim/spec.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy, type PlanResult } from '../../src/workflows/index.js';
import { planPlaceholders, type PlannedCommand } from '../../src/steps/plan-entry.js';
import { containersLogPath, type ContainerCreation } from '../../sim/tools/docker/state.js';
import { hostLogLines } from '../helpers/host-logs.js';
import { embeddingsCommand } from '../helpers/companions.js';

const stateDir = suiteStateDir('plan-init');
const cluster = 'plan-e2e';

/** Commands that change a host, by the test's own reading of the shell text (not the plan's flag). */
const changesHost = (cmd: string): boolean =>
  /systemctl (stop|disable) |docker rm -f |docker run -d |setsid nohup docker exec /.test(cmd);

// What only the run has (its id, the launch time, the server's pid, how far the log was read) is the plan's
// placeholder; everything else must be the same text.
const normalize = (cmd: string, runId: string): string =>
  cmd
    .replaceAll(runId, planPlaceholders.runId)
    .replace(/"\$pid" \d+ >/, `"$pid" ${planPlaceholders.startedAt} >`)
    .replace(/kill -0 \d+ /, `kill -0 ${planPlaceholders.pid} `)
    .replace(/\/proc\/\d+\/status/, `/proc/${planPlaceholders.pid}/status`)
    .replace(/tail -c \+\d+ /, 'tail -c +1 ')
    // The load poll's log offset (host-commands/polls.ts logChunkPart); the plan shows 0.
    .replace(/__f=\d+;/, '__f=0;');

/**
 * The plan of one host against what the deploy ran there: the plan flags exactly the commands that change the
 * host, the deploy ran those changes in the plan's order and no other, and ran nothing the plan does not list.
 */
function assertRanAsPlanned(host: string, planned: readonly PlannedCommand[], ran: readonly string[]): void {
  const changes = planned.filter((c) => c.change).map((c) => c.text);
  assert.deepEqual(
    changes,
    planned.map((c) => c.text).filter(changesHost),
    `${host}: the plan flags exactly the commands that change the host`,
  );
  assert.deepEqual(
    ran.filter(changesHost),
    changes,
    `${host}: the deploy ran the plan's changes, in its order, and no other`,
  );
  const listed = new Set(planned.map((c) => c.text));
  const unlisted = [...new Set(ran)].filter((c) => !listed.has(c));
  assert.deepEqual(unlisted, [], `${host}: every command the deploy ran is in the plan`);
}

describe('liftoff plan and init on the simulated cluster', () => {
  const e2e = useSuiteCluster('plan-init', {
    recordCommands: true,
    vllm: { shards: 3, shardSeconds: 0.2, graphCaptureSeconds: 0.2 },
  });
  const env = (): NodeJS.ProcessEnv => ({
    ...process.env,
    ...e2e.temporalEnv,
    LIFTOFF_WORKER_POLICY: e2e.sim.workerPolicyPath,
  });
  const writeSpec = (name: string, spec: unknown): string => {
    mkdirSync(stateDir, { recursive: true });
    const file = join(stateDir, name);
    writeFileSync(file, stringify(spec));
    return file;
  };
  const logLengths = (): Map<string, number> =>
    new Map(e2e.sim.hosts.map((h) => [h.name, hostCommands(stateDir, h.name).length]));
  const since = (marks: Map<string, number>, host: string): string[] =>
    hostCommands(stateDir, host).slice(marks.get(host) ?? 0);

  it('plan lists every command, changes nothing, and the deploy then runs exactly its changes', async () => {
    const file = writeSpec('plan.yaml', simDeploySpec(e2e.sim, { cluster }));
    const before = logLengths();
    const text = await runLiftoff(['plan', '-c', file], env());
    assert.equal(text.code, 0, text.stderr);
    console.log(`PLAN OUTPUT:\n${text.stdout}`);
    assert.match(text.stdout, /preflight passed on every host \(spark1, spark2\)/);
    // What preflight found on the hosts, then what each step does there.
    assert.match(text.stdout, /^ {2}✓ docker \(spark1, spark2\): Docker \S+ answers$/m);
    assert.match(text.stdout, /^ {2}✓ interface: spark1: clusterIp [\d.]+ is on \S+; spark2: /m);
    assert.match(text.stdout, /^ {2}spark1, spark2: stop and disable vllm-cluster\.service, /m);
    assert.match(text.stdout, /^ {2}spark1, spark2: remove .*vllm_node/m);
    assert.match(text.stdout, /^ {2}spark1: start Ray head container vllm_qwen35/m);
    assert.match(text.stdout, /^ {2}spark2: start Ray worker container vllm_qwen35/m);
    // The issue's target for this 2-host spec, as the CLI prints it.
    const lines = text.stdout.trimEnd().split('\n');
    console.log(
      `FIGURE: plan text: ${lines.length} lines, longest ${Math.max(...lines.map((l) => l.length))} chars`,
    );
    assert.ok(lines.length < 80, `${lines.length} lines`);
    assert.deepEqual(
      lines.filter((l) => l.length > 200),
      [],
    );
    const verbose = await runLiftoff(['plan', '-c', file, '--verbose'], env());
    assert.equal(verbose.code, 0, verbose.stderr);
    assert.match(verbose.stdout, /^ {4}» one round trip: LC_ALL=C; /m);
    const json = await runLiftoff(['plan', '-c', file, '--json'], env());
    assert.equal(json.code, 0, json.stderr);
    const plan = JSON.parse(json.stdout) as PlanResult;
    assert.equal(plan.wouldStart, true);
    console.log(`PREFLIGHT FOUND: ${JSON.stringify(plan.preflight)}`);
    assert.deepEqual(
      plan.preflight?.map((f) => [f.host, f.checks.every((c) => c.ok)]),
      [
        ['spark1', true],
        ['spark2', true],
      ],
    );
    assert.deepEqual(
      plan.hosts.map((h) => [h.host, h.role]),
      [
        ['spark1', 'head'],
        ['spark2', 'worker'],
      ],
    );
    for (const h of e2e.sim.hosts) {
      const ran = since(before, h.name);
      assert.ok(ran.length > 0, `plan reached ${h.name}`);
      assert.deepEqual(ran.filter(changesHost), [], `plan changed nothing on ${h.name}`);
    }

    const marks = logLengths();
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: `liftoff-${cluster}`,
      args: [simDeploySpec(e2e.sim, { cluster }), { trigger: 'cli' }],
    });
    await handle.result();
    const runId = handle.firstExecutionRunId;
    for (const hp of plan.hosts) {
      const planned = hp.steps.flatMap((s) => s.commands);
      const ran = since(marks, hp.host).map((c) => normalize(c, runId));
      assertRanAsPlanned(hp.host, planned, ran);
      // What one step read and the next needs travels through the workflow, so the reads the plan lists for a retry or a missing look never ran: removeContainers took the lists stopServices read after
      // its stop from the workflow, and the launch went on verifyRayCluster's last look, which the workflow passed.
      // (The agreement facts travel through the workflow too, and have no such read.)
      const preflight = hp.steps.find((s) => s.step === 'preflight')?.commands ?? [];
      const fallbacks = planned
        .filter(
          (c) =>
            c.when !== undefined && /another worker|is retried|last look at the head is missing/.test(c.when),
        )
        .map((c) => c.text);
      assert.equal(
        fallbacks.length,
        hp.role === 'head' ? 2 : 1,
        `${hp.host}: the plan names each fallback read`,
      );
      assert.deepEqual(
        ran.filter((c) => fallbacks.includes(c)),
        [],
        `${hp.host}: no read made twice: the container lists and the launch's look came through the workflow`,
      );
      assert.equal(ran.filter((c) => c === preflight[0]?.text).length, 1, `${hp.host}: one preflight trip`);
      console.log(
        `FIGURE: ${hp.host}: plan lists ${planned.length} commands; the deploy ran ${ran.length} (polls repeat)`,
      );
    }
  });

  it('plan lists a multiproc deploy: Ray steps skipped, a rank container per host, and the deploy runs exactly that', async () => {
    // The cluster above runs the Ray backend: the plan says its containers go, and the deploy removes them.
    const base = simDeploySpec(e2e.sim, { cluster });
    const { port: _port, verifyTimeout: _verify, ...ray } = base.ray;
    const spec = {
      ...base,
      ray,
      serve: { ...base.serve, backend: 'multiproc', masterPort: 29501, distributedTimeout: '5s' },
    };
    const file = writeSpec('plan-multiproc.yaml', spec);
    const before = logLengths();
    const text = await runLiftoff(['plan', '-c', file], env());
    assert.equal(text.code, 0, text.stderr);
    console.log(`PLAN OUTPUT (multiproc):\n${text.stdout}`);
    assert.match(text.stdout, /\[startRayHead\]: skipped \(serve\.backend multiproc: /);
    assert.match(text.stdout, /^ {2}spark2: rank 1 \(headless\), started before rank 0 on spark1$/m);
    assert.match(text.stdout, /^ {2}spark1: rank 0, once the headless ranks \(spark2\) have started$/m);
    assert.match(text.stdout, /^ {4}start vLLM rank 0 container vllm_qwen35 /m);
    assert.match(text.stdout, /^ {4}start vLLM rank 1 \(headless\) container vllm_qwen35 /m);
    const json = await runLiftoff(['plan', '-c', file, '--json'], env());
    assert.equal(json.code, 0, json.stderr);
    const plan = JSON.parse(json.stdout) as PlanResult;
    assert.equal(plan.wouldStart, true);
    for (const hp of plan.hosts) {
      const skipped = hp.steps.filter((st) => st.skipped).map((st) => st.step);
      assert.deepEqual(
        skipped,
        hp.role === 'head' ? ['startRayHead', 'verifyRayCluster'] : ['startRayWorkers', 'verifyRayCluster'],
      );
      const launch = hp.steps.find((st) => st.step === 'launchServe')?.commands ?? [];
      const run = launch.filter((c) => c.change).map((c) => c.text);
      assert.equal(run.length, 1, `${hp.host}: one rank container`);
      assert.match(
        run[0] ?? '',
        hp.role === 'head' ? / --node-rank 0 .* --port 30000/ : / --node-rank 1 .* --headless/,
      );
      assert.ok(!hp.steps.flatMap((st) => st.commands).some((c) => /ray (start|status)/.test(c.text)));
    }
    for (const h of e2e.sim.hosts)
      assert.deepEqual(since(before, h.name).filter(changesHost), [], `plan changed nothing on ${h.name}`);

    const marks = logLengths();
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: `liftoff-${cluster}`,
      args: [spec, { trigger: 'cli' }],
    });
    await handle.result();
    const runId = handle.firstExecutionRunId;
    // The run's order across hosts: every headless rank's container before rank 0's.
    const rankRunAt = (name: string): number => {
      const h = e2e.sim.hosts.find((x) => x.name === name);
      assert.ok(h);
      const created = hostLogLines(containersLogPath(h.hostDir))
        .map((l) => JSON.parse(l) as ContainerCreation)
        .find((c) => c.labels['liftoff.launch']?.endsWith(`:${runId}`));
      return Date.parse(created?.time ?? '');
    };
    assert.ok(rankRunAt('spark2') < rankRunAt('spark1'), 'the headless rank started first');
    for (const hp of plan.hosts) {
      const ran = since(marks, hp.host).map((c) => normalize(c, runId));
      const planned = hp.steps.flatMap((st) => st.commands);
      assertRanAsPlanned(hp.host, planned, ran);
      console.log(
        `FIGURE: multiproc ${hp.host}: plan lists ${planned.length} commands; the deploy ran ${ran.length} (polls repeat)`,
      );
    }
  });

  it('plan exits 1 when preflight would refuse, 2 for bad input, and starts nothing', async () => {
    const spec = simDeploySpec(e2e.sim, { cluster: 'plan-refused' });
    spec.ray.image = 'example/not-pulled:1';
    const marks = logLengths();
    const refused = await runLiftoff(['plan', '-c', writeSpec('refused.yaml', spec)], env());
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stdout, /preflight would refuse/);
    assert.match(refused.stdout, /spark2: image: image example\/not-pulled:1 is not on the host/);
    for (const h of e2e.sim.hosts) assert.deepEqual(since(marks, h.name).filter(changesHost), []);

    // A multiproc plan refuses as the deploy's preflight does when serve.masterPort is taken on the head.
    const [spark1] = e2e.sim.hosts;
    assert.ok(spark1);
    const holder = await holdPort(e2e.sim, spark1, 29502, spark1.clusterIp);
    try {
      const base = simDeploySpec(e2e.sim, { cluster: 'plan-refused' });
      const { port: _port, verifyTimeout: _verify, ...ray } = base.ray;
      const mp = { ...base, ray, serve: { ...base.serve, backend: 'multiproc', masterPort: 29502 } };
      const taken = await runLiftoff(['plan', '-c', writeSpec('taken.yaml', mp)], env());
      assert.equal(taken.code, 1, taken.stderr);
      assert.match(taken.stdout, /preflight would refuse/);
      assert.match(taken.stdout, /spark1: serve\.masterPort 29502 is in use on the head \(LISTEN/);
    } finally {
      holder.kill('SIGKILL');
    }
    for (const h of e2e.sim.hosts) assert.deepEqual(since(marks, h.name).filter(changesHost), []);

    const bad = await runLiftoff(['plan', '-c', writeSpec('bad.yaml', { cluster: 'x' })], env());
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /hosts/);
    const missing = await runLiftoff(['plan', '-c', join(stateDir, 'none.yaml')], env());
    assert.equal(missing.code, 2);
  });

  it('init writes a commented spec that validates and deploys as it stands, and never overwrites without --force', async () => {
    await reseedCluster(stateDir);
    // A second candidate interface on spark2, on a network no other host has.
    await addHostInterface(stateDir, 'spark2', 'eth7', '10.250.41.12/24');
    const [spark1, spark2] = e2e.sim.hosts;
    assert.ok(spark1 && spark2);
    const out = join(stateDir, 'init.yaml');
    rmSync(out, { force: true });
    const args = [
      'init',
      '--host',
      `spark1=${spark1.address}`,
      '--host',
      `spark2=${spark2.address}`,
      '--jump',
      'spark1',
      '--cluster',
      'init-e2e',
      '--user',
      e2e.sim.sshUser,
      '--key',
      e2e.sim.privateKeyPath,
      '--known-hosts',
      e2e.sim.knownHostsPath,
      '-o',
      out,
    ];
    const marks = logLengths();
    const run = await runLiftoff(args, env());
    assert.equal(run.code, 0, run.stderr);
    console.log(`INIT OUTPUT:\n${run.stdout}`);
    const text = readFileSync(out, 'utf8');
    console.log(`INIT SPEC:\n${text}`);
    for (const h of e2e.sim.hosts)
      assert.deepEqual(since(marks, h.name).filter(changesHost), [], `init only read ${h.name}`);
    // The choices, with the alternatives as comments.
    assert.match(text, /# clusterIp: picked enp1s0f1np1 [\d.]+\/24: .*on a network every other host shares/);
    assert.match(text, /# {3}not picked: eth7 10\.250\.41\.12\/24: .*on no network the other hosts share/);
    assert.match(text, /# {3}not picked: mgmt0 /, 'spark1: its management address is a candidate too');
    // Two images are on every host: the pick and the other one, each named.
    const image =
      /# image: picked (\S+): on every host, and the image the running container \S+ on spark1 uses\n {2}# {3}not picked: (\S+): also on every host\n {2}image: "([^"]+)"/.exec(
        text,
      );
    assert.ok(image, 'the image choice is written as a comment');
    assert.equal(image[1], image[3]);
    assert.deepEqual([image[1], image[2]].sort(), [
      'hellohal2064/vllm-qwen3.5-gb10:latest',
      'vllm/vllm-openai:latest',
    ]);
    assert.match(text, /clusterIp: "10\.213\.\d+\.12"/);
    assert.match(text, /services: \["vllm-/);
    assert.match(text, /containers: \[.*"vllm_node"/);
    assert.match(text, /model: "Qwen\/Qwen3\.5-122B-A10B-FP8"/);
    assert.match(text, /jumpHost: "spark1"/);
    const validated = await runLiftoff(['validate', '-c', out], env());
    assert.equal(validated.code, 0, validated.stderr);
    // The vLLM units beside the main model come back as companions, each with the command line read from its
    // ExecStart (the reference site's docker run); no terminal to ask at, so each is kept. Every host runs the
    // same units: spark2's are named after it. The main model's unit is only stopped.
    const offered = loadSpecFile(deploySpecSchema, out).companions;
    assert.deepEqual(
      offered.map((c) => [c.name, c.host, c.image, c.port, c.probe, c.gpus]),
      [
        ['embeddings', 'spark1', 'vllm/vllm-openai:latest', 8001, 'embeddings', true],
        ['proxy', 'spark1', 'ghcr.io/berriai/litellm:main-stable', 4000, 'health', false],
        ['reranker', 'spark1', 'vllm/vllm-openai:latest', 8002, 'rerank', true],
        ['embeddings-spark2', 'spark2', 'vllm/vllm-openai:latest', 8001, 'embeddings', true],
        ['proxy-spark2', 'spark2', 'ghcr.io/berriai/litellm:main-stable', 4000, 'health', false],
        ['reranker-spark2', 'spark2', 'vllm/vllm-openai:latest', 8002, 'rerank', true],
      ],
    );
    // The reference site's embeddings unit runs the issue's example command.
    assert.deepEqual(offered[0]?.command, embeddingsCommand);
    assert.match(
      text,
      /^ {2}# found: unit vllm-embeddings\.service on spark1 running \/usr\/bin\/docker run --rm --name vllm_embeddings --gpus all --network host -v \S+ vllm\/vllm-openai:latest vllm serve BAAI\/bge-m3 --port 8001 --gpu-memory-utilization 0\.05; confirm before deploying\n {2}- name: "embeddings"$/m,
    );
    assert.match(
      text,
      /^# not offered: unit vllm-cluster\.service on spark1 running .*: it serves the main model/m,
    );
    assert.match(text, /services: \[.*"vllm-embeddings\.service"/, 'the unit is still stopped');
    assert.match(
      run.stdout,
      /companions: embeddings on spark1 \(from vllm-embeddings\.service\), proxy on spark1/,
    );

    // --no-companions: the services are only stopped. That spec deploys as it stands (the proxy's image is on no
    // simulated host; the companions' own deploy is test/e2e/companions.test.ts's).
    const stopOnly = join(stateDir, 'init-stop-only.yaml');
    rmSync(stopOnly, { force: true });
    const stopRun = await runLiftoff(
      [...args.map((a) => (a === out ? stopOnly : a)), '--no-companions'],
      env(),
    );
    assert.equal(stopRun.code, 0, stopRun.stderr);
    const stopText = readFileSync(stopOnly, 'utf8');
    assert.match(stopText, /^companions: \[\]$/m);
    assert.match(
      stopText,
      /^# not offered: unit vllm-embeddings\.service on spark1 running .*: only stopped/m,
    );
    const spec = loadSpecFile(deploySpecSchema, stopOnly);
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'liftoff-init-e2e',
      // As written; only the supervisor stays off, so it does not probe the hosts after the test, and the hosts
      // are taken over from the cluster the plan tests deployed there.
      args: [spec, { trigger: 'cli', supervise: false, takeOver: true }],
    });
    const result = await handle.result();
    assert.equal(result.model, 'Qwen/Qwen3.5-122B-A10B-FP8');
    assert.ok(result.smoke.completionTokens > 0);

    const again = await runLiftoff(args, env());
    assert.equal(again.code, 2);
    assert.match(again.stderr, /exists; nothing was probed or written\. Pass --force/);
    assert.equal(readFileSync(out, 'utf8'), text, 'the file is untouched');
    const forced = await runLiftoff([...args, '--force'], env());
    assert.equal(forced.code, 0, forced.stderr);
    // -o at a symbolic link: without --force the name is taken (nothing probed); with it the link is replaced by
    // the spec, and the file it pointed at is untouched.
    const victim = join(stateDir, 'victim.txt');
    writeFileSync(victim, 'keep me\n');
    const link = join(stateDir, 'linked.yaml');
    rmSync(link, { force: true });
    symlinkSync(victim, link);
    const linkArgs = args.map((a) => (a === out ? link : a));
    const refused = await runLiftoff(linkArgs, env());
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /exists; nothing was probed or written/);
    const throughLink = await runLiftoff([...linkArgs, '--force'], env());
    assert.equal(throughLink.code, 0, throughLink.stderr);
    assert.equal(readFileSync(victim, 'utf8'), 'keep me\n');
    assert.ok(lstatSync(link).isFile(), 'the link is now the spec');

    const bad = await runLiftoff(['init', '--host', 'spark1', '-o', join(stateDir, 'bad.yaml')], env());
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /expected NAME=ADDRESS/);
  });
});
