// The errors the run's activity attempts ended with, as far as the history keeps them: the last attempt's, and
// the one before it, which Temporal stores with the last start.
import type { ActivityTrack } from './fold.js';
import type { AttemptError } from './model.js';

export function attemptErrors(activities: readonly ActivityTrack[]): AttemptError[] {
  const out: AttemptError[] = [];
  for (const { run, step } of activities) {
    const common = { step, activityType: run.activityType, host: run.host };
    if (run.previousAttemptError !== undefined) {
      out.push({
        ...common,
        attempt: run.attempt - 1,
        error: run.previousAttemptError,
        atMs: run.startedAtMs,
        final: false,
      });
    }
    if (run.error !== undefined) {
      out.push({ ...common, attempt: run.attempt, error: run.error, atMs: run.endedAtMs, final: true });
    }
  }
  return out;
}
