// Small text forms shared by the markdown and HTML renderers, so both say the same thing the same way.
import type { HostDiagnostics } from '../activities/types.js';
import { formatDuration } from '../config/duration.js';
import type {
  AttemptError,
  BaselineReport,
  CompanionReport,
  LoadReport,
  LoadSample,
  Postmortem,
  StepTimeline,
} from './model.js';

/** "2026-12-02 20:17:38Z": UTC, to the second, the same wherever the report is read. */
export function formatTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** "+3.9s" after the run started. */
export function offset(ms: number | undefined, t0: number): string {
  return ms === undefined ? '' : `+${((ms - t0) / 1000).toFixed(1)}s`;
}

export function stepDuration(s: StepTimeline): string {
  return s.durationMs === undefined ? '' : formatDuration(s.durationMs);
}

function progressText(sample: LoadSample | undefined): string {
  if (!sample) return 'no health poll answered';
  const shard =
    sample.shardsTotal !== undefined
      ? `, shard ${sample.shardsDone ?? 0}/${sample.shardsTotal}${sample.percent !== undefined ? ` (${sample.percent}%)` : ''}`
      : '';
  return `phase ${sample.phase}${shard}, ${sample.atS.toFixed(1)} s into the load`;
}

export function loadLine(load: LoadReport | undefined): string {
  if (!load) return 'the load did not start';
  const time =
    load.loadSeconds !== undefined ? `load time ${load.loadSeconds.toFixed(1)} s` : 'load time unknown';
  return `${time} over ${load.polls} health ${load.polls === 1 ? 'poll' : 'polls'}; last progress: ${progressText(load.last)}`;
}

function baselineLine(loadSeconds: number | undefined, b: BaselineReport): string {
  if (!b.available) return `baseline unavailable: ${b.reason}`;
  const median = `median ${b.medianSeconds.toFixed(1)} s over ${b.runs} earlier successful ${b.runs === 1 ? 'run' : 'runs'}`;
  if (loadSeconds === undefined || b.deltaSeconds === undefined)
    return `${median}; this run has no load time`;
  const pct =
    b.ratio !== undefined ? ` (${b.ratio >= 1 ? '+' : '−'}${Math.abs((b.ratio - 1) * 100).toFixed(0)}%)` : '';
  const direction = b.deltaSeconds >= 0 ? 'slower' : 'faster';
  return `${loadSeconds.toFixed(1)} s vs ${median}: ${Math.abs(b.deltaSeconds).toFixed(1)} s ${direction}${pct}`;
}

function triggerLine(pm: Postmortem): string {
  const t = pm.trigger;
  const parts = [t.kind];
  if (t.scheduleId) parts.push(`schedule ${t.scheduleId}`);
  if (t.parent)
    parts.push(
      `started as a child of ${t.parent.workflowId}${t.parent.runId ? ` (run ${t.parent.runId})` : ''}`,
    );
  if (t.relaunch) parts.push(`relaunch #${t.relaunch.n ?? '?'} by ${t.relaunch.supervisorWorkflowId}`);
  if (t.startedBy) parts.push(`started by ${t.startedBy}`);
  return parts.join(', ');
}

export function headline(pm: Postmortem): string {
  return `Postmortem: deploy of ${pm.cluster ?? pm.workflowId} — ${pm.outcome}`;
}

/**
 * The facts a report opens with, as text; each renderer lays them out its own way. `result` is the endpoint and
 * model a deploy that got that far serves, with the smoke test's speed.
 */
export function runFacts(pm: Postmortem) {
  const r = pm.result;
  return {
    started: formatTime(pm.startedAtMs),
    ended: pm.endedAtMs !== undefined ? formatTime(pm.endedAtMs) : undefined,
    total: pm.durationMs !== undefined ? formatDuration(pm.durationMs) : undefined,
    trigger: triggerLine(pm),
    load: loadLine(pm.load),
    baseline: baselineLine(pm.loadVsBaseline.loadSeconds, pm.loadVsBaseline.baseline),
    result: r?.endpoint
      ? `${r.model ?? ''} at ${r.endpoint}${r.tokensPerSecond !== undefined ? `, smoke test ${r.tokensPerSecond.toFixed(1)} tokens/s` : ''}`
      : undefined,
  };
}

/** The cells of a step's row in the timeline table (the `index`th step; ↳ marks the aftermath). */
export function stepCells(s: StepTimeline, index: number, t0: number) {
  return {
    number: s.aftermath ? '↳' : String(index + 1),
    start: offset(s.startedAtMs, t0),
    end: offset(s.endedAtMs, t0),
    duration: stepDuration(s),
    attempts:
      s.attempts === 0
        ? ''
        : `${s.attempts}${s.retries > 0 ? ` (${s.retries} ${s.retries === 1 ? 'retry' : 'retries'})` : ''}`,
  };
}

/** The cells of a companion's row: when it started, how long it took, its probes, and what it said (host text). */
export function companionCells(c: CompanionReport, t0: number) {
  return {
    start: offset(c.startedAtMs, t0),
    duration: c.durationMs === undefined ? '' : formatDuration(c.durationMs),
    probes: c.startedAtMs === undefined ? '' : String(c.probes),
    said: c.error ?? c.detail ?? '',
  };
}

/** "2 (last)": which attempt an error ended. */
export function attemptLabel(e: AttemptError): string {
  return `${e.attempt}${e.final ? ' (last)' : ''}`;
}

/** The outputs a host's diagnostics hold, titled, in the order a reader wants them; empty ones left out. */
export function diagnosticsParts(d: HostDiagnostics): [title: string, text: string][] {
  const parts: [string, string | undefined][] = [
    ['serve log tail', d.serveLogTail],
    ['ray status', d.rayStatus],
    ['nvidia-smi', d.nvidiaSmi],
    ['container log tail', d.containerLogTail],
  ];
  return parts.filter((p): p is [string, string] => p[1] !== undefined && p[1].trim() !== '');
}
