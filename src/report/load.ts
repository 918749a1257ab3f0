// The load curve: the health polls' results (phase, shards loaded, health) over time, and the load time.
import { isRecord } from './events.js';
import type { ActivityTrack } from './fold.js';
import type { LoadReport, LoadSample, ResultReport } from './model.js';
import { dropUndefined, numberOr, round1 } from './values.js';

export function loadReport(
  activities: readonly ActivityTrack[],
  searchAttrs: Record<string, unknown>,
  result: ResultReport | undefined,
): LoadReport | undefined {
  const polls = activities.filter((t) => t.run.activityType === 'checkServeHealth');
  const first = polls[0];
  if (!first) return undefined;
  const startedAtMs = first.run.scheduledAtMs;
  const samples: LoadSample[] = [];
  let phase = 'starting';
  let shard: { done?: number; total?: number; percent?: number } = {};
  for (const poll of polls) {
    if (poll.run.endedAtMs === undefined || !isRecord(poll.result)) continue;
    const r = poll.result;
    const summary = isRecord(r.summary) ? r.summary : undefined;
    // A poll that saw no new phase or shard line keeps the last one seen.
    if (summary && typeof summary.phase === 'string') phase = summary.phase;
    if (summary && isRecord(summary.shard)) {
      shard = {
        done: numberOr(summary.shard.done),
        total: numberOr(summary.shard.total),
        percent: numberOr(summary.shard.percent),
      };
    }
    const ready = r.health === 'ok' && r.modelListed === true;
    samples.push(
      dropUndefined({
        atS: round1((poll.run.endedAtMs - startedAtMs) / 1000),
        phase: ready ? 'ready' : phase,
        shardsDone: shard.done,
        shardsTotal: shard.total,
        percent: shard.percent,
        health: typeof r.health === 'string' ? r.health : undefined,
      }),
    );
  }
  const endedAtMs = polls.at(-1)?.run.endedAtMs;
  const recorded = numberOr(searchAttrs.LiftoffLoadSeconds) ?? result?.loadSeconds;
  return dropUndefined({
    startedAtMs,
    endedAtMs,
    loadSeconds: recorded ?? (endedAtMs !== undefined ? round1((endedAtMs - startedAtMs) / 1000) : undefined),
    polls: polls.length,
    samples,
    last: samples.at(-1),
  });
}
