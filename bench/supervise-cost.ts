// What supervising one healthy cluster costs the control host, shared by `npm run bench` and the supervise-faults
// e2e test: the CPU of the given processes in windows supervised (from one of the supervisor's reports to another,
// so every round in them is counted) and idle (the supervisor stopped, the cluster still serving), interleaved as
// supervised, idle, idle, supervised, and compared as rates, so the processes' own
// rate drifting over the measure (a GC, the dev server's housekeeping) weighs on both sides alike. Both rates
// are reported, and their difference per round, scaled to rounds per hour at the interval asked about. A
// difference below zero is the idle rate's noise, not a saving: it is reported as 0 and named as such.
import type { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/index.js';
import {
  stopSupervisionSignal,
  superviseWorkflowType,
  supervisionQuery,
  type SuperviseInput,
} from '../src/workflows/supervise-api.js';
import { processUsage } from './measure.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RoundCount {
  rounds: number;
  failedRounds: number;
}

/** What the measure needs of the supervisor: its round counters, and stopping and starting it. */
export interface SupervisorControl {
  /** The running supervisor's counters, once it serves and has passed a round. */
  rounds(): Promise<RoundCount>;
  /**
   * Resolves at its next report (supervise.reportEvery: healthy rounds come back together), seen in its history
   * length, which the server answers without the worker.
   */
  nextReport(): Promise<void>;
  /** Ends supervision, the cluster left serving; resolves once it ended. */
  pause(): Promise<void>;
  /** Starts it again with the input it had. */
  resume(): Promise<void>;
}

/** The supervisor `workflowId` through `client`: stopped by its signal, started again with its own input. */
export function supervisorControl(client: Client, workflowId: string): SupervisorControl {
  let restart: { taskQueue: string; input: SuperviseInput } | undefined;
  return {
    async rounds() {
      const handle = client.workflow.getHandle(workflowId);
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(500)) {
        const s = await client.connection
          .withDeadline(Date.now() + 5000, () => handle.query(supervisionQuery))
          .catch(() => undefined);
        if (s?.status === 'serving' && s.rounds >= 1)
          return { rounds: s.rounds, failedRounds: s.failedRounds };
      }
      throw new Error(`${workflowId} did not report a passed round within 60 s`);
    },
    async nextReport() {
      const handle = client.workflow.getHandle(workflowId);
      const length = async () => (await handle.describe()).historyLength;
      const from = await length();
      for (const deadline = Date.now() + 15 * 60_000; Date.now() < deadline; await sleep(1000)) {
        if ((await length()) > from) {
          // The report's workflow task done, so the query reads its rounds.
          await sleep(500);
          return;
        }
      }
      throw new Error(`${workflowId} reported nothing for 15 minutes`);
    },
    async pause() {
      const handle = client.workflow.getHandle(workflowId);
      const { runId, taskQueue } = await handle.describe();
      const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
      const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
      const input = await decodeFromPayloadsAtIndex<SuperviseInput>(
        client.options.loadedDataConverter,
        0,
        payloads,
        { type: 'workflow', namespace: client.options.namespace, workflowId },
      );
      restart = { taskQueue, input };
      await handle.signal(stopSupervisionSignal, { reason: 'supervision cost: an idle window' });
      await handle.result();
    },
    async resume() {
      if (!restart) throw new Error('resume before pause');
      await client.workflow.start(superviseWorkflowType, {
        taskQueue: restart.taskQueue,
        workflowId,
        args: [restart.input],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
    },
  };
}

export interface SupervisionCost {
  /** Passed rounds in the supervised windows. */
  rounds: number;
  /** The length of each of the two idle windows; each supervised one runs from a report to the first past it. */
  windowS: number;
  /** The supervised windows' length, in all. */
  supervisedSeconds: number;
  /** CPU-s each process used in the two supervised windows, and in the two idle ones. */
  supervisedS: Record<string, number>;
  idleS: Record<string, number>;
  /** The same as CPU-s per second. */
  supervisedRate: Record<string, number>;
  idleRate: Record<string, number>;
  /** (supervised - idle) / rounds, per process; 0 where the supervised windows used less than the idle ones. */
  perRoundS: Record<string, number>;
  /** The processes whose supervised CPU was below their idle CPU: what supervising costs them is below the noise. */
  belowNoise: string[];
}

/**
 * Measures supervision over four windows (supervised, idle, idle, supervised): the idle ones `windowMs` each, the
 * supervised ones from a report to the first report at least `windowMs` later. The supervisor
 * must be serving when called, and is serving again when this returns. Every round in the supervised windows
 * must pass (a failed round is a relaunch's cost, not a healthy cluster's).
 */
export async function supervisionCost(
  pids: Record<string, number>,
  supervisor: SupervisorControl,
  windowMs: number,
): Promise<SupervisionCost> {
  const keys = Object.keys(pids);
  const supervisedS = zero(keys);
  const idleS = zero(keys);
  let rounds = 0;
  let supervisedSeconds = 0;
  // From a report to the first one at least windowMs later: the rounds between are all reported, and counted.
  const supervised = async () => {
    await supervisor.nextReport();
    const first = await supervisor.rounds();
    const before = cpuOf(pids);
    const startedAt = Date.now();
    await sleep(windowMs);
    await supervisor.nextReport();
    const after = cpuOf(pids);
    supervisedSeconds += (Date.now() - startedAt) / 1000;
    const used = Object.fromEntries(keys.map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]));
    const last = await supervisor.rounds();
    const n = last.rounds - first.rounds;
    if (n <= 0 || last.failedRounds !== first.failedRounds)
      throw new Error(
        `supervision cost: ${n} rounds, ${last.failedRounds - first.failedRounds} failed; want passed rounds only`,
      );
    rounds += n;
    for (const k of keys) supervisedS[k] = (supervisedS[k] ?? 0) + (used[k] ?? 0);
  };
  await supervised();
  await supervisor.pause();
  const idle = await cpuOver(pids, 2 * windowMs);
  for (const k of keys) idleS[k] = idle[k] ?? 0;
  await supervisor.resume();
  await supervised();
  const idleSeconds = (2 * windowMs) / 1000;
  const idleRate = Object.fromEntries(keys.map((k) => [k, (idleS[k] ?? 0) / idleSeconds]));
  const supervisedRate = Object.fromEntries(keys.map((k) => [k, (supervisedS[k] ?? 0) / supervisedSeconds]));
  const perRoundS = Object.fromEntries(
    keys.map((k) => [
      k,
      Math.max(0, (((supervisedRate[k] ?? 0) - (idleRate[k] ?? 0)) * supervisedSeconds) / rounds),
    ]),
  );
  return {
    rounds,
    windowS: windowMs / 1000,
    supervisedSeconds,
    supervisedS,
    idleS,
    supervisedRate,
    idleRate,
    perRoundS,
    belowNoise: keys.filter((k) => (supervisedRate[k] ?? 0) < (idleRate[k] ?? 0)),
  };
}

/** CPU-s per hour of supervising one cluster at `intervalS`, summed over the processes; never below 0. */
export function cpuPerHour(cost: SupervisionCost, intervalS: number): number {
  return Object.values(cost.perRoundS).reduce((a, b) => a + b, 0) * (3600 / intervalS);
}

function zero(keys: string[]): Record<string, number> {
  return Object.fromEntries(keys.map((k) => [k, 0]));
}

async function cpuOver(pids: Record<string, number>, ms: number): Promise<Record<string, number>> {
  const before = cpuOf(pids);
  await sleep(ms);
  const after = cpuOf(pids);
  return Object.fromEntries(Object.keys(pids).map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]));
}

function cpuOf(pids: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, processUsage(pid).cpuSeconds]));
}
