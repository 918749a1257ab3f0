// The `supervise` section of the spec: how the supervising workflow probes a serving cluster, when it calls the
// cluster lost, and how many whole-cluster relaunches it may make. Pure (workflows validate with it).
import { z } from 'zod';
import { boundedDuration, parseDuration, specTimeout } from './duration.js';
import { day, hour, minute, second } from './limits.js';

/** The completion probe's timeout when the spec sets none: 10 s, or the interval when that is shorter. */
const defaultProbeTimeoutMs = 10_000;

export const superviseSchema = z
  .strictObject({
    /** Start the supervising workflow after a successful deploy (`liftoff deploy --no-supervise` overrides). */
    enabled: z.boolean().default(true),
    /** Time between probe rounds. */
    interval: boundedDuration({ minMs: second, maxMs: day, maxText: '24h', example: '30s' }).default('30s'),
    /** Consecutive failed rounds after which the cluster is lost. */
    failureThreshold: z
      .number()
      .int('expected a whole number of rounds')
      .min(1, 'expected at least 1 round')
      .max(100, 'expected at most 100 rounds; raise supervise.interval instead')
      .default(3),
    /** Relaunches allowed within `window`; past them the cluster is left degraded. 0: never relaunch. */
    maxRelaunches: z
      .number()
      .int('expected a whole number of relaunches')
      .min(0, 'expected 0 or more (0: never relaunch, only report)')
      .max(20, 'expected at most 20: a cluster that needs more relaunches than that needs a person')
      .default(3),
    /** The window the relaunch budget counts over. */
    window: specTimeout('1h', minute).default('1h'),
    /** Wait before the second relaunch in the window; doubles for each further one. */
    backoff: specTimeout('1m', second).default('1m'),
    /** Serving this long after a relaunch ends a crash loop: the next loss waits no backoff (the budget still counts). */
    stableAfter: specTimeout('10m', second).default('10m'),
    /**
     * How often a healthy cluster's rounds are reported to Temporal. Between reports the worker runs them itself,
     * in one activity; a round that is not wholly healthy is reported at once, so detection is unchanged. Each
     * report is a few workflow events and a round-trip to the server, so this sets what supervision costs the
     * control host. Set it to the interval to report every round.
     */
    reportEvery: specTimeout('10m', second).default('10m'),
    /** How long the one-token completion probe may take; default 10s, or the interval when shorter. */
    probeTimeout: boundedDuration({ minMs: second, maxMs: hour, maxText: '1h', example: '10s' }).optional(),
  })
  .superRefine((s, ctx) => {
    // A field that is not a duration (or not set) reports itself, if at all; it fails neither comparison.
    if ((parseDuration(s.probeTimeout ?? '') ?? 0) > (parseDuration(s.interval) ?? Infinity)) {
      ctx.addIssue({
        code: 'custom',
        path: ['probeTimeout'],
        message: `${s.probeTimeout} is longer than supervise.interval ${s.interval}: a round would outlast the interval; lower probeTimeout or raise interval`,
      });
    }
    if ((parseDuration(s.backoff) ?? 0) > (parseDuration(s.window) ?? Infinity)) {
      ctx.addIssue({
        code: 'custom',
        path: ['backoff'],
        message: `${s.backoff} is longer than supervise.window ${s.window}: each relaunch would have left the window before the next, so the budget of supervise.maxRelaunches would never be spent and a crash loop would relaunch for ever; lower backoff or raise window`,
      });
    }
  })
  // Parsed from nothing, so an absent section takes each field's default.
  .prefault({});

export type SuperviseSpec = z.infer<typeof superviseSchema>;

export function probeTimeoutMs(s: SuperviseSpec): number {
  const interval = parseDuration(s.interval) ?? 30_000;
  const set = s.probeTimeout === undefined ? undefined : parseDuration(s.probeTimeout);
  return set ?? Math.min(defaultProbeTimeoutMs, interval);
}

/**
 * Healthy rounds the worker runs between two reports (reportEvery over interval, at least 1). At 1 every round is
 * its own local activity, as before reportEvery.
 */
export function healthyRoundsPerReport(s: SuperviseSpec): number {
  const interval = parseDuration(s.interval) ?? 30_000;
  const every = parseDuration(s.reportEvery) ?? 600_000;
  return Math.max(1, Math.floor(every / interval));
}
