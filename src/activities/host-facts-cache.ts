// Preflight's agreement facts, handed from one activity to the next inside this worker process: a host's
// preflightHost reads them in its own round trip (one remote command per host for the whole step), and
// checkHostsAgree, which the workflow schedules once every preflightHost ended, takes them instead of reading the
// host again. Only ever a shortcut: facts that are missing (another worker ran the preflight), already taken or
// older than maxAgeMs are read from the host as before, so the comparison never depends on this cache.
// The facts are the host's own answers, already parsed and bounded; no secret is ever among them.
import { Context } from '@temporalio/activity';
import type { HostFacts } from '../parsers/agreement-facts.js';
import type { HostReadInput } from '../host-commands/agreement.js';

/** Long enough for the workflow to schedule the comparison; short enough that no stale read is ever compared. */
const maxAgeMs = 60_000;

interface Entry {
  facts: HostFacts;
  storedAtMs: number;
}

const entries = new Map<string, Entry>();

/** The run this activity belongs to, or undefined outside an activity (a direct call in a test or bench). */
function runOf(): string | undefined {
  let execution: { workflowId: string; runId: string } | undefined;
  try {
    execution = Context.current().info.workflowExecution;
  } catch {
    return undefined;
  }
  return execution ? `${execution.workflowId}/${execution.runId}` : undefined;
}

// The read's whole input is in the key: a comparison asking for other facts (another image, hashing on) misses.
const keyOf = (run: string, read: HostReadInput): string =>
  JSON.stringify([
    run,
    read.host,
    read.image,
    read.modelPath,
    read.hashWeights,
    read.rayHead?.ip ?? null,
    read.rayHead?.port ?? null,
  ]);

function dropExpired(now: number): void {
  for (const [key, entry] of entries) if (now - entry.storedAtMs > maxAgeMs) entries.delete(key);
}

/** Keeps a host's facts for this workflow run's comparison. */
export function keepHostFacts(read: HostReadInput, facts: HostFacts): void {
  const run = runOf();
  if (run === undefined) return;
  const now = Date.now();
  dropExpired(now);
  entries.set(keyOf(run, read), { facts, storedAtMs: now });
}

/** The facts this run's preflight read for the host, once; undefined when the host must be read. */
export function takeHostFacts(read: HostReadInput): HostFacts | undefined {
  const run = runOf();
  if (run === undefined) return undefined;
  dropExpired(Date.now());
  const key = keyOf(run, read);
  const entry = entries.get(key);
  entries.delete(key);
  return entry?.facts;
}
