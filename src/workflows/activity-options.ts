// The numbers behind each retry profile of steps.ts, and the one helper that fits attempts to a budget of the
// spec. Which failures are final is not listed here: activities raise ApplicationFailures that carry their own
// nonRetryable flag (src/activities/ssh-context.ts converts the SSH layer's errors), so a refused login or an
// unknown host key is never retried whatever the profile.
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import type { DeploySpec } from '../config/schema.js';
import { parseDuration } from '../config/duration.js';
import { retryProfileOf, type aftermathSteps, type RetryProfileName, type StepName } from './steps.js';

export type Activities = typeof activities;
export type ActivityName = keyof Activities;
export type AftermathName = (typeof aftermathSteps)[number]['name'];

// Every activity heartbeats while it works (see activities/heartbeat.ts): a worker that dies mid-activity is
// noticed within this window and the activity is retried on another worker.
export const heartbeatTimeout = '10s';

type Backoff = { initialInterval: string; backoffCoefficient: number; maximumInterval: string };

/**
 * `options` with as many attempts as fit in `budget` (a duration of the spec, already validated) under their
 * backoff, each expected to take `attempt`: e.g. "wait for GPU memory to free" is bounded by gpu.clearTimeout.
 * Always one attempt at least, and never more than 1000.
 */
export function budgeted(
  budget: string,
  attempt: string,
  options: Omit<ActivityOptions, 'retry'> & { retry: Backoff },
): ActivityOptions {
  const ms = (d: string): number => parseDuration(d) ?? 0;
  const { initialInterval, backoffCoefficient, maximumInterval } = options.retry;
  const [budgetMs, attemptMs, maxMs] = [ms(budget), ms(attempt), ms(maximumInterval)];
  let elapsed = attemptMs;
  let interval = ms(initialInterval);
  let attempts = 1;
  while (elapsed + interval + attemptMs <= budgetMs && attempts < 1000) {
    elapsed += interval + attemptMs;
    interval = Math.min(interval * backoffCoefficient, maxMs);
    attempts += 1;
  }
  return { ...options, retry: { ...options.retry, maximumAttempts: attempts } };
}

/**
 * Calls to Temporal itself (who holds the hosts, a handover or a `down` that waits for a cluster's runs to end: a
 * cancelled deploy tears down first). Also `down`'s, which has no spec to fit a profile to.
 */
export const temporalCalls: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout,
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 10 },
};

export function retryProfiles(spec: DeploySpec): Record<RetryProfileName, ActivityOptions> {
  return {
    // Short host commands: a few retries ride out an sshd restart or a dropped connection.
    hostStep: {
      startToCloseTimeout: '2 minutes',
      heartbeatTimeout,
      retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 4 },
    },
    // Hashing reads every byte of the weights (over 100 GB for a 122B model); a plain read takes seconds.
    agreement: {
      startToCloseTimeout: spec.preflight.hashWeights ? '3 hours' : '2 minutes',
      heartbeatTimeout,
      retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 3 },
    },
    gpuClear: budgeted(spec.gpu.clearTimeout, '1s', {
      startToCloseTimeout: '30s',
      heartbeatTimeout,
      retry: { initialInterval: '2s', backoffCoefficient: 1.5, maximumInterval: '10s' },
    }),
    rayCheck: budgeted(spec.ray.verifyTimeout, '10s', {
      startToCloseTimeout: '40s',
      heartbeatTimeout: '20s',
      retry: { initialInterval: '1s', backoffCoefficient: 1.5, maximumInterval: '5s' },
    }),
    // Idempotent (the marker on the head), so a retry never starts a second server.
    launch: {
      startToCloseTimeout: '2 minutes',
      heartbeatTimeout,
      retry: { initialInterval: '2s', maximumAttempts: 4 },
    },
    // One poll of the loading server: short and retried once. A host that stays unreachable is counted against
    // serve.hostUnreachableTimeout by the workflow, not by retries.
    poll: {
      startToCloseTimeout: '45s',
      heartbeatTimeout,
      retry: { initialInterval: '1s', maximumAttempts: 2 },
    },
    // The other hosts during the load: one try per poll; the workflow keeps the unreachable clock.
    workerPoll: { startToCloseTimeout: '30s', heartbeatTimeout, retry: { maximumAttempts: 1 } },
    temporal: temporalCalls,
  };
}

/**
 * The activities of a step, under the retry profile steps.ts gives them: `acts('verifyGpusClear').verifyGpusClear(…)`.
 * A step that runs more than one activity names the one wanted.
 */
export type StepActivities = (step: StepName | AftermathName, activity?: ActivityName) => Activities;

export function stepActivities(spec: DeploySpec): StepActivities {
  const profiles = retryProfiles(spec);
  return (step, activity) => proxyActivities<Activities>(profiles[retryProfileOf(step, activity)]);
}
