// How many attempts fit in a time budget under exponential backoff: steps like "wait for GPU memory to
// free" are bounded by a duration in the spec, and the retry policy is derived from it.
export interface BackoffPolicy {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  /** Expected duration of one attempt. */
  attemptMs: number;
}

export function attemptsWithin(budgetMs: number, p: BackoffPolicy): number {
  let elapsed = p.attemptMs;
  let interval = p.initialIntervalMs;
  let attempts = 1;
  while (elapsed + interval + p.attemptMs <= budgetMs && attempts < 1000) {
    elapsed += interval + p.attemptMs;
    interval = Math.min(interval * p.backoffCoefficient, p.maximumIntervalMs);
    attempts += 1;
  }
  return attempts;
}
