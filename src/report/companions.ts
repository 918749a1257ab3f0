// The companions (spec.companions) as the deploy brought them up, from the history alone: each one's start
// (startCompanion) and readiness probes (probeCompanion), matched by the companion's name in their inputs. A
// companion that failed names its error: its start's failure, else what the workflow recorded for it in the failed
// run's progress (its own error), else its last probe's answer. Host text stays text; the renderers escape it.
import { isRecord, payloadValues } from './events.js';
import type { RunRecord } from './fold.js';
import type { CompanionReport, Outcome } from './model.js';
import { dropUndefined, numberOr, stringOr } from './values.js';

/** Bounded: a probe's answer or an error is host text, and the report shows its first line. */
const maxText = 2048;
const bounded = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : text.slice(0, maxText);

interface Named {
  name: string;
  host: string;
}

/** The spec's companions (name and host), as given: the input may be any JSON. */
function specCompanions(input: unknown): Named[] {
  const list = isRecord(input) && Array.isArray(input.companions) ? (input.companions as unknown[]) : [];
  return list.flatMap((c) =>
    isRecord(c) && typeof c.name === 'string' && typeof c.host === 'string'
      ? [{ name: c.name, host: c.host }]
      : [],
  );
}

/** What the failed workflow recorded for each companion (DeployProgress.companions in its failure's details). */
function recordedErrors(close: RunRecord['close']): Map<string, string> {
  const failure = close?.kind === 'workflowExecutionFailed' ? close.attrs.failure : undefined;
  const info =
    isRecord(failure) && isRecord(failure.applicationFailureInfo) ? failure.applicationFailureInfo : {};
  const [details] = payloadValues(info.details);
  const progress = isRecord(details) && isRecord(details.progress) ? details.progress : {};
  const list = Array.isArray(progress.companions) ? (progress.companions as unknown[]) : [];
  const out = new Map<string, string>();
  for (const c of list)
    if (isRecord(c) && c.status === 'failed' && typeof c.name === 'string' && typeof c.detail === 'string')
      out.set(c.name, c.detail);
  return out;
}

/** One report per companion, in the order the deploy started them, then those it never reached. */
export function companionReports(
  record: RunRecord,
  outcome: Outcome,
  failureMessage: string | undefined,
): CompanionReport[] | undefined {
  const tracks = record.activities.filter((t) => t.step === 'startCompanions' && t.companion !== undefined);
  const declared = specCompanions(record.input);
  if (tracks.length === 0 && declared.length === 0) return undefined;
  const names = [...new Set([...tracks.map((t) => t.companion ?? ''), ...declared.map((c) => c.name)])];
  const recorded = recordedErrors(record.close);
  return names.map((name): CompanionReport => {
    const own = tracks.filter((t) => t.companion === name);
    const start = own.filter((t) => t.run.activityType === 'startCompanion').at(-1);
    const probes = own.filter((t) => t.run.activityType === 'probeCompanion');
    const host = start?.run.host ?? declared.find((c) => c.name === name)?.host ?? '?';
    if (!start) return { name, host, outcome: 'not started', probes: 0 };
    const startedAtMs = start.run.scheduledAtMs;
    const results = probes.map((p) => (isRecord(p.result) ? p.result : {}));
    const readyAt = results.findIndex((r) => r.ok === true);
    const base = { name, host, startedAtMs, probes: probes.length };
    if (readyAt !== -1) {
      const endedAtMs = probes[readyAt]?.run.endedAtMs;
      return dropUndefined({
        ...base,
        outcome: 'ready' as const,
        durationMs: endedAtMs !== undefined ? endedAtMs - startedAtMs : undefined,
        detail: bounded(stringOr(results[readyAt]?.detail)),
        latencyMs: numberOr(results[readyAt]?.latencyMs),
      });
    }
    const lastProbe = results.at(-1);
    const probeError = stringOr(lastProbe?.error);
    const failedStart = start.run.outcome === 'failed' || start.run.outcome === 'timed out';
    const stillGoing = outcome === 'running' && !failedStart;
    const ended = [start, ...probes].flatMap((t) => (t.run.endedAtMs !== undefined ? [t.run.endedAtMs] : []));
    return dropUndefined({
      ...base,
      outcome: stillGoing ? ('starting' as const) : ('failed' as const),
      durationMs: ended.length > 0 ? Math.max(...ended) - startedAtMs : undefined,
      detail: bounded(probeError),
      error: stillGoing
        ? undefined
        : bounded(
            (failedStart ? start.run.error : undefined) ??
              recorded.get(name) ??
              probeError ??
              failureMessage ??
              'it did not become ready',
          ),
    });
  });
}
