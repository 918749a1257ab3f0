// What one activity read on a host, handed to the next activity of the same workflow run inside this worker
// process, so that the next one need not read it again: verifyRayCluster's last look at the head (Ray's state,
// the launch marker) for launchServe. Only ever a shortcut: what is missing (another worker ran the earlier
// activity), already taken, or older than its bound is read from the host as before, so no result ever depends on
// this map. What is kept are a host's answers, parsed or bounded by their readers; no secret is among them.
import { Context } from '@temporalio/activity';
import type { AnsweredRead } from './prefetch.js';

/** What may be handed on, each kind with its own value type. */
export interface Handoffs {
  /** launchServe's pre-read (launchPreReads), answered: `ray status`, the marker, whether the marker's pid runs. */
  launchReads: readonly AnsweredRead[];
}

interface Entry {
  value: unknown;
  storedAtMs: number;
}

/** Nothing is kept longer than this, whatever a taker would accept. */
const maxAgeMs = 60_000;
const entries = new Map<string, Entry>();

/** The workflow run the current activity belongs to; undefined outside one (a direct call in a test or bench). */
function currentRun(): string | undefined {
  let execution: { workflowId: string; runId: string } | undefined;
  try {
    execution = Context.current().info.workflowExecution;
  } catch {
    return undefined;
  }
  return execution ? `${execution.workflowId}/${execution.runId}` : undefined;
}

function dropExpired(now: number): void {
  for (const [key, entry] of entries) if (now - entry.storedAtMs > maxAgeMs) entries.delete(key);
}

const keyOf = (run: string, kind: keyof Handoffs, key: readonly unknown[]): string =>
  JSON.stringify([run, kind, ...key]);

/** Keeps `value` for this run's next activity that asks for `kind` with the same key. */
export function handOn<K extends keyof Handoffs>(kind: K, key: readonly unknown[], value: Handoffs[K]): void {
  const run = currentRun();
  if (run === undefined) return;
  const now = Date.now();
  dropExpired(now);
  entries.set(keyOf(run, kind, key), { value, storedAtMs: now });
}

/** What an earlier activity of this run handed on, once, if it is at most `withinMs` old. */
export function takeHandoff<K extends keyof Handoffs>(
  kind: K,
  key: readonly unknown[],
  withinMs: number = maxAgeMs,
): Handoffs[K] | undefined {
  const run = currentRun();
  if (run === undefined) return undefined;
  const now = Date.now();
  dropExpired(now);
  const k = keyOf(run, kind, key);
  const entry = entries.get(k);
  entries.delete(k);
  if (!entry || now - entry.storedAtMs > withinMs) return undefined;
  return entry.value as Handoffs[K];
}
