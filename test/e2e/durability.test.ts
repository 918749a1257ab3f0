// Issue 4, scenarios 1 and 2: the control host dies (its worker is SIGKILLed at every step boundary and
// mid-load), a second worker takes over from a killed busy one, and the Temporal server itself is killed
// and restarted on the same database mid-load. Real dev server (a process we can kill), workers in their own
// processes, real sshd on two namespace hosts. "Launched once" and "one Ray container" are read from the
// hosts' own logs (launches.log, containers.log), never from liftoff's report.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { TASK_QUEUE, deployWorkflowId, downWorkflowId } from '../../src/shared/constants.js';
import { deploy, down, downProgressQuery, progressQuery } from '../../src/workflows/index.js';
import { clusterWorkflowId, type ClusterRecord } from '../../src/shared/cluster-api.js';
import type { DeployProgress, DeployResult, StepName } from '../../src/workflows/steps.js';
import { clusterStatus, downCluster, setSlowCommand, upCluster, type SimCluster } from '../../sim/cluster.js';
import { paths, readJson, writeJson, type HostConfig } from '../../sim/host-state.js';
import { containersLogPath, type ContainerCreation } from '../../sim/tools/docker/state.js';
import { simDeploySpec } from '../../sim/spec.js';
import { startWorkerProcess, type WorkerProcess } from '../../scripts/lib/worker-process.js';
import { headLaunches, hostLogLines } from '../helpers/host-logs.js';
import { isProcessAlive } from '../helpers/processes.js';
import { tearDown } from '../helpers/teardown.js';
import { waitFor } from '../helpers/wait.js';

const stateDir = '/tmp/liftoff-test-durability';
const temporalDir = '/tmp/liftoff-test-durability-temporal';
const serverPorts = { port: 27233, uiPort: 28233 };
const namespace = 'default';
const clusterName = 'durability';
const workflowId = deployWorkflowId(clusterName);
const rayContainer = 'vllm_qwen35';

// Scenario 1 needs the load to outlast one kill-and-recover (a heartbeat timeout, 15 s) after the kill at
// the waitHealthy boundary, so that a second kill can land mid-load. The others only need a short window.
// The smoke test's completion takes 2 s, so the kill at smokeTest lands while its request is in flight.
const slowPace = { shards: 39, shardSeconds: 1.2, graphCaptureSeconds: 1, completionSeconds: 2 };
const fastPace = { shards: 30, shardSeconds: 0.4, graphCaptureSeconds: 0.5, completionSeconds: 0 };

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const { PendingActivityState } = proto.temporal.api.enums.v1;

/** The activity that marks each step as running: its first scheduling is the step boundary. */
const boundaryActivity: [StepName, string][] = [
  ['preflight', 'preflightHost'],
  ['stopServices', 'stopServices'],
  ['removeContainers', 'removeContainers'],
  ['verifyGpusClear', 'verifyGpusClear'],
  ['startRayHead', 'startRayHead'],
  ['startRayWorkers', 'startRayWorker'],
  ['verifyRayCluster', 'verifyRayCluster'],
  ['launchServe', 'launchServe'],
  ['waitHealthy', 'checkServeHealth'],
  ['smokeTest', 'smokeTest'],
];

interface HistoryView {
  closed: boolean;
  /** Steps whose first activity was scheduled, in order, with when. */
  stepsStarted: { step: StepName; atMs: number }[];
  /** Steps with at least one completed activity. */
  stepsWithCompletion: Set<StepName>;
  /** Completed activities: when, which type, and which worker ran the attempt that completed. */
  completions: { atMs: number; type: string; identity: string; attempt: number }[];
}

function viewOf(events: HistoryEvent[]): HistoryView {
  const typeBySchedule = new Map<string, string>();
  const startedById = new Map<string, { identity: string; attempt: number }>();
  const stepOf = new Map(boundaryActivity.map(([step, type]) => [type, step]));
  const view: HistoryView = {
    closed: false,
    stepsStarted: [],
    stepsWithCompletion: new Set(),
    completions: [],
  };
  for (const e of events) {
    const id = String(e.eventId);
    const atMs = tsToMs(e.eventTime);
    if (e.activityTaskScheduledEventAttributes) {
      const type = e.activityTaskScheduledEventAttributes.activityType?.name ?? '';
      typeBySchedule.set(id, type);
      const step = stepOf.get(type);
      if (step && !view.stepsStarted.some((s) => s.step === step)) view.stepsStarted.push({ step, atMs });
    } else if (e.activityTaskStartedEventAttributes) {
      const a = e.activityTaskStartedEventAttributes;
      startedById.set(id, { identity: a.identity ?? '', attempt: a.attempt ?? 0 });
    } else if (e.activityTaskCompletedEventAttributes) {
      const a = e.activityTaskCompletedEventAttributes;
      const type = typeBySchedule.get(String(a.scheduledEventId)) ?? '';
      const started = startedById.get(String(a.startedEventId));
      view.completions.push({
        atMs,
        type,
        identity: started?.identity ?? '',
        attempt: started?.attempt ?? 0,
      });
      const step = stepOf.get(type);
      if (step) view.stepsWithCompletion.add(step);
    } else if (
      e.workflowExecutionCompletedEventAttributes ||
      e.workflowExecutionFailedEventAttributes ||
      e.workflowExecutionTimedOutEventAttributes ||
      e.workflowExecutionCanceledEventAttributes ||
      e.workflowExecutionTerminatedEventAttributes ||
      e.workflowExecutionContinuedAsNewEventAttributes
    ) {
      view.closed = true;
    }
  }
  return view;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('durability: the control host and the Temporal server die mid-deploy', () => {
  let sim: SimCluster;
  let server: DevServer | undefined;
  let connection: Connection | undefined;
  let client: Client;
  const workers: WorkerProcess[] = [];

  before(async () => {
    await downCluster(stateDir);
    rmSync(temporalDir, { recursive: true, force: true });
    [sim, server] = await Promise.all([
      upCluster({
        hosts: 2,
        mode: 'netns',
        stateDir,
        netIndex: 8,
        clusterOnly: ['spark2'],
        vllm: fastPace,
        // Its ForceCommand script can slow a command (setSlowCommand), which scenario 1 needs for the launch.
        recordCommands: true,
      }),
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

  function liveWorkers(): WorkerProcess[] {
    return workers.filter((w) => w.running());
  }

  /** Every live worker's last output lines: what a failure message needs to say why a deploy stalled. */
  function workerOutputs(): string {
    return workers
      .map(
        (w) =>
          `--- worker ${w.identity} (${w.running() ? 'running' : 'exited'}) ---\n${w.output().slice(-2000)}`,
      )
      .join('\n');
  }

  function setVllmPace(pace: Partial<HostConfig['vllm']>): void {
    for (const h of sim.hosts) {
      const cfg = readJson<HostConfig>(paths.config(h.hostDir));
      assert.ok(cfg, `${h.name}: host.json`);
      writeJson(paths.config(h.hostDir), { ...cfg, vllm: { ...cfg.vllm, ...pace } });
    }
  }

  const launchCount = () => headLaunches(sim);

  function rayCreations(hostDir: string): ContainerCreation[] {
    return hostLogLines(containersLogPath(hostDir))
      .map((l) => JSON.parse(l) as ContainerCreation)
      .filter((c) => c.name === rayContainer);
  }

  async function startDeploy(): Promise<WorkflowHandle<typeof deploy>> {
    return client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [simDeploySpec(sim, { cluster: clusterName }), { trigger: 'cli' }],
    });
  }

  async function history(handle: WorkflowHandle<typeof deploy>): Promise<HistoryView> {
    return viewOf((await handle.fetchHistory()).events ?? []);
  }

  /** The progress query with a short deadline: while no worker lives, nobody can answer it. */
  async function progressOf(handle: WorkflowHandle<typeof deploy>): Promise<DeployProgress | undefined> {
    assert.ok(connection);
    try {
      return await connection.withDeadline(Date.now() + 5000, () => handle.query(progressQuery));
    } catch {
      return undefined;
    }
  }

  /** Progress once the load passed a third of the shards and is not finished yet. */
  function midLoad(p: DeployProgress | undefined): DeployProgress | undefined {
    const load = p?.load;
    if (!load?.shardsTotal || load.shardsDone === undefined) return undefined;
    return load.shardsDone >= load.shardsTotal / 3 && load.shardsDone < load.shardsTotal ? p : undefined;
  }

  /** What every finished deploy must leave: one launch, one Ray container per host created once, running. */
  async function assertLaunchedOnce(
    result: DeployResult,
    launchesBefore: number,
    startedAtMs: number,
  ): Promise<void> {
    assert.equal(launchCount() - launchesBefore, 1, 'the head launched vllm exactly once');
    for (const h of sim.hosts) {
      const created = rayCreations(h.hostDir).filter((c) => Date.parse(c.time) >= startedAtMs);
      assert.equal(created.length, 1, `${h.name}: one Ray container was created during this deploy`);
      assert.equal(created[0]?.labels['liftoff.launch'], result.launchId, `${h.name}: by this launch`);
      const record = readJson<{ id: string }>(join(paths.containers(h.hostDir), `${rayContainer}.json`));
      assert.equal(record?.id, created[0]?.id, `${h.name}: the running Ray container is the one created`);
    }
    for (const host of await clusterStatus(stateDir)) {
      assert.deepEqual(
        host.containers.filter((c) => c.running).map((c) => c.name),
        [rayContainer],
        `${host.name}: exactly one Ray container runs`,
      );
    }
  }

  it(
    'scenario 1: the worker is SIGKILLed at every step boundary and mid-load; the deploy completes, launched once',
    { timeout: 10 * 60_000 },
    async () => {
      setVllmPace(slowPace);
      // The launch takes one round trip once verifyRayCluster hands on its look at the head: over within the time
      // between two looks at the history. A head slow to start it (as a loaded host is) leaves the step open long
      // enough for a kill to land in it.
      setSlowCommand(stateDir, 'spark1', { contains: 'setsid nohup docker exec', seconds: 2 });
      const launchesBefore = launchCount();
      assert.equal(launchesBefore, 0, 'a fresh cluster: no launch yet');
      let current = await startWorker();
      const startedAt = Date.now();
      const handle = await startDeploy();

      interface Kill {
        at: string;
        killedAtMs: number;
        victim: string;
        successor: string;
        /** Whether the step had no completed activity yet when its worker died. */
        stepOpen?: boolean;
      }
      const kills: Kill[] = [];
      const killedSteps = new Set<StepName>();
      let midLoadKill: { before: DeployProgress; after: DeployProgress; firstAnswerMs: number } | undefined;

      const replaceWorker = async (at: string, stepOpen?: boolean): Promise<void> => {
        const victim = current;
        await victim.kill('SIGKILL');
        const killedAtMs = Date.now();
        current = await startWorker();
        kills.push({
          at,
          killedAtMs,
          victim: victim.identity,
          successor: current.identity,
          ...(stepOpen === undefined ? {} : { stepOpen }),
        });
      };

      for (;;) {
        const view = await history(handle);
        if (view.closed) break;
        const fresh = view.stepsStarted.filter((s) => !killedSteps.has(s.step));
        const step = fresh[fresh.length - 1];
        if (step) {
          // A step that started and ended between two looks was never killed: the assertion below says so.
          for (const s of fresh) killedSteps.add(s.step);
          await replaceWorker(step.step, !view.stepsWithCompletion.has(step.step));
          continue;
        }
        if (!midLoadKill && killedSteps.has('waitHealthy')) {
          const before = midLoad(await progressOf(handle));
          if (before) {
            await replaceWorker('mid-load');
            const killedAtMs = kills[kills.length - 1]?.killedAtMs ?? Date.now();
            const after = await waitFor(
              'the new worker to answer the progress query',
              () => progressOf(handle),
              120_000,
              { detail: workerOutputs },
            );
            midLoadKill = { before, after, firstAnswerMs: Date.now() - killedAtMs };
            continue;
          }
        }
        await sleep(100);
      }
      const result = await handle.result();
      const totalMs = Date.now() - startedAt;

      // Recovery: from the kill to the first activity a later worker completed.
      const view = await history(handle);
      const recoveries = kills.map((k) => {
        const next = view.completions.find((c) => c.atMs >= k.killedAtMs && c.identity !== k.victim);
        return { ...k, recoveryMs: next ? next.atMs - k.killedAtMs : undefined, resumedWith: next?.type };
      });
      const starts = workers.map((w) => w.readyAtMs - w.spawnedAtMs);
      process.stdout.write(
        `# a worker process took ${seconds(Math.min(...starts))}–${seconds(Math.max(...starts))} to start polling\n`,
      );
      for (const r of recoveries) {
        process.stdout.write(
          `# kill at ${r.at}${r.stepOpen === false ? ' (step had already completed an activity)' : ''}: ${r.victim} → ${r.successor}; recovered in ${r.recoveryMs === undefined ? '?' : seconds(r.recoveryMs)} (${r.resumedWith ?? 'nothing'})\n`,
        );
      }

      const missed = boundaryActivity.map(([s]) => s).filter((s) => !kills.some((k) => k.at === s));
      assert.deepEqual(missed, [], 'a kill landed at every step boundary');
      assert.ok(midLoadKill, 'a kill landed mid-load (shardsDone ≥ 1/3, before the last shard)');
      for (const r of recoveries) {
        assert.ok(r.recoveryMs !== undefined, `the deploy moved again after the kill at ${r.at}`);
      }
      // The activities after each kill ran on workers that were still alive, never on a killed one.
      for (const c of view.completions) {
        const killedBefore = kills.find((k) => k.victim === c.identity && k.killedAtMs < c.atMs - 1000);
        assert.equal(killedBefore, undefined, `${c.type} completed by ${c.identity} after it was killed`);
      }

      // The new worker resumed the load where the dead one left it, not from zero.
      const { before: b, after: a } = midLoadKill;
      assert.ok(b.load && a.load);
      assert.ok((b.load.shardsDone ?? 0) > 0);
      assert.ok(
        (a.load.shardsDone ?? 0) >= (b.load.shardsDone ?? 0),
        `after the kill the load shows ${a.load.shardsDone} shards, before it showed ${b.load.shardsDone}`,
      );
      const loadStart = (p: DeployProgress) => p.steps.find((s) => s.name === 'waitHealthy')?.startedAtMs;
      assert.equal(loadStart(a), loadStart(b), 'the same load (its start time is the same)');
      assert.ok(a.load.elapsedS >= b.load.elapsedS, 'the load clock kept counting');
      assert.ok(a.load.lastLogAtMs >= b.load.lastLogAtMs, 'the log clock kept counting');
      assert.equal(a.launchId, b.launchId);

      assert.equal(result.cluster, clusterName);
      assert.ok(result.smoke.text.length > 0, 'the smoke test answered');
      await assertLaunchedOnce(result, launchesBefore, startedAt);
      setSlowCommand(stateDir, 'spark1', undefined);

      const perKill = recoveries.map(
        (r) => `${r.at} ${r.recoveryMs === undefined ? '?' : seconds(r.recoveryMs)}`,
      );
      console.log(
        `FIGURE: worker SIGKILLed ${kills.length} times (${kills.length - 1} step boundaries + mid-load at shard ${b.load.shardsDone}/${b.load.shardsTotal}); deploy completed in ${seconds(totalMs)}; 1 launch; Ray container created once per host; recovery per kill: ${perKill.join(', ')}; new worker answered progress ${seconds(midLoadKill.firstAnswerMs)} after the mid-load kill with shard ${a.load.shardsDone}/${a.load.shardsTotal} (was ${b.load.shardsDone}), same load start`,
      );
    },
  );

  it(
    'scenario 1b: two workers on one task queue; the busy one is SIGKILLed mid-load and the other carries on',
    { timeout: 5 * 60_000 },
    async () => {
      setVllmPace(fastPace);
      while (liveWorkers().length < 2) await startWorker();
      const [first, second] = liveWorkers();
      assert.ok(first && second);
      const launchesBefore = launchCount();
      const startedAt = Date.now();
      const handle = await startDeploy();
      await waitFor(
        'the load to pass a third of the shards',
        async () => midLoad(await progressOf(handle)),
        180_000,
        { detail: workerOutputs },
      );

      // The busy worker is the one running an activity right now, as the server sees it.
      const busyIdentity = await waitFor(
        'an activity in flight on one of the two workers',
        async () => {
          const { raw } = await handle.describe();
          const running = (raw.pendingActivities ?? []).find(
            (p) => p.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
          );
          return running?.lastWorkerIdentity ?? undefined;
        },
        60_000,
        { everyMs: 20, detail: workerOutputs },
      );
      const busy = [first, second].find((w) => w.identity === busyIdentity);
      assert.ok(
        busy,
        `the busy worker ${busyIdentity} is one of ours (${first.identity}, ${second.identity})`,
      );
      const survivor = busy === first ? second : first;
      await busy.kill('SIGKILL');
      const killedAtMs = Date.now();

      const result = await handle.result();
      const doneAtMs = Date.now();
      const view = await history(handle);
      const afterKill = view.completions.filter((c) => c.atMs > killedAtMs + 1000);
      assert.ok(afterKill.length > 0, 'activities completed after the kill');
      assert.deepEqual(
        [...new Set(afterKill.map((c) => c.identity))],
        [survivor.identity],
        'only the surviving worker completed activities after the kill',
      );
      assert.ok(survivor.running(), 'the other worker still runs');
      await assertLaunchedOnce(result, launchesBefore, startedAt);

      const resumed = afterKill[0];
      assert.ok(resumed);
      console.log(
        `FIGURE: 2 workers, the busy one (${busy.identity}) SIGKILLed mid-load; the other completed the deploy: first activity ${seconds(resumed.atMs - killedAtMs)} after the kill, deploy done ${seconds(doneAtMs - killedAtMs)} after it (${seconds(doneAtMs - startedAt)} in all); 1 launch; Ray container created once per host`,
      );
    },
  );

  it(
    'scenario 2: the Temporal server is SIGKILLed mid-load and restarted on the same database; the deploy completes, launched once',
    { timeout: 5 * 60_000 },
    async () => {
      setVllmPace(fastPace);
      while (liveWorkers().length < 1) await startWorker();
      const worker = liveWorkers()[0];
      assert.ok(worker && server);
      const launchesBefore = launchCount();
      const startedAt = Date.now();
      const handle = await startDeploy();
      const before = await waitFor(
        'the load to pass a third of the shards',
        async () => midLoad(await progressOf(handle)),
        180_000,
        { detail: workerOutputs },
      );

      const killed = server;
      process.kill(killed.pid, 'SIGKILL');
      const killedAtMs = Date.now();
      await waitFor(
        'the server process to die',
        () => Promise.resolve(isProcessAlive(killed.pid) ? undefined : true),
        10_000,
        { everyMs: 20, detail: workerOutputs },
      );
      server = undefined;
      server = await startDevServer({ stateDir: temporalDir, ...serverPorts, namespace });
      const backAtMs = Date.now();

      const result = await handle.result();
      const doneAtMs = Date.now();
      const view = await history(handle);
      const afterRestart = view.completions.filter((c) => c.atMs >= backAtMs);
      assert.ok(afterRestart.length > 0, 'the worker completed activities after the restart');
      assert.ok(
        afterRestart.every((c) => c.identity === worker.identity),
        'the same worker process reconnected and carried on',
      );
      assert.ok(worker.running(), 'the worker survived the server restart');
      assert.equal(result.launchId, before.launchId, 'the same run completed (not a new one)');
      await assertLaunchedOnce(result, launchesBefore, startedAt);

      const first = afterRestart[0];
      assert.ok(first);
      console.log(
        `FIGURE: Temporal server SIGKILLed mid-load (shard ${before.load?.shardsDone}/${before.load?.shardsTotal}) and restarted on the same database: down ${seconds(backAtMs - killedAtMs)}; first activity completed ${seconds(first.atMs - backAtMs)} after it was back; deploy completed ${seconds(doneAtMs - backAtMs)} after the restart (${seconds(doneAtMs - startedAt)} in all); same run, 1 launch; Ray container created once per host`,
      );
    },
  );

  it(
    'the control host dies during `liftoff down`: another worker finishes it, the containers gone and the hosts released',
    { timeout: 5 * 60_000 },
    async () => {
      setVllmPace(fastPace);
      while (liveWorkers().length < 1) await startWorker();
      await (await startDeploy()).result();
      // The removal on the head is slow, so the kill lands while the teardown runs.
      setSlowCommand(stateDir, 'spark1', { contains: 'docker rm -f', seconds: 4 });
      try {
        const startedAt = Date.now();
        const handle = await client.workflow.start(down, {
          taskQueue: TASK_QUEUE,
          workflowId: downWorkflowId(clusterName),
          args: [{ cluster: clusterName }],
        });
        await waitFor(
          'the down to reach its teardown',
          async () =>
            (await handle.query(downProgressQuery).catch(() => undefined))?.step === 'tear down'
              ? true
              : undefined,
          120_000,
          { detail: workerOutputs },
        );
        const killed = liveWorkers();
        for (const w of killed) await w.kill('SIGKILL');
        const killedAt = Date.now();
        const second = await startWorker();
        const result = await handle.result();
        assert.equal(result.alreadyDown, false);
        assert.deepEqual(
          result.hosts.map((h) => h.gpus),
          ['clear', 'clear'],
        );
        const view = await history(handle as unknown as WorkflowHandle<typeof deploy>);
        assert.ok(
          view.completions.some((c) => c.identity === second.identity),
          'the second worker completed activities of the down',
        );
        for (const h of await clusterStatus(stateDir))
          assert.deepEqual(
            h.containers.filter((c) => c.name === rayContainer),
            [],
            `${h.name}: the Ray container is gone`,
          );
        const record = (await client.workflow
          .getHandle(clusterWorkflowId(clusterName))
          .result()) as ClusterRecord;
        assert.equal(record.state, 'down');
        console.log(
          `FIGURE: worker SIGKILLed during down's teardown; a new worker finished it ${seconds(Date.now() - killedAt)} after the kill (${seconds(Date.now() - startedAt)} in all)`,
        );
      } finally {
        setSlowCommand(stateDir, 'spark1', undefined);
      }
    },
  );
});
