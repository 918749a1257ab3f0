// 24 hours of healthy supervision on the time-skipping test server: the supervisor continues as new every
// roundsPerRun rounds, so each run's history stays bounded however long the cluster serves, and the counters
// it carries add up across runs. And a stop that comes while the failure bundle is collected: the supervisor
// ends there, with no relaunch and no webhook after. The probes are scripted here (this tests the workflow's
// clock and history, not SSH; test/e2e/supervise.test.ts runs the real probes against real sshd).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { useTimeSkippingServer } from '../helpers/temporal.js';
import { supervise, stopSupervisionSignal, supervisionQuery } from '../../src/workflows/index.js';
import { roundsPerRun } from '../../src/workflows/supervise.js';
import type * as activities from '../../src/activities/index.js';
import { deployWorkflowId, superviseWorkflowId } from '../../src/shared/constants.js';

// Each round costs real time however much of the clock is skipped: two activity tasks, three workflow tasks
// and a timer, each a round trip to the time-skipping server, which only skips once all of them are done
// (~27 ms a round alone, ~90 ms on a loaded machine). What is tested here is continue-as-new (every roundsPerRun
// rounds) and the counters it carries, not the interval: 24 h at 2 min is 720 rounds, still four runs (three
// continue-as-new), instead of 2,880 rounds at the default 30 s (~80 s alone, 260 s in the suite).
const interval = '2m';
const intervalMs = 2 * 60_000;
// A spec no host answers to: the scripted activities below are all that runs.
const spec = {
  cluster: 'timeskip',
  ssh: { user: 'nobody', knownHostsPath: '/nonexistent/known_hosts' },
  hosts: [
    { name: 'a', address: '127.0.0.1', clusterIp: '10.0.0.1', role: 'head' },
    { name: 'b', address: '127.0.0.2', clusterIp: '10.0.0.2', role: 'worker' },
  ],
  ray: { image: 'img', container: 'ray_c', env: {}, volumes: ['/m:/root/.cache/huggingface'] },
  serve: { model: 'org/m', tensorParallelSize: 2, env: {}, logPath: '/tmp/serve.log' },
  // Every round reported: the scripted round below is the per-round local activity, and a watch's rounds would
  // wait their intervals in real time, which the server cannot skip.
  supervise: { interval, reportEvery: interval },
};

describe('supervise for 24 h (time-skipping server)', () => {
  const server = useTimeSkippingServer();

  it('continues as new: every run bounded, probes counted across runs', async () => {
    let probeCalls = 0;
    const checks = (host: string) =>
      (['container', 'health', 'completion', 'rayStatus'] as const).map((name) => ({
        name,
        host,
        ok: true,
        latencyMs: 5,
      }));
    // The round's one (local) activity, scripted: every probe passes.
    const impl: Partial<typeof activities> = {
      probeServingCluster: (i) => {
        probeCalls += 1;
        return Promise.resolve({
          hosts: [
            { host: i.head.head.target.name, ok: true as const, checks: checks(i.head.head.target.name) },
            ...i.workers.map((w) => ({
              host: w.target.name,
              ok: true as const,
              checks: [{ name: 'container' as const, host: w.target.name, ok: true }],
            })),
          ],
        });
      },
    };
    const taskQueue = 'supervise-timeskip';
    const worker = await server.worker(taskQueue, impl);
    const workflowId = superviseWorkflowId(spec.cluster);
    const cpuBefore = process.cpuUsage();
    const realStart = Date.now();
    const { state, runs } = await worker.runUntil(async () => {
      const handle = await server.env.client.workflow.start(supervise, {
        taskQueue,
        workflowId,
        args: [{ spec, launch: { launchId: 'l1', servingSinceMs: Date.now() } }],
      });
      await server.env.sleep('24h');
      const state = await handle.query(supervisionQuery);
      await handle.signal(stopSupervisionSignal, { reason: 'test over' });
      await handle.result();
      // Walk the chain of runs from the first: each ends continued-as-new, naming the next.
      const runs: { runId: string; events: number }[] = [];
      let runId: string | undefined = handle.firstExecutionRunId;
      while (runId) {
        const history: History = await server.env.client.workflow.getHandle(workflowId, runId).fetchHistory();
        const events = history.events ?? [];
        runs.push({ runId, events: events.length });
        runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
      }
      return { state, runs };
    });
    const cpu = process.cpuUsage(cpuBefore);
    // Workflow time supervised: the skipped clock runs on a little while the test sends its query.
    const elapsedMs = (state.lastProbe?.atMs ?? 0) - state.supervisingSinceMs;
    assert.ok(elapsedMs >= 24 * 3_600_000 - intervalMs, `${elapsedMs} ms supervised`);
    // Never more rounds than intervals fit in the time supervised; the probes counted are the probes made.
    assert.ok(
      state.rounds <= Math.floor(elapsedMs / intervalMs) + 1,
      `${state.rounds} rounds in ${elapsedMs} ms`,
    );
    // Real time spent in activities moves the skipped clock too; half the intervals is far below any load seen.
    assert.ok(state.rounds >= elapsedMs / intervalMs / 2, `${state.rounds} rounds`);
    assert.equal(state.probes, state.rounds * 5, 'four probes on the head, one on the worker, each round');
    assert.ok(
      Math.abs(probeCalls - state.rounds) <= 1,
      `${probeCalls} probe activities, ${state.rounds} rounds`,
    );
    assert.equal(state.failedRounds, 0);
    assert.equal(state.status, 'serving');
    assert.equal(runs.length, state.runs, 'the runs the state counted are the runs in Temporal');
    assert.ok(runs.length >= Math.floor(state.rounds / roundsPerRun), `${runs.length} runs`);
    assert.ok(runs.length >= 3, `${runs.length} runs: continued as new more than once`);
    const most = Math.max(...runs.map((r) => r.events));
    // About 6 events a round (a workflow task, the local activity's marker, a timer); the bound is what
    // continue-as-new is for.
    assert.ok(most <= roundsPerRun * 20 + 100, `a run of ${most} events`);
    process.stdout.write(
      `# ${(elapsedMs / 3_600_000).toFixed(2)} h supervised: ${state.rounds} rounds, ${state.probes} probes, ${runs.length} runs; events per run: ${runs.map((r) => r.events).join(', ')}\n` +
        `# real time ${((Date.now() - realStart) / 1000).toFixed(0)} s; this process's CPU ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s (workflow replay and scripted activities, no SSH)\n`,
    );
  });

  it('a stop that comes while the bundle is collected ends it there: no relaunch, no webhook after', async () => {
    const cluster = 'timeskip-stop';
    const workflowId = superviseWorkflowId(cluster);
    const stopSpec = {
      ...spec,
      cluster,
      supervise: { interval, reportEvery: interval, failureThreshold: 1 },
      notify: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] },
    };
    const impl: Partial<typeof activities> = {
      // Every round fails: the head's /health does not answer.
      probeServingCluster: (i) => {
        const head = i.head.head.target.name;
        return Promise.resolve({
          hosts: [
            {
              host: head,
              ok: true as const,
              checks: [{ name: 'health' as const, host: head, ok: false, error: 'connection refused' }],
            },
            ...i.workers.map((w) => ({
              host: w.target.name,
              ok: true as const,
              checks: [{ name: 'container' as const, host: w.target.name, ok: true }],
            })),
          ],
        });
      },
      // `liftoff supervise stop` while the evidence is being collected.
      collectFailureBundle: async () => {
        const handle = server.env.client.workflow.getHandle(workflowId);
        await handle.signal(stopSupervisionSignal, { reason: 'stopped while collecting' });
        // Answered once the task that holds the signal is done: the supervisor has taken it in.
        await handle.query(supervisionQuery);
        return { collectedAtMs: Date.now(), hosts: [] };
      },
      postWebhook: () => Promise.resolve({ status: 204 }),
    };
    const taskQueue = 'supervise-timeskip-stop';
    const worker = await server.worker(taskQueue, impl);
    const { ended, state, history } = await worker.runUntil(async () => {
      const handle = await server.env.client.workflow.start(supervise, {
        taskQueue,
        workflowId,
        args: [{ spec: stopSpec, launch: { launchId: 'l1', servingSinceMs: Date.now() } }],
      });
      // Before the stop was checked after the bundle, the supervisor went on to relaunch (a deploy no scripted
      // activity serves): bounded, then ended by force.
      const ended = await Promise.race([
        handle.result().then(
          () => true,
          () => false,
        ),
        new Promise<false>((r) => setTimeout(() => r(false), 20_000)),
      ]);
      const state = await handle.query(supervisionQuery);
      if (!ended) {
        await handle.terminate('test: the stopped supervisor did not end');
        await server.env.client.workflow
          .getHandle(deployWorkflowId(cluster))
          .terminate('test: relaunch of a stopped supervisor')
          .catch(() => undefined);
      }
      return { ended, state, history: await handle.fetchHistory() };
    });
    const events = history.events ?? [];
    const children = events.flatMap((e) => {
      const a = e.startChildWorkflowExecutionInitiatedEventAttributes;
      return a ? [`${a.workflowType?.name}:${a.workflowId}`] : [];
    });
    assert.ok(
      events.some((e) => e.activityTaskCompletedEventAttributes),
      'the bundle is in history',
    );
    assert.ok(!children.some((c) => c.startsWith('deploy:')), `no relaunch: ${children.join(', ')}`);
    assert.ok(!children.some((c) => c.includes('-notify-relaunched-')), children.join(', '));
    assert.ok(
      children.some((c) => c.includes('-notify-lost-')),
      'the loss came before the stop',
    );
    assert.ok(ended, 'the supervisor ended by itself');
    assert.equal(state.status, 'stopped');
    assert.equal(state.reason, 'stopped while collecting');
    assert.deepEqual(state.relaunches, []);
  });

  it('a relaunch refused while another deploy holds the cluster: one bundle for the loss, not one an interval', async () => {
    const cluster = 'timeskip-refused';
    const workflowId = superviseWorkflowId(cluster);
    const lostSpec = {
      ...spec,
      cluster,
      supervise: { interval, reportEvery: interval, failureThreshold: 1 },
    };
    // What holds the cluster's deploy id (any workflow there refuses the relaunch): here a healthy supervisor of
    // another cluster, told apart by its hosts' cluster addresses.
    const holderSpec = {
      ...spec,
      cluster: 'timeskip-holder',
      hosts: spec.hosts.map((h) => ({ ...h, clusterIp: h.clusterIp.replace('10.0.0.', '10.0.9.') })),
    };
    let bundles = 0;
    const impl: Partial<typeof activities> = {
      probeServingCluster: (i) => {
        const head = i.head.head.target.name;
        const ok = i.head.clusterIp.startsWith('10.0.9.');
        return Promise.resolve({
          hosts: [
            {
              host: head,
              ok: true as const,
              checks: [
                { name: 'health' as const, host: head, ok, ...(ok ? {} : { error: 'connection refused' }) },
              ],
            },
            ...i.workers.map((w) => ({
              host: w.target.name,
              ok: true as const,
              checks: [{ name: 'container' as const, host: w.target.name, ok: true }],
            })),
          ],
        });
      },
      collectFailureBundle: () => {
        bundles += 1;
        return Promise.resolve({ collectedAtMs: Date.now(), hosts: [] });
      },
    };
    const taskQueue = 'supervise-timeskip-refused';
    const worker = await server.worker(taskQueue, impl);
    const state = await worker.runUntil(async () => {
      const holder = await server.env.client.workflow.start(supervise, {
        taskQueue,
        workflowId: deployWorkflowId(cluster),
        args: [{ spec: holderSpec, launch: { launchId: 'h1', servingSinceMs: Date.now() } }],
      });
      const handle = await server.env.client.workflow.start(supervise, {
        taskQueue,
        workflowId,
        args: [{ spec: lostSpec, launch: { launchId: 'l1', servingSinceMs: Date.now() } }],
      });
      // Lost at the first round, then refused once an interval (2 min) for half an hour.
      await server.env.sleep('30m');
      await handle.signal(stopSupervisionSignal, { reason: 'test over' });
      const { state } = await handle.result();
      await holder.signal(stopSupervisionSignal, { reason: 'test over' });
      await holder.result();
      return state;
    });
    const refused = state.relaunches.filter((r) => r.outcome === 'refused');
    assert.ok(refused.length >= 5, `${refused.length} refused attempts: ${JSON.stringify(state.relaunches)}`);
    assert.ok(
      refused.every((r) => /another deploy of timeskip-refused is running/.test(r.error ?? '')),
      JSON.stringify(refused),
    );
    assert.equal(
      bundles,
      1,
      `${bundles} bundles collected for one loss over ${refused.length} refused attempts`,
    );
    assert.equal(state.status, 'stopped');
  });
});
