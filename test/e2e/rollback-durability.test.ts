// Issue 30: "Worker SIGKILL at each step of an automatic rollback: resumes, server launched once per deploy". A good
// spec serves (revision 1); a second spec's load crashes (sim fault crashAtShard) after the stop, so with
// rollout.onFailure: rollback the run records itself bad and continues as new as the rollback's deploy of revision
// 1. The worker is SIGKILLed when the failed run first schedules the recording of its bad revision, then at every
// step boundary of the rollback run (the first scheduling of the step's activity, the run found by the id the
// first run continued as), and a fresh worker started after each kill. Real dev server (its own process and
// ports), workers in their own processes, real sshd on two namespace hosts. Launches are read from the head's own
// logs (launches.log, containers.log), revisions from the cluster's workflow, runs from the server.
// Every step boundary but validate is killed (14 kills, about 3.5 minutes in all): most kills land on a started
// activity, whose retry waits out the heartbeat timeout (10 s), so each costs 10–25 s. Validate is a local check
// of a few milliseconds that runs the moment the failed run's continue-as-new is processed, before anything can
// look; the kill at the bad revision's record lands just before it. Steps that take one round trip are held open
// the way a loaded head would (setSlowCommand: the port check, the launch) and the smoke test's completion takes
// 2 s, or they would start and end between two looks at the history.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import type proto from '@temporalio/proto';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { clusterWorkflowId } from '../../src/shared/cluster-api.js';
import { deploy } from '../../src/workflows/index.js';
import type { DeployResult, StepName } from '../../src/workflows/steps.js';
import { readClusterRevisions } from '../../src/activities/revisions.js';
import { downCluster, setFaults, setSlowCommand, upCluster, type SimCluster } from '../../sim/cluster.js';
import { paths } from '../../sim/host-state.js';
import { containersLogPath, type ContainerCreation } from '../../sim/tools/docker/state.js';
import { simDeploySpec } from '../../sim/spec.js';
import { startWorkerProcess, type WorkerProcess } from '../../scripts/lib/worker-process.js';
import { hostLogLines } from '../helpers/host-logs.js';
import { assertHeadServes } from '../helpers/serving.js';
import { tearDown } from '../helpers/teardown.js';
import { waitFor } from '../helpers/wait.js';

const stateDir = '/tmp/liftoff-test-rollback-durability';
const temporalDir = '/tmp/liftoff-test-rollback-durability-temporal';
// Distinct from every other suite's dev server (durability 27233, connection-settings 27433, the bench 27533,
// compose-setup 27633) and network index (test/helpers/suites.ts, scripts/, bench/).
const serverPorts = { port: 27833, uiPort: 28833 };
const netIndex = 83;
const namespace = 'default';
const clusterName = 'rbdurable';
const workflowId = deployWorkflowId(clusterName);
const rayContainer = 'vllm_qwen35';
// A short load: every kill whose activity had started costs a heartbeat timeout (10 s) before the retry.
const pace = { shards: 8, shardSeconds: 0.3, graphCaptureSeconds: 0.3, completionSeconds: 2 };
const crashShard = 3;

/**
 * Head commands slowed in turn during the rollback (one at a time: the host keeps one), each until its step was
 * killed: the serve-port check and the launch are one short round trip each.
 */
const heldOpen: { step: StepName; contains: string }[] = [
  { step: 'checkServePort', contains: 'ss -Hltn' },
  { step: 'launchServe', contains: 'setsid nohup docker exec' },
];
const heldOpenSeconds = 2;

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/**
 * The activity that marks each step of the rollback run as running: its first scheduling is the step boundary.
 * Validate's (checkWorkerPolicy) is not among them: see the header.
 */
const boundaryActivity: [StepName, string][] = [
  ['preflight', 'preflightHost'],
  ['holdHosts', 'holdHosts'],
  ['stopServices', 'stopServices'],
  ['removeContainers', 'removeContainers'],
  ['verifyGpusClear', 'verifyGpusClear'],
  ['startRayHead', 'startRayHead'],
  ['startRayWorkers', 'startRayWorker'],
  ['verifyRayCluster', 'verifyRayCluster'],
  ['checkServePort', 'checkServePort'],
  ['launchServe', 'launchServe'],
  ['waitHealthy', 'checkServeHealth'],
  ['smokeTest', 'smokeTest'],
  ['record', 'recordRevision'],
];

interface RunView {
  /** Activity types in the order of their first scheduling, with when. */
  scheduled: { type: string; atMs: number }[];
  /** Completed activities: when, which type, which worker ran the attempt that completed. */
  completions: { atMs: number; type: string; identity: string }[];
  /** The run this one continued as, if it did. */
  continuedAs?: string;
  closed: boolean;
}

function viewOf(events: HistoryEvent[]): RunView {
  const typeBySchedule = new Map<string, string>();
  const identityByStart = new Map<string, string>();
  const view: RunView = { scheduled: [], completions: [], closed: false };
  for (const e of events) {
    const atMs = tsToMs(e.eventTime);
    if (e.activityTaskScheduledEventAttributes) {
      const type = e.activityTaskScheduledEventAttributes.activityType?.name ?? '';
      typeBySchedule.set(String(e.eventId), type);
      if (!view.scheduled.some((s) => s.type === type)) view.scheduled.push({ type, atMs });
    } else if (e.activityTaskStartedEventAttributes) {
      identityByStart.set(String(e.eventId), e.activityTaskStartedEventAttributes.identity ?? '');
    } else if (e.activityTaskCompletedEventAttributes) {
      const a = e.activityTaskCompletedEventAttributes;
      view.completions.push({
        atMs,
        type: typeBySchedule.get(String(a.scheduledEventId)) ?? '',
        identity: identityByStart.get(String(a.startedEventId)) ?? '',
      });
    } else if (e.workflowExecutionContinuedAsNewEventAttributes) {
      view.closed = true;
      view.continuedAs = e.workflowExecutionContinuedAsNewEventAttributes.newExecutionRunId ?? undefined;
    } else if (
      e.workflowExecutionCompletedEventAttributes ||
      e.workflowExecutionFailedEventAttributes ||
      e.workflowExecutionTimedOutEventAttributes ||
      e.workflowExecutionCanceledEventAttributes ||
      e.workflowExecutionTerminatedEventAttributes
    ) {
      view.closed = true;
    }
  }
  return view;
}

/** An error and its causes, one a line: a failed workflow's message is in its cause. */
function causes(err: unknown): string {
  const lines: string[] = [];
  for (let e: unknown = err; e instanceof Error && lines.length < 5; e = e.cause) lines.push(e.message);
  return lines.join('\n  caused by: ');
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('rollback durability: the control host dies at every step of an automatic rollback', () => {
  let sim: SimCluster;
  let server: DevServer | undefined;
  let connection: Connection | undefined;
  let client: Client;
  const workers: WorkerProcess[] = [];

  before(async () => {
    await downCluster(stateDir);
    rmSync(temporalDir, { recursive: true, force: true });
    [sim, server] = await Promise.all([
      // recordCommands: its ForceCommand script can slow a command (setSlowCommand).
      upCluster({ hosts: 2, mode: 'netns', stateDir, netIndex, vllm: pace, recordCommands: true }),
      startDevServer({ stateDir: temporalDir, ...serverPorts, namespace }),
    ]);
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection, namespace });
  });

  after(() =>
    tearDown([
      ...workers.map((w) => () => w.kill()),
      () => connection?.close(),
      () => server?.stop(),
      () => downCluster(stateDir),
      () => rmSync(temporalDir, { recursive: true, force: true }),
    ]),
  );

  async function startWorker(): Promise<WorkerProcess> {
    assert.ok(server);
    const w = await startWorkerProcess({
      address: server.address,
      namespace,
      workerPolicyPath: sim.workerPolicyPath,
    });
    workers.push(w);
    return w;
  }

  /** Every worker's last output lines: what a failure message needs to say why a deploy stalled. */
  function workerOutputs(): string {
    return workers
      .map(
        (w) =>
          `--- worker ${w.identity} (${w.running() ? 'running' : 'exited'}) ---\n${w.output().slice(-2000)}`,
      )
      .join('\n');
  }

  /** Spec A serves; spec B differs in one serve argument (so its revision is its own) and is the one that fails. */
  function specOf(maxModelLen: string) {
    const spec = simDeploySpec(sim, { cluster: clusterName });
    return {
      ...spec,
      serve: { ...spec.serve, args: ['--gpu-memory-utilization', '0.85', '--max-model-len', maxModelLen] },
      rollout: { onFailure: 'rollback' as const },
    };
  }

  async function runView(runId: string): Promise<RunView> {
    return viewOf((await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? []);
  }

  /**
   * The head's launches, each given to the launch whose Ray container was the latest created before it: the
   * server runs inside that container (`docker exec`), and each deploy creates its own.
   */
  function launchesByLaunchId(): Map<string, number> {
    const head = sim.hosts[0];
    assert.ok(head);
    const creations = hostLogLines(containersLogPath(head.hostDir))
      .map((l) => JSON.parse(l) as ContainerCreation)
      .filter((c) => c.name === rayContainer)
      .map((c) => ({ atMs: Date.parse(c.time), launchId: c.labels['liftoff.launch'] ?? '(unlabelled)' }));
    const counts = new Map<string, number>();
    for (const line of hostLogLines(paths.launches(head.hostDir))) {
      const atMs = Date.parse((JSON.parse(line) as { time: string }).time);
      const owner = creations.filter((c) => c.atMs <= atMs).at(-1)?.launchId ?? '(before any container)';
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    return counts;
  }

  function rayCreationsOf(launchId: string): Map<string, number> {
    return new Map(
      sim.hosts.map((h) => [
        h.name,
        hostLogLines(containersLogPath(h.hostDir))
          .map((l) => JSON.parse(l) as ContainerCreation)
          .filter((c) => c.name === rayContainer && c.labels['liftoff.launch'] === launchId).length,
      ]),
    );
  }

  it(
    'the worker is SIGKILLed at the bad revision’s record and at every step of the rollback; it completes, each deploy launched once',
    { timeout: 6 * 60_000 },
    async () => {
      const testStartedAt = Date.now();
      let current = await startWorker();

      // Revision 1: spec A serves.
      const good: DeployResult = await client.workflow.execute(deploy, {
        taskQueue: TASK_QUEUE,
        workflowId,
        args: [specOf('32768'), { trigger: 'cli' }],
      });
      assert.equal(good.revision, 1, 'the good deploy recorded revision 1');
      const goodAt = Date.now();

      // Spec B: the load crashes at a shard, after the stop of A.
      setFaults(stateDir, sim.hosts[0]!.name, { crashAtShard: crashShard });
      const startedAt = Date.now();
      const handle: WorkflowHandleWithFirstExecutionRunId<typeof deploy> = await client.workflow.start(
        deploy,
        {
          taskQueue: TASK_QUEUE,
          workflowId,
          args: [specOf('16384'), { trigger: 'cli' }],
        },
      );
      const failedRunId = handle.firstExecutionRunId;

      interface Kill {
        at: string;
        run: 'failed' | 'rollback';
        killedAtMs: number;
        victim: string;
        /** Whether the step's activity had completed already when its worker died. */
        stepDone: boolean;
      }
      const kills: Kill[] = [];
      const replaceWorker = async (at: string, run: Kill['run'], stepDone: boolean): Promise<void> => {
        const victim = current;
        await victim.kill('SIGKILL');
        kills.push({ at, run, killedAtMs: Date.now(), victim: victim.identity, stepDone });
        current = await startWorker();
      };
      let faultCleared = false;
      const clearFault = () => {
        // The crash happened: the rollback's own load must not crash too.
        if (!faultCleared) setFaults(stateDir, sim.hosts[0]!.name, {});
        faultCleared = true;
      };

      // The failed run: killed when it first schedules the recording of its bad revision.
      let rollbackRunId: string | undefined;
      let killedBadRecord = false;
      const deadline = Date.now() + 5 * 60_000;
      while (!rollbackRunId) {
        assert.ok(Date.now() < deadline, `the failed run never continued as new\n${workerOutputs()}`);
        const view = await runView(failedRunId);
        if (view.closed) {
          assert.ok(view.continuedAs, 'the failed run continued as new (it did not end)');
          rollbackRunId = view.continuedAs;
          break;
        }
        if (!killedBadRecord && view.scheduled.some((s) => s.type === 'recordRevision')) {
          killedBadRecord = true;
          clearFault();
          await replaceWorker(
            'the bad revision’s record',
            'failed',
            view.completions.some((c) => c.type === 'recordRevision'),
          );
          continue;
        }
        // From the diagnostics on, the bad revision's record is a round trip to the cluster's workflow away: look
        // often, so the kill lands while it is in flight more often than not.
        await sleep(view.scheduled.some((s) => s.type === 'collectDiagnostics') ? 20 : 100);
      }
      clearFault();

      // The rollback run: killed at the first scheduling of each step's activity.
      const stepOf = new Map(boundaryActivity.map(([step, type]) => [type, step]));
      const killedSteps = new Set<StepName>();
      const holdNextOpen = () => {
        const next = heldOpen.find((h) => !killedSteps.has(h.step));
        setSlowCommand(
          stateDir,
          sim.hosts[0]!.name,
          next ? { contains: next.contains, seconds: heldOpenSeconds } : undefined,
        );
      };
      holdNextOpen();
      for (;;) {
        assert.ok(Date.now() < deadline, `the rollback did not end\n${workerOutputs()}`);
        const view = await runView(rollbackRunId);
        if (view.closed) break;
        const fresh = view.scheduled.flatMap((s) => {
          const step = stepOf.get(s.type);
          return step && !killedSteps.has(step) ? [{ step, type: s.type }] : [];
        });
        const last = fresh.at(-1);
        if (last) {
          // A step that started and ended between two looks was never killed: the assertion below says so.
          for (const s of fresh) killedSteps.add(s.step);
          await replaceWorker(
            last.step,
            'rollback',
            view.completions.some((c) => c.type === last.type),
          );
          holdNextOpen();
          continue;
        }
        await sleep(100);
      }
      setSlowCommand(stateDir, sim.hosts[0]!.name, undefined);
      const result = await handle.result().catch((err: unknown) => {
        throw new Error(`the deploy failed: ${causes(err)}`);
      });
      const totalMs = Date.now() - startedAt;

      // Recovery: from each kill to the first activity a later worker completed, in the run it was in.
      const failedView = await runView(failedRunId);
      const rollbackView = await runView(rollbackRunId);
      const recoveries = kills.map((k) => {
        const completions = (k.run === 'failed' ? failedView : rollbackView).completions.concat(
          k.run === 'failed' ? rollbackView.completions : [],
        );
        const next = completions
          .filter((c) => c.atMs >= k.killedAtMs && c.identity !== k.victim)
          .sort((a, b) => a.atMs - b.atMs)[0];
        return { ...k, recoveryMs: next ? next.atMs - k.killedAtMs : undefined, resumedWith: next?.type };
      });
      for (const r of recoveries) {
        process.stdout.write(
          `# kill at ${r.run} ${r.at}${r.stepDone ? ' (its activity had completed already)' : ''}: recovered in ${r.recoveryMs === undefined ? '?' : seconds(r.recoveryMs)} (${r.resumedWith ?? 'nothing'})\n`,
        );
      }

      assert.ok(killedBadRecord, 'a kill landed at the failed run’s record of its bad revision');
      const missed = boundaryActivity.map(([s]) => s).filter((s) => !kills.some((k) => k.at === s));
      assert.deepEqual(missed, [], 'a kill landed at every step boundary of the rollback');
      for (const c of [...failedView.completions, ...rollbackView.completions]) {
        const killedBefore = kills.find((k) => k.victim === c.identity && k.killedAtMs < c.atMs - 1000);
        assert.equal(killedBefore, undefined, `${c.type} completed by ${c.identity} after it was killed`);
      }

      // The result is the rollback's, and the head serves.
      const failedLaunchId = `${workflowId}:${failedRunId}`;
      const rollbackLaunchId = `${workflowId}:${rollbackRunId}`;
      assert.equal(result.launchId, rollbackLaunchId, 'the result is the rollback run’s');
      assert.deepEqual(
        { from: result.rolledBack?.from, to: result.rolledBack?.to, failedRun: result.rolledBack?.failedRun },
        { from: 2, to: 1, failedRun: failedLaunchId },
      );
      assert.equal(result.revision, 3);
      await assertHeadServes(sim, result);

      // Exactly one continue-as-new: the chain is the failed run and the rollback, which completed.
      assert.equal(failedView.continuedAs, rollbackRunId);
      assert.equal(
        rollbackView.continuedAs,
        undefined,
        'the rollback did not continue as new (no third run)',
      );
      const latest = await client.workflow.getHandle(workflowId).describe();
      assert.equal(latest.runId, rollbackRunId, 'the latest run of the deploy id is the rollback');
      assert.equal(latest.status.name, 'COMPLETED');
      const runs = await waitFor(
        'the three runs of the deploy id in visibility',
        async () => {
          const ids: string[] = [];
          for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
            ids.push(w.runId);
          return ids.length >= 3 ? ids : undefined;
        },
        30_000,
      );
      assert.equal(runs.length, 3, 'good deploy, failed run, rollback: no other run');

      // The head's own logs: one launch for the failed deploy's launch, one for the rollback's.
      const launches = launchesByLaunchId();
      assert.equal(launches.get(good.launchId), 1, 'the good deploy launched once');
      assert.equal(launches.get(failedLaunchId), 1, 'the failed deploy launched once');
      assert.equal(launches.get(rollbackLaunchId), 1, 'the rollback launched once');
      assert.equal(
        [...launches.values()].reduce((a, b) => a + b, 0),
        3,
        'no other launch',
      );
      for (const [host, count] of rayCreationsOf(rollbackLaunchId))
        assert.equal(count, 1, `${host}: the rollback created its Ray container once`);

      // The cluster's revisions: 1 replaced, 2 bad, 3 serving and restoring 1, none twice.
      const { revisions } = await readClusterRevisions(client, clusterName);
      assert.deepEqual(
        revisions.map((r) => ({
          number: r.number,
          status: r.status,
          launchId: r.launchId,
          ...(r.restores !== undefined ? { restores: r.restores } : {}),
        })),
        [
          { number: 1, status: 'replaced', launchId: good.launchId },
          { number: 2, status: 'bad', launchId: failedLaunchId },
          { number: 3, status: 'serving', launchId: rollbackLaunchId, restores: 1 },
        ],
        'the revisions, each recorded once',
      );

      // What the kills cost the cluster's workflow: a recordRevision activity retried after its Update was applied
      // sends that Update again, which the cluster's rule keeps once (cluster-record.ts recordRevision).
      const clusterEvents =
        (await client.workflow.getHandle(clusterWorkflowId(clusterName)).fetchHistory()).events ?? [];
      const recordUpdates = clusterEvents.filter(
        (e) =>
          e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'recordRevision',
      ).length;
      assert.ok(recordUpdates >= 3, `${recordUpdates} recordRevision updates reached the cluster's workflow`);

      const perKill = recoveries.map(
        (r) => `${r.at} ${r.recoveryMs === undefined ? '?' : seconds(r.recoveryMs)}`,
      );
      console.log(
        `FIGURE: worker SIGKILLed ${kills.length} times (the failed run's record of its bad revision${kills[0]?.stepDone ? ' (its activity had completed)' : ' (its activity not completed yet)'} + ${kills.length - 1} step boundaries of the rollback); failed deploy and rollback took ${seconds(totalMs)} (good deploy ${seconds(goodAt - testStartedAt)}, test ${seconds(Date.now() - testStartedAt)}); launches: 1 failed, 1 rollback; revisions [1 replaced, 2 bad, 3 serving restores 1]; 1 continue-as-new; ${recordUpdates} recordRevision updates for 3 revisions; recovery per kill: ${perKill.join(', ')}`,
      );
    },
  );
});
