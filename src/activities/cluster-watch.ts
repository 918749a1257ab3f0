// A healthy cluster's probe rounds, run by the worker between two reports to Temporal (supervise.reportEvery):
// the same rounds as probeServingCluster's, every supervise.interval, over the same kept connections. The first
// round that is not wholly healthy (a host that did not answer, a failed check, a companion's failed probe) ends
// the watch at once and goes back whole, for the workflow to judge as it judges every round; so does the last of
// `maxRounds` healthy ones. A healthy round in between is only counted: what the workflow would do with it is
// nothing but count it. That spares the server a workflow task, a marker and a timer a round.
import { Context } from '@temporalio/activity';
import {
  probeServingCluster,
  type CompanionRoundProbe,
  type HostProbe,
  type ProbeServingClusterInput,
} from './cluster-probe.js';
import { heartbeat } from './heartbeat.js';

export interface WatchServingClusterInput extends ProbeServingClusterInput {
  intervalMs: number;
  /** Healthy rounds to run before reporting (at least 1). */
  maxRounds: number;
}

/** One round as the worker saw it, for the workflow to judge (supervise-round.ts). */
export interface WatchedRound {
  atMs: number;
  durationMs: number;
  hosts: HostProbe[];
  companions?: CompanionRoundProbe[];
}

/** At most this many healthy rounds' durations go back with a watch (a reportEvery of many rounds stays small). */
export const healthyDurationsKept = 100;

export interface WatchOutcome {
  /** Healthy rounds run, the last one included. */
  healthyRounds: number;
  /** Checks those rounds made, in all. */
  healthyChecks: number;
  /** How long each healthy round took, oldest first; the last healthyDurationsKept of them. */
  healthyDurationsMs: number[];
  /** The last healthy round, whole. */
  lastHealthy?: WatchedRound;
  /** The round that was not wholly healthy and ended the watch; unset when maxRounds healthy rounds did. */
  ended?: WatchedRound;
}

/** Every host answered with every check passed, and every companion probed passed. */
export function whollyHealthy(round: Pick<WatchedRound, 'hosts' | 'companions'>): boolean {
  return (
    round.hosts.every((h) => h.ok && h.checks.every((c) => c.ok)) &&
    (round.companions ?? []).every((c) => 'ok' in c && c.ok)
  );
}

export async function watchServingCluster(input: WatchServingClusterInput): Promise<WatchOutcome> {
  const { intervalMs, maxRounds, ...probeInput } = input;
  let healthyRounds = 0;
  let healthyChecks = 0;
  let lastHealthy: WatchedRound | undefined;
  const healthyDurationsMs: number[] = [];
  const sofar = (): Omit<WatchOutcome, 'ended'> => ({
    healthyRounds,
    healthyChecks,
    healthyDurationsMs,
    ...(lastHealthy ? { lastHealthy } : {}),
  });
  for (;;) {
    const atMs = Date.now();
    const result = await probeServingCluster(probeInput);
    const round: WatchedRound = { atMs, durationMs: Date.now() - atMs, ...result };
    if (!whollyHealthy(round)) return { ...sofar(), ended: round };
    healthyRounds += 1;
    healthyChecks += round.hosts.reduce((n, h) => n + (h.ok ? h.checks.length : 0), 0);
    lastHealthy = round;
    healthyDurationsMs.push(round.durationMs);
    if (healthyDurationsMs.length > healthyDurationsKept) healthyDurationsMs.shift();
    // Liveness only (the SDK sends at most one a throttle interval); the counts go back with the result.
    heartbeat({ healthyRounds, lastAtMs: atMs });
    if (healthyRounds >= maxRounds) return sofar();
    // Rejects when the workflow cancels the watch (a stop), delivered with a heartbeat's answer.
    await Context.current().sleep(Math.max(0, intervalMs - round.durationMs));
  }
}
