// What supervising one healthy cluster costs the control host, shared by `npm run bench` and the supervise-faults
// e2e test: the CPU of the given processes over a window of passed rounds, less what they spend idle (the worker
// polls Temporal doing nothing), per round, scaled to rounds per hour at the interval asked about.
import { processUsage } from './measure.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RoundCount {
  rounds: number;
  failedRounds: number;
}

/** CPU-s per second each process spends over `ms` (call before anything is deployed or supervised). */
export async function idleCpuRates(
  pids: Record<string, number>,
  ms: number,
): Promise<Record<string, number>> {
  const before = cpuOf(pids);
  await sleep(ms);
  const after = cpuOf(pids);
  return Object.fromEntries(
    Object.keys(pids).map((k) => [k, ((after[k] ?? 0) - (before[k] ?? 0)) / (ms / 1000)]),
  );
}

export interface SupervisionCost {
  rounds: number;
  windowS: number;
  /** CPU-s each process used in the window. */
  usedS: Record<string, number>;
  /** Of which idle: the idle rate times the window. */
  idleS: Record<string, number>;
  /** (used - idle) / rounds, per process. */
  perRoundS: Record<string, number>;
}

/**
 * Measures `ms` of supervision: `rounds` reads the supervisor's round counters at both ends; every round in the
 * window must pass (a failed round is a relaunch's cost, not a healthy cluster's).
 */
export async function supervisionCost(
  pids: Record<string, number>,
  idleRates: Record<string, number>,
  ms: number,
  rounds: () => Promise<RoundCount>,
): Promise<SupervisionCost> {
  const first = await rounds();
  const before = cpuOf(pids);
  await sleep(ms);
  const after = cpuOf(pids);
  const last = await rounds();
  const n = last.rounds - first.rounds;
  if (n <= 0 || last.failedRounds !== first.failedRounds)
    throw new Error(
      `supervision cost: ${n} rounds, ${last.failedRounds - first.failedRounds} failed; want passed rounds only`,
    );
  const keys = Object.keys(pids);
  const usedS = Object.fromEntries(keys.map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]));
  const idleS = Object.fromEntries(keys.map((k) => [k, (idleRates[k] ?? 0) * (ms / 1000)]));
  const perRoundS = Object.fromEntries(keys.map((k) => [k, ((usedS[k] ?? 0) - (idleS[k] ?? 0)) / n]));
  return { rounds: n, windowS: ms / 1000, usedS, idleS, perRoundS };
}

/** CPU-s per hour of supervising one cluster at `intervalS`, summed over the processes. */
export function cpuPerHour(cost: SupervisionCost, intervalS: number): number {
  return Object.values(cost.perRoundS).reduce((a, b) => a + b, 0) * (3600 / intervalS);
}

function cpuOf(pids: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, processUsage(pid).cpuSeconds]));
}
