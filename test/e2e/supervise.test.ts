// The supervisor on a simulated 2-host cluster, real Temporal dev server and worker, real sshd: a killed vLLM
// is noticed and the cluster relaunched as one unit (interval 2s / threshold 2; the defaults, 30s × 3, are in
// supervise-defaults-timeskip.test.ts, on the time-skipping server), a hung engine
// behind a healthy /health is caught by the completion probe, a dead Ray container on the worker host is
// caught and relaunched too (its postmortem names the supervisor run that kept the bundle), a manual deploy
// takes supervision over, a crash loop spends exactly the budget and ends degraded, torn down as onFailure says
// (a webhook hears it; one that is down changes nothing), and the CLI (status, history, supervise stop/start,
// cancel, --no-supervise) reads and drives it. Launches are counted on the head itself (launches.log). Times
// are printed as figures, never asserted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { stringify } from 'yaml';
import { runLiftoff } from '../helpers/cli.js';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { sshRun } from '../helpers/ssh.js';
import { superviseWorkflowId } from '../../src/shared/constants.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { supervisionQuery, type SuperviseState } from '../../src/workflows/supervise-api.js';
import { formatDuration } from '../../src/config/duration.js';
import { setFaults, type SimCluster } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import type { StatusReport } from '../../src/commands/status.js';
import type { HistoryReport } from '../../src/commands/history.js';
import { fastSupervise } from '../helpers/fast-supervise.js';

const stateDir = '/tmp/liftoff-test-supervise';
const cluster = 'supervise';
const fast = fastSupervise;

describe('supervise on a simulated 2-host cluster', () => {
  let sim: SimCluster;
  let client: Client;
  let dir: string;
  let cliEnv: NodeJS.ProcessEnv;
  const figures: string[] = [];

  const spec = (supervise: Record<string, unknown> = {}) => ({
    ...simDeploySpec(sim, { cluster }),
    supervise,
  });
  const headDir = () => sim.hosts[0]!.hostDir;
  const launches = (): { pid: number }[] =>
    readFileSync(join(headDir(), 'launches.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { pid: number });
  const supervisor = () => client.workflow.getHandle(superviseWorkflowId(cluster));
  const state = () => supervisor().query(supervisionQuery);

  async function until(what: string, pred: (s: SuperviseState) => boolean, timeoutMs: number) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await state().catch(() => undefined);
      if (s && pred(s)) return s;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s?.status)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Kills the running vLLM (SIGKILL: no last words in its log), as an engine that dies does. */
  function killServer(): number {
    const pid = launches().at(-1)!.pid;
    process.kill(pid, 'SIGKILL');
    return Date.now();
  }

  async function deployAndWaitSupervised(supervise: Record<string, unknown>) {
    const handle = await startDeploy(client, spec(supervise), 'cli');
    const result = await handle.result();
    assert.match(result.supervision ?? '', /supervised by liftoff-supervise-supervise/);
    const s = await until('a passed round', (x) => x.status === 'serving' && x.rounds >= 1, 120_000);
    assert.equal(s.lastProbe?.verdict, 'passed', JSON.stringify(s.lastProbe));
    return { result, runId: (await supervisor().describe()).runId };
  }

  /** Lost after a kill, and serving again after the relaunch: both times as figures. */
  async function killAndRecover(label: string, relaunchesBefore: number) {
    const launchesBefore = launches().length;
    const killedAt = killServer();
    const lost = await until('lost', (s) => s.status !== 'serving', 300_000);
    const lostAt = lost.lostAtMs ?? Date.now();
    const back = await until(
      'serving again',
      (s) => s.status === 'serving' && s.relaunches.length > relaunchesBefore,
      300_000,
    );
    const entry = back.relaunches.at(-1)!;
    figures.push(
      `${label}: detection ${formatDuration(lostAt - killedAt)} after the kill; lost → serving ${formatDuration((entry.endedAtMs ?? 0) - lostAt)}`,
    );
    assert.equal(entry.outcome, 'serving');
    assert.equal(launches().length, launchesBefore + 1, 'exactly one more launch');
    return { back, entry };
  }

  // A live webhook receiver on loopback (the crash loop's), and one that is down: the worker's policy lists both
  // origins, as an operator lists a receiver inside. The receiver is up before the worker starts (this hook is
  // registered first), so its origin is in the list the worker's policy is made from.
  const heard: { event: string; text?: string }[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      heard.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event: string });
      res.writeHead(204).end();
    });
  });
  const down = 'http://127.0.0.1:9';
  const webhookOrigins = [down];
  let live = '';
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-supervise-'));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    webhookOrigins.push(origin);
    live = `${origin}/hook`;
  });
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 27,
    workerPolicy: { webhooks: webhookOrigins },
    vllm: { shards: 6, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
  });
  before(() => {
    sim = e2e.sim;
    client = e2e.client;
    cliEnv = { ...process.env, ...e2e.temporalEnv };
  });

  after(() => {
    process.stdout.write(figures.map((f) => `# ${f}\n`).join(''));
    rmSync(dir, { recursive: true, force: true });
    receiver.close();
  });

  it('a manual deploy during supervision takes over: the old supervisor ends first, never two', async () => {
    await deployAndWaitSupervised(fast);
    assert.equal(launches().length, 1);
    const old = await supervisor().describe();
    await deployAndWaitSupervised(fast);
    const oldRun = client.workflow.getHandle(superviseWorkflowId(cluster), old.runId);
    const oldEnd = await oldRun.describe();
    assert.equal(oldEnd.status.name, 'COMPLETED');
    const oldState = await oldRun.query(supervisionQuery);
    assert.equal(oldState.status, 'stopped');
    assert.match(oldState.reason ?? '', /taken over by a new deploy \(trigger cli/);
    const now = await supervisor().describe();
    assert.notEqual(now.runId, old.runId);
    assert.ok(
      oldEnd.closeTime && oldEnd.closeTime <= now.startTime,
      'the old one ended before the new began',
    );
    let running = 0;
    for await (const _ of client.workflow.list({
      query: `WorkflowId = '${superviseWorkflowId(cluster)}' AND ExecutionStatus = 'Running'`,
    }))
      running += 1;
    assert.equal(running, 1);
    assert.equal(launches().length, 2);
  });

  it('interval 2s, threshold 2: a killed vLLM is noticed within seconds and relaunched', async () => {
    const { back } = await killAndRecover('interval 2s × threshold 2', 0);
    assert.equal(back.relaunches.length, 1);
    assert.equal(launches().length, 3);
  });

  it('a hung engine (healthy /health, completions hang) is caught by the completion probe', async () => {
    setFaults(stateDir, 'spark1', { completions: 'hang' });
    const lost = await until('lost', (s) => s.status !== 'serving', 120_000);
    // The fault goes once the loss is seen, so the relaunched server can answer its smoke test.
    setFaults(stateDir, 'spark1', {});
    const failed = lost.recentFailures.at(-1)!;
    const byName = Object.fromEntries(failed.checks.map((c) => [c.name, c]));
    assert.equal(byName.health?.ok, true, '/health still answered 200');
    assert.equal(byName.completion?.ok, false);
    assert.match(byName.completion?.error ?? '', /curl failed \(exit 28\)/);
    const back = await until(
      'serving again',
      (s) => s.status === 'serving' && s.relaunches.length === 2,
      300_000,
    );
    assert.equal(back.relaunches.at(-1)?.outcome, 'serving');
    assert.match(back.relaunches.at(-1)?.cause ?? '', /completion/);
    assert.equal(launches().length, 4);
  });

  it('liftoff status and history show the supervisor and the relaunches with trigger supervise', async () => {
    const status = await runLiftoff(['status', cluster, '--json'], cliEnv);
    assert.equal(status.code, 0, status.stderr);
    const report = JSON.parse(status.stdout) as StatusReport;
    assert.equal(report.supervision?.state?.status, 'serving');
    assert.equal(report.supervision?.state?.relaunches.length, 2);
    const text = await runLiftoff(['status', cluster], cliEnv);
    assert.match(text.stdout, /supervisor liftoff-supervise-supervise .*: serving/);
    assert.match(text.stdout, /uptime since last launch: /);
    assert.match(text.stdout, /last probe: passed at .*\(health \d/);
    assert.match(text.stdout, /#2 .* serving: .*completion/);
    // What the Temporal UI shows on the supervisor's page: the SDK's built-in metadata query.
    const meta = await supervisor().query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    const details = meta.currentDetails ?? '';
    assert.match(details, /^\*\*supervise\*\* — serving\n/, details);
    assert.match(details, /- last probe: passed, completion \d/, details);
    assert.match(details, /#2 serving: .*completion/, details);
    const history = await runLiftoff(['history', cluster, '--json'], cliEnv);
    const entries = (JSON.parse(history.stdout) as HistoryReport).entries;
    const relaunches = entries.filter((e) => e.trigger === 'supervise');
    assert.equal(relaunches.length, 2, JSON.stringify(entries.map((e) => e.trigger)));
    assert.ok(relaunches.every((e) => e.outcome === 'succeeded' && e.relaunch?.cause));
    const listed = await runLiftoff(['history', cluster], cliEnv);
    assert.match(listed.stdout, /supervise\s+succeeded/);
    assert.match(listed.stdout, /relaunch #\d \(.*\) because: .*completion/);
  });

  it("a dead Ray container on the worker host is caught and relaunched; the postmortem names the bundle's run", async () => {
    const launchesBefore = launches().length;
    const relaunchesBefore = (await state()).relaunches.length;
    const { runId } = await supervisor().describe();
    const container = spec().ray.container;
    await sshRun(sim, 'spark2', `docker kill ${container}`);
    const lost = await until('lost', (s) => s.status !== 'serving', 120_000);
    const cause = lost.recentFailures.at(-1)?.failures.join('; ') ?? '';
    assert.match(cause, new RegExp(`spark2 container: the Ray container ${container} is exited`), cause);
    const back = await until(
      'serving again',
      (s) => s.status === 'serving' && s.relaunches.length === relaunchesBefore + 1,
      300_000,
    );
    const entry = back.relaunches.at(-1)!;
    assert.equal(entry.outcome, 'serving', entry.error);
    assert.match(entry.cause, /spark2 container: the Ray container/);
    assert.equal(launches().length, launchesBefore + 1, 'exactly one more launch');
    const next = await until(
      'a round after the relaunch',
      (s) => (s.lastProbe?.atMs ?? 0) > (entry.endedAtMs ?? Infinity),
      60_000,
    );
    assert.equal(next.lastProbe?.verdict, 'passed', JSON.stringify(next.lastProbe));
    // The relaunch deploy's postmortem points at the supervisor run whose history holds the bundle.
    const pm = await runLiftoff(['postmortem', cluster], cliEnv);
    assert.equal(pm.code, 0, pm.stderr);
    assert.ok(
      pm.stdout.includes(
        `temporal workflow show --workflow-id ${superviseWorkflowId(cluster)} --run-id ${runId}`,
      ),
      pm.stdout,
    );
  });

  it('figure: control-host CPU per hour of supervising, scaled from healthy rounds at 2s', async () => {
    // From a report to a report: the rounds between come back together (supervise.reportEvery).
    const seen = await until('serving', (x) => x.status === 'serving', 60_000);
    const first = await until('a report', (x) => x.rounds > seen.rounds, 60_000);
    const cpu = process.cpuUsage();
    await new Promise((r) => setTimeout(r, 30_000));
    const reported = await state();
    const last = await until('the next report', (x) => x.rounds > reported.rounds, 60_000);
    const used = process.cpuUsage(cpu);
    const rounds = last.rounds - first.rounds;
    assert.ok(rounds > 0 && last.failedRounds === first.failedRounds, `${rounds} rounds, all passed`);
    const perRound = (used.user + used.system) / 1e6 / rounds;
    // The healthy rounds cost the history only their reports: a watch's few events for five rounds, where a
    // round reported alone writes a marker, a timer and its workflow task (about six).
    const { runId } = await supervisor().describe();
    const events = (await supervisor().fetchHistory()).events ?? [];
    const inWindow = events.filter((e) => {
      const at = tsToMs(e.eventTime);
      return at > first.lastProbe!.atMs && at <= last.lastProbe!.atMs + last.lastProbe!.durationMs;
    });
    const watches = inWindow.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'watchServingCluster',
    ).length;
    assert.ok(watches > 0, `no watch scheduled in run ${runId} over ${rounds} rounds`);
    assert.ok(inWindow.length / rounds < 3, `${inWindow.length} events for ${rounds} rounds`);
    // This process is the worker (workflow tasks, activities, ssh2) and the test's client; the Temporal server is not counted.
    figures.push(
      `CPU: ${perRound.toFixed(3)} CPU-s per round over ${rounds} rounds → ${(perRound * 120).toFixed(1)} CPU-s per hour at the default 30s interval (worker process only); history ${(inWindow.length / rounds).toFixed(1)} events a round`,
    );
  });

  it('a crash loop spends exactly maxRelaunches, then ends degraded; no launch after', async () => {
    // The live receiver and the one that is down (both listed by the worker's policy): neither may change what
    // the supervisor does.
    const file = join(dir, 'spec.yaml');
    writeFileSync(
      file,
      stringify({
        ...spec(fast),
        onFailure: 'teardown',
        notify: {
          webhooks: [{ url: live }, { url: `${down}/down`, events: ['lost', 'degraded'] }],
        },
      }),
    );
    const deployed = await runLiftoff(['deploy', '-c', file, '--follow', '--json'], cliEnv, 300_000);
    assert.equal(deployed.code, 0, deployed.stdout + deployed.stderr);
    await until(
      'a passed round',
      (s) => s.status === 'serving' && s.rounds >= 1 && s.relaunches.length === 0,
      60_000,
    );
    const before = launches().length;
    setFaults(stateDir, 'spark1', { crashAtShard: 2 });
    killServer();
    const err = await supervisor()
      .result()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof WorkflowFailedError, String(err));
    assert.ok(err.cause instanceof ApplicationFailure);
    assert.equal(err.cause.type, 'ClusterDegraded');
    assert.match(err.cause.message, /relaunch budget is spent: 3 relaunches within supervise\.window 60m/);
    const final = await state();
    assert.equal(final.status, 'degraded');
    assert.deepEqual(
      final.relaunches.map((r) => r.outcome),
      ['failed', 'failed', 'failed'],
    );
    assert.ok(
      final.relaunches.every((r) => r.bundle),
      'every relaunch kept its bundle',
    );
    const last = final.finalBundle?.hosts.find((h) => h.host === 'spark1');
    assert.match(last?.rootException ?? '', /SafetensorError: Error while deserializing header/);
    assert.equal(launches().length, before + 3, 'exactly maxRelaunches relaunches');
    // onFailure: teardown. Each failed relaunch deploy removed its own containers (its error, in the cause, says
    // so too); the supervisor's teardown past the budget, the reason's last line, did as well, and nothing of
    // the cluster is left on either host.
    const teardown = final.reason?.split('\n').at(-1) ?? '';
    assert.match(
      teardown,
      /^containers: spark1: (removed|nothing to remove)[^;]*; spark2: (removed|nothing)/,
    );
    for (const host of ['spark1', 'spark2'])
      assert.equal(
        await sshRun(
          sim,
          host,
          `docker ps -a --filter label=liftoff.cluster=${cluster} --format '{{.Names}}'`,
        ),
        '',
        `${host}'s containers of the cluster`,
      );
    await new Promise((r) => setTimeout(r, 5000));
    assert.equal(launches().length, before + 3, 'no further launch');
    setFaults(stateDir, 'spark1', {});
    // The notifications are abandoned children: they may still be on their way when the supervisor ends.
    for (let i = 0; i < 100 && !heard.some((h) => h.event === 'degraded'); i++)
      await new Promise((r) => setTimeout(r, 100));
    const events = heard.map((h) => h.event);
    assert.ok(events.includes('deploySucceeded'), events.join(','));
    assert.equal(events.filter((e) => e === 'lost').length, 1, events.join(','));
    assert.equal(events.filter((e) => e === 'relaunched').length, 3, events.join(','));
    assert.equal(events.filter((e) => e === 'deployFailed').length, 3, events.join(','));
    const degraded = heard.find((h) => h.event === 'degraded');
    // The reason quotes what the hosts said: in a code block (it has a line for the containers), never markup.
    assert.match(degraded?.text ?? '', /supervise is degraded: ```\nthe relaunch budget is spent/);
  });

  it('--no-supervise, supervise start|stop and cancel drive the supervisor by hand', async () => {
    const file = join(dir, 'spec.yaml');
    const refused = await runLiftoff(['supervise', 'start', cluster], cliEnv);
    assert.equal(refused.code, 2, 'the latest deploy failed: nothing serves to supervise');
    const deployed = await runLiftoff(
      ['deploy', '-c', file, '--no-supervise', '--follow', '--json'],
      cliEnv,
      300_000,
    );
    assert.equal(deployed.code, 0, deployed.stdout + deployed.stderr);
    assert.match(deployed.stdout, /not supervised \(--no-supervise\)/);
    assert.notEqual((await supervisor().describe()).status.name, 'RUNNING');
    const started = await runLiftoff(['supervise', 'start', cluster, '--json'], cliEnv);
    assert.equal(started.code, 0, started.stdout + started.stderr);
    await until('a passed round', (s) => s.status === 'serving' && s.rounds >= 1, 60_000);
    const twice = await runLiftoff(['supervise', 'start', cluster], cliEnv);
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /already supervised/);
    const stopped = await runLiftoff(['supervise', 'stop', cluster, '--json'], cliEnv);
    assert.equal(stopped.code, 0, stopped.stdout + stopped.stderr);
    assert.equal((JSON.parse(stopped.stdout) as { state?: SuperviseState }).state?.status, 'stopped');
    assert.equal((await runLiftoff(['supervise', 'start', cluster], cliEnv)).code, 0);
    // A serving cluster has no deploy to cancel: cancel says `down` is the command, and touches nothing.
    const cancelled = await runLiftoff(['cancel', cluster, '--json'], cliEnv);
    assert.equal(cancelled.code, 2, cancelled.stdout + cancelled.stderr);
    assert.match(
      cancelled.stdout,
      /is serving under its supervisor: to stop it serving and free its hosts, run liftoff down supervise/,
    );
    assert.equal((await supervisor().describe()).status.name, 'RUNNING', 'the supervisor still runs');
    const stopped2 = await runLiftoff(['supervise', 'stop', cluster, '--json'], cliEnv);
    assert.equal(stopped2.code, 0, stopped2.stdout + stopped2.stderr);
    const models = await fetch(`http://${sim.hosts[0]!.address}:30000/v1/models`);
    assert.equal(models.status, 200, 'stopping supervision leaves the cluster serving');
  });
});
