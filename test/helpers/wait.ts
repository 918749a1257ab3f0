// Polling until something holds, for tests that watch a real server, worker or cluster change state.
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  /** Time between two probes. Default 200 ms. */
  everyMs?: number;
  /** Added to the timeout's message: what shows why it did not happen (e.g. the workers' last output). */
  detail?: () => string;
}

/** Probes until `probe` gives a value other than undefined, and returns it; throws once `timeoutMs` is past. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number,
  { everyMs = 200, detail }: WaitOptions = {},
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) {
      const why = detail?.();
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why ? `\n${why}` : ''}`);
    }
    await sleep(everyMs);
  }
}

/** Resolves once `check` holds; a check that throws has not held yet. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  await waitFor(what, async () => ((await check().catch(() => false)) ? true : undefined), timeoutMs);
}

/**
 * Whether `condition` holds within `timeoutMs`, probed every `everyMs`: for a test that asserts on the answer
 * itself (with its own message) or reads it as one part of a larger condition.
 */
export async function holdsWithin(
  condition: () => boolean,
  timeoutMs: number,
  everyMs = 50,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await sleep(everyMs);
  }
  return condition();
}
