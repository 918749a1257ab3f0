// Network faults during a deploy (issue 4): an sshd restart on the head, which is also the jump host of the
// worker, in the middle of a step; a 20 s partition of the worker during the load; and a partition longer
// than serve.hostUnreachableTimeout. Real Temporal dev server, real worker, real sshd in namespace hosts;
// the faults are real (links taken down with ip, sshd processes killed). Every check reads the hosts' state.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { headLaunches } from '../helpers/host-logs.js';
import { sshRun } from '../helpers/ssh.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { deploy, progressQuery } from '../../src/workflows/index.js';
import type { DeployProgress, DeployResult } from '../../src/workflows/steps.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import {
  clusterStatus,
  restartSshd,
  setFaults,
  setHostDown,
  setHostUp,
  setSlowCommand,
  type SimCluster,
} from '../../sim/cluster.js';
import { paths, readJson, writeJson, type HostConfig } from '../../sim/host-state.js';
import { withDescendants } from '../../sim/processes.js';
import { readSshdPid } from '../../sim/sshd.js';
import { simDeploySpec } from '../../sim/spec.js';

const stateDir = '/tmp/liftoff-test-network';
const clusterName = 'network';
const workflowId = deployWorkflowId(clusterName);
const modelId = 'Qwen/Qwen3.5-122B-A10B-FP8';

type DeployHandle = WorkflowHandle<typeof deploy>;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Pace = Partial<HostConfig['vllm']>;

const seconds = (ms: number): string => (ms / 1000).toFixed(1);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('network faults during a deploy', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 9,
    vllm: { shards: 6, shardSeconds: 0.2, graphCaptureSeconds: 0.2 },
    // Its ForceCommand script can slow a command (setSlowCommand), which the sshd restart test needs.
    recordCommands: true,
  });

  /** The simulated vllm reads its pace from host.json at each launch. */
  function setPace(pace: Pace): void {
    for (const h of e2e.sim.hosts) {
      const config = readJson<HostConfig>(paths.config(h.hostDir));
      assert.ok(config, `${h.name} has a host.json`);
      writeJson(paths.config(h.hostDir), { ...config, vllm: { ...config.vllm, ...pace } });
    }
  }

  const launches = () => headLaunches(e2e.sim);

  function spec(hostUnreachableTimeout?: string) {
    const base = simDeploySpec(e2e.sim, { cluster: clusterName });
    return {
      ...base,
      serve: { ...base.serve, ...(hostUnreachableTimeout ? { hostUnreachableTimeout } : {}) },
    };
  }

  function startDeploy(s: ReturnType<typeof spec>): Promise<DeployHandle> {
    return e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [s, { trigger: 'cli' }],
    });
  }

  async function progressOf(handle: DeployHandle): Promise<DeployProgress | undefined> {
    return handle.query(progressQuery).catch(() => undefined);
  }

  /** Takes spark2's link down once the load is loading the weights; returns when it went down. */
  async function partitionSpark2MidLoad(handle: DeployHandle): Promise<number> {
    await waitFor(
      'the load to reach loading_weights',
      async () => ((await progressOf(handle))?.load?.phase === 'loading_weights' ? true : undefined),
      120_000,
      { everyMs: 100 },
    );
    await setHostDown(stateDir, 'spark2', 'link');
    return Date.now();
  }

  /** What an undisturbed deploy leaves: old units stopped and disabled, only the Ray container runs, model served. */
  async function assertDeployedState(result: DeployResult): Promise<void> {
    for (const host of await clusterStatus(stateDir)) {
      assert.equal(host.units.length, 4, `${host.name} has its 4 old units`);
      for (const unit of host.units) {
        assert.equal(unit.active, false, `${host.name} ${unit.name} is stopped`);
        assert.equal(unit.enabled, false, `${host.name} ${unit.name} is disabled`);
      }
      assert.deepEqual(
        host.containers.filter((c) => c.running).map((c) => c.name),
        ['vllm_qwen35'],
        `${host.name} runs only the Ray container`,
      );
    }
    const ray = parseRayStatus(await sshRun(e2e.sim, 'spark1', 'docker exec vllm_qwen35 ray status'));
    assert.equal(ray.activeNodes.length, 2, 'both hosts are in the Ray cluster');
    const head = e2e.sim.hosts[0];
    assert.ok(head);
    const models = (await (await fetch(`http://${head.address}:30000/v1/models`)).json()) as {
      data: { id: string }[];
    };
    assert.ok(
      models.data.some((m) => m.id === modelId),
      'the model is served',
    );
    assert.equal(result.endpoint, `http://${head.address}:30000/v1`);
    assert.ok(result.smoke.text.length > 0, 'the smoke test got an answer');
  }

  it('an sshd restart on the head (the jump host) mid-step breaks open sessions; the step retries and the deploy completes', async () => {
    setPace({ shards: 6, shardSeconds: 0.2, graphCaptureSeconds: 0.2 });
    // The old containers' GPU memory stays reported for a while after they are removed, so verifyGpusClear
    // retries over several seconds, each attempt running commands on spark1 (and through it on spark2).
    const heldSeconds = 8;
    for (const h of ['spark1', 'spark2']) setFaults(stateDir, h, { gpuHeldAfterKillSeconds: heldSeconds });
    // Each of the step's sessions on spark1 lasts half a second, so the restart lands inside one: the host's
    // tool calls themselves take a few milliseconds (its tool server), over before the sessions could be killed.
    setSlowCommand(stateDir, 'spark1', { contains: '--query-compute-apps', seconds: 0.5 });
    const launchesBefore = launches();
    const startedAt = Date.now();
    const handle = await startDeploy(spec());
    const attemptFailures = watchActivityFailures(handle);
    let restart: SshdRestart;
    let result: DeployResult;
    try {
      await waitFor(
        'the deploy to reach verifyGpusClear',
        async () => ((await progressOf(handle))?.currentStep === 'verifyGpusClear' ? true : undefined),
        120_000,
        { everyMs: 50 },
      );
      restart = await restartSshdDuringSession(e2e.sim, 'spark1');
      result = await handle.result();
    } finally {
      attemptFailures.stop();
      for (const h of ['spark1', 'spark2']) setFaults(stateDir, h, {});
      setSlowCommand(stateDir, 'spark1', undefined);
    }
    const totalMs = Date.now() - startedAt;

    await assertDeployedState(result);
    assert.equal(launches() - launchesBefore, 1, 'one server launch');

    // The break itself, seen live: an attempt of the step's activity failed on SSH, not on GPU memory.
    const sshFailures = (await attemptFailures.done).filter((f) => f.type === 'SshConnectError');
    assert.ok(
      sshFailures.length > 0,
      `an attempt failed on the broken connection; failures seen: ${JSON.stringify(await attemptFailures.done)}`,
    );
    // The history: each activity that lost its connection was started again and completed.
    const activities = summarizeActivities(await handle.fetchHistory().then((h) => h.events ?? []));
    for (const failure of sshFailures) {
      const activity = activities.get(failure.activityId);
      assert.ok(activity, `activity ${failure.activityId} is in the history`);
      assert.equal(activity.type, 'verifyGpusClear', 'the connection broke during verifyGpusClear');
      assert.equal(
        activity.outcome,
        'completed',
        `${activity.host}: verifyGpusClear completed after the break`,
      );
      assert.ok(
        activity.lastAttempt > failure.attempt,
        `${activity.host}: started again after attempt ${failure.attempt} (last attempt ${activity.lastAttempt})`,
      );
    }
    const step = (await handle.query(progressQuery)).steps.find((s) => s.name === 'verifyGpusClear');
    const stepMs = step?.durationMs ?? NaN;
    const broken = sshFailures
      .map(
        (f) =>
          `${activities.get(f.activityId)?.host ?? '?'} attempt ${f.attempt} (${/failed \((\w+)\)/.exec(f.message)?.[1] ?? f.type} at ${f.host})`,
      )
      .sort()
      .join(', ');
    const attempts = [...activities.values()]
      .filter((a) => a.type === 'verifyGpusClear')
      .map((a) => `${a.host} ${a.lastAttempt}`)
      .sort()
      .join(', ');
    console.log(
      `FIGURE: sshd on spark1 (jump host for spark2) restarted ${seconds(restart.atMs - (step?.startedAtMs ?? NaN))} s into verifyGpusClear with ${restart.connectionsKilled} open SSH connection(s) killed; ` +
        `SSH failures retried: ${broken}; verifyGpusClear attempts: ${attempts}; step took ${seconds(stepMs)} s ` +
        `(GPU memory held ${heldSeconds} s); deploy completed in ${seconds(totalMs)} s; 1 launch; 1 Ray container per host`,
    );
  });

  it('a 20 s partition of the worker during the load is noticed and ridden out; the deploy completes', async () => {
    // 35 s of shards: the load is still running when the link comes back after 20 s.
    setPace({ shards: 39, shardSeconds: 0.9, graphCaptureSeconds: 0.5 });
    const partitionMs = 20_000;
    const launchesBefore = launches();
    const startedAt = Date.now();
    const handle = await startDeploy(spec('45s'));
    let downAt = 0;
    let upAt = 0;
    let noticedAt: number | undefined;
    let unreachableSinceMs: number | undefined;
    let clearedAt: number | undefined;
    try {
      downAt = await partitionSpark2MidLoad(handle);
      while (Date.now() - downAt < partitionMs) {
        const since = (await progressOf(handle))?.load?.unreachableSinceMs?.spark2;
        if (since !== undefined && noticedAt === undefined) {
          noticedAt = Date.now();
          unreachableSinceMs = since;
        }
        await sleep(200);
      }
    } finally {
      await setHostUp(stateDir, 'spark2');
      upAt = Date.now();
    }
    const atLinkUp = await progressOf(handle);
    let finished = false;
    const watchRecovery = (async () => {
      while (!finished && clearedAt === undefined) {
        const progress = await progressOf(handle);
        if (progress?.load && progress.load.unreachableSinceMs?.spark2 === undefined) clearedAt = Date.now();
        await sleep(200);
      }
    })();
    const result = await handle.result().finally(() => {
      finished = true;
    });
    await watchRecovery;
    const totalMs = Date.now() - startedAt;

    assert.ok(noticedAt !== undefined, 'the progress showed spark2 unreachable during the partition');
    assert.equal(atLinkUp?.status, 'running', 'the deploy was still running when the link came back');
    assert.notEqual(atLinkUp?.load?.phase, 'ready', 'the load was not over when the link came back');
    const final = await handle.query(progressQuery);
    assert.equal(final.load?.unreachableSinceMs?.spark2, undefined, 'spark2 answered again before the end');
    await assertDeployedState(result);
    assert.equal(launches() - launchesBefore, 1, 'one server launch');
    console.log(
      `FIGURE: spark2 link down ${seconds(upAt - downAt)} s during loading_weights; workflow marked it unreachable ${seconds((unreachableSinceMs ?? NaN) - downAt)} s after link-down ` +
        `(seen in progress after ${seconds(noticedAt - downAt)} s)` +
        `${clearedAt !== undefined ? `, reachable again ${seconds(clearedAt - upAt)} s after link-up` : ''}; ` +
        `deploy completed in ${seconds(totalMs)} s (load ${seconds(result.loadSeconds * 1000)} s); 1 launch; Ray kept both nodes`,
    );
  });

  it('a partition longer than serve.hostUnreachableTimeout fails the load with HostUnreachable naming the host and the budget', async () => {
    // Slow enough that the load cannot finish before the budget runs out.
    setPace({ shards: 39, shardSeconds: 1.5, graphCaptureSeconds: 0.5 });
    const handle = await startDeploy(spec('15s'));
    let downAt = 0;
    let failedAt = 0;
    let error: unknown;
    try {
      downAt = await partitionSpark2MidLoad(handle);
      error = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      failedAt = Date.now();
    } finally {
      await setHostUp(stateDir, 'spark2');
    }
    const failedAfterMs = failedAt - downAt;
    assert.ok(error instanceof WorkflowFailedError, `the deploy failed: ${String(error)}`);
    const cause = error.cause;
    assert.ok(cause instanceof ApplicationFailure, String(cause));
    assert.equal(cause.type, 'HostUnreachable', cause.message);
    assert.match(cause.message, /^waitHealthy failed: spark2 has not answered for /);
    assert.match(cause.message, /serve\.hostUnreachableTimeout 15s/);
    assert.match(cause.message, /phase loading_weights/, 'the load was still running');
    assert.ok(failedAfterMs >= 15_000, `not given up before the budget (${seconds(failedAfterMs)} s)`);
    const details = cause.details?.[0] as
      { diagnostics?: { host: string; reachable: boolean }[] } | undefined;
    assert.equal(
      details?.diagnostics?.find((d) => d.host === 'spark2')?.reachable,
      false,
      'the diagnostics say spark2 could not be reached',
    );
    console.log(
      `FIGURE: spark2 link down for good during loading_weights; failed HostUnreachable (budget 15s) ${seconds(failedAfterMs)} s after link-down, naming spark2 ` +
        `("not answered for ${/has not answered for (\S+)/.exec(cause.message)?.[1] ?? '?'}", counted from the start of the first unanswered poll; the rest is the last poll's and the diagnostics' SSH connect timeouts)`,
    );
  });
});

// ------------------------------------------------------------------------------------------------ faults

interface SshdRestart {
  atMs: number;
  connectionsKilled: number;
}

function isSshd(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sshd';
  } catch {
    return false;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** One sshd process per open connection: the listener's children (each forks its own helpers below it). */
function sshdConnections(listener: number): number[] {
  return [...withDescendants([listener])].filter(
    (pid) => pid !== listener && parentOf(pid) === listener && isSshd(pid),
  );
}

/**
 * Restarting sshd alone leaves open sessions alone (OpenSSH runs each connection in its own process; checked:
 * a 4 s command on spark1 and one on spark2 through it both finished across a restart). To break connections
 * the way a crash of every sshd process would, this waits until a command runs on the host (a process that a
 * connection's sshd started since the call: the worker's connections are shared and opened by earlier steps, so
 * a connection idle between two commands would be replaced without any command failing), SIGKILLs every sshd
 * process of the host but the listener, then restarts sshd.
 */
async function restartSshdDuringSession(sim: SimCluster, hostName: string): Promise<SshdRestart> {
  const host = sim.hosts.find((h) => h.name === hostName);
  assert.ok(host);
  const listener = readSshdPid(host.hostDir);
  assert.ok(listener !== undefined, `${hostName}: sshd runs`);
  const before = withDescendants([listener]);
  const until = Date.now() + 30_000;
  let running = false;
  while (Date.now() < until && !running) {
    for (const pid of withDescendants([listener])) {
      if (before.has(pid) || isSshd(pid)) continue;
      const parent = parentOf(pid);
      if (parent !== undefined && isSshd(parent)) running = true;
    }
    if (!running) await sleep(5);
  }
  assert.ok(running, `a command ran on ${hostName} during the step`);
  const atMs = Date.now();
  const connections = sshdConnections(listener).length;
  for (const pid of withDescendants([listener])) {
    if (pid === listener || !isSshd(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // it closed by itself meanwhile
    }
  }
  await restartSshd(stateDir, hostName);
  return { atMs, connectionsKilled: connections };
}

// ------------------------------------------------------------------------------------------------ history

interface AttemptFailure {
  activityId: string;
  activityType: string;
  /** The host the failed connection went to (a jump host's name when the hop to it failed). */
  host: string;
  /** The attempt that failed. */
  attempt: number;
  type: string;
  message: string;
}

/**
 * Polls the workflow's pending activities and keeps each attempt's failure: the history records only an
 * activity's last failure, and retries of GPU memory still held would hide the one that broke on SSH.
 */
function watchActivityFailures(handle: DeployHandle): { stop: () => void; done: Promise<AttemptFailure[]> } {
  let stopped = false;
  const seen = new Map<string, AttemptFailure>();
  const done = (async () => {
    while (!stopped) {
      const description = await handle.describe().catch(() => undefined);
      for (const p of description?.raw.pendingActivities ?? []) {
        const failure = p.lastFailure;
        if (!failure || !p.activityId || !p.attempt) continue;
        const attempt = p.attempt - 1;
        const key = `${p.activityId}#${attempt}`;
        if (seen.has(key)) continue;
        const message = failure.message ?? '';
        seen.set(key, {
          activityId: p.activityId,
          activityType: p.activityType?.name ?? '?',
          host: /\bspark\d+\b/.exec(message)?.[0] ?? '?',
          attempt,
          type: failure.applicationFailureInfo?.type ?? '?',
          message,
        });
      }
      await sleep(150);
    }
    return [...seen.values()];
  })();
  return {
    stop: () => {
      stopped = true;
    },
    done,
  };
}

interface ActivitySummary {
  type: string;
  host: string;
  lastAttempt: number;
  outcome: 'completed' | 'failed' | 'timedOut' | 'pending';
}

function hostOfInput(event: HistoryEvent): string {
  const payload = event.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data;
  if (!payload) return '?';
  try {
    const input = JSON.parse(Buffer.from(payload).toString('utf8')) as {
      host?: { target?: { name?: string } };
    };
    return input.host?.target?.name ?? '?';
  } catch {
    return '?';
  }
}

type EventId = HistoryEvent['eventId'];

function eventKey(id: EventId): string | undefined {
  return id === null || id === undefined ? undefined : id.toString();
}

/** Activities of a run by activity id: type, host, the attempt that ran last and how it ended. */
function summarizeActivities(events: HistoryEvent[]): Map<string, ActivitySummary> {
  const byScheduledId = new Map<string | undefined, ActivitySummary>();
  const byActivityId = new Map<string, ActivitySummary>();
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const summary: ActivitySummary = {
        type: scheduled.activityType?.name ?? '?',
        host: hostOfInput(e),
        lastAttempt: 0,
        outcome: 'pending',
      };
      byScheduledId.set(eventKey(e.eventId), summary);
      if (scheduled.activityId) byActivityId.set(scheduled.activityId, summary);
      continue;
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const summary = byScheduledId.get(eventKey(started.scheduledEventId));
      if (summary) summary.lastAttempt = started.attempt ?? 0;
      continue;
    }
    const ended: [EventId, ActivitySummary['outcome']][] = [
      [e.activityTaskCompletedEventAttributes?.scheduledEventId, 'completed'],
      [e.activityTaskFailedEventAttributes?.scheduledEventId, 'failed'],
      [e.activityTaskTimedOutEventAttributes?.scheduledEventId, 'timedOut'],
    ];
    for (const [id, outcome] of ended) {
      const summary = id === undefined ? undefined : byScheduledId.get(eventKey(id));
      if (summary) summary.outcome = outcome;
    }
  }
  return byActivityId;
}
