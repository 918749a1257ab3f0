// The postmortem as Markdown: readable in a terminal, pasteable into an issue or a chat. Text from hosts and
// servers (errors, log lines, a smoke test's answer) is never markup here: multi-line outputs go in fenced blocks,
// everything else in code spans (shared/host-markup.ts), so a server cannot put a link or an image in the report.
import type { HostDiagnostics } from '../activities/types.js';
import { markdownHostText as hostText } from '../shared/host-markup.js';
import type { LoadSample, Postmortem, RollbackReport, StepTimeline } from './model.js';
import {
  attemptLabel,
  companionCells,
  diagnosticsParts,
  headline,
  loadLine,
  offset,
  runFacts,
  stepCells,
} from './format.js';
import { firstLine } from './values.js';

export function renderMarkdown(pm: Postmortem): string {
  const t0 = pm.startedAtMs;
  const out: string[] = [`# ${headline(pm)}`, ''];
  const facts = runFacts(pm);
  out.push(
    `- Workflow: \`${pm.workflowId}\`${pm.runId ? ` run \`${pm.runId}\`` : ''}`,
    `- Started: ${facts.started}${facts.ended !== undefined ? `; ended ${facts.ended}` : '; still running'}${facts.total !== undefined ? `; total ${facts.total}` : ''}`,
    `- Trigger: ${facts.trigger}`,
    `- Load: ${facts.load}`,
    `- Load vs earlier runs: ${facts.baseline}`,
  );
  if (facts.result !== undefined) out.push(`- Result: ${facts.result}`);
  if (pm.rollback) out.push(...rollbackFacts(pm.rollback));
  out.push('');

  if (pm.failure) {
    const f = pm.failure;
    out.push('## Failure', '');
    out.push(
      `**${f.type}**${f.step ? ` in step \`${f.step}\`` : ''}${f.nonRetryable ? ' (not retryable)' : ''}`,
      '',
    );
    out.push(fence(f.message, 'text'), '');
    if (f.causes.length > 0)
      out.push('Caused by:', ...f.causes.map((c) => `- ${hostText(firstLine(c))}`), '');
    if (f.teardown) out.push('Teardown:', ...f.teardown.map((l) => `- ${hostText(l)}`), '');
  }
  if (pm.rollback) out.push(...rollbackSection(pm.rollback));
  if (pm.cancelled) {
    out.push('## Cancelled', '', `Cancelled during \`${pm.cancelled.step ?? '?'}\`. Teardown:`);
    out.push(...pm.cancelled.teardown.map((l) => `- ${hostText(l)}`), '');
  }

  out.push('## Timeline', '');
  out.push(
    '| # | step | status | start | end | duration | attempts | |',
    '|---|---|---|---|---|---|---|---|',
  );
  const lastTime = Math.max(t0, ...pm.steps.map((s) => s.endedAtMs ?? s.startedAtMs ?? 0));
  const span = Math.max(1, (pm.endedAtMs ?? lastTime) - t0);
  pm.steps.forEach((s, i) => {
    const c = stepCells(s, i, t0);
    out.push(
      `| ${c.number} | ${s.title.replaceAll('|', '\\|')} (\`${s.name}\`) | ${s.outcome}${s.outcome === 'skipped' && s.detail ? ` (${hostText(s.detail, tableCell)})` : ''} | ${c.start} | ${c.end} | ${c.duration} | ${c.attempts} | ${bar(s, t0, span)} |`,
    );
  });
  out.push('');

  if (pm.companions) {
    out.push('## Companions', '');
    out.push(
      '| companion | host | outcome | start | duration | probes | detail / error |',
      '|---|---|---|---|---|---|---|',
    );
    for (const c of pm.companions) {
      const cells = companionCells(c, t0);
      out.push(
        `| ${hostText(c.name, tableCell)} | ${hostText(c.host, tableCell)} | ${c.outcome} | ${cells.start} | ${cells.duration} | ${cells.probes} | ${cells.said ? hostText(firstLine(cells.said), tableCell) : ''} |`,
      );
    }
    out.push('');
  }

  out.push('## Retries and errors', '');
  if (pm.attemptErrors.length === 0) {
    out.push('No activity attempt failed.', '');
  } else {
    out.push('| at | step | activity | host | attempt | error |', '|---|---|---|---|---|---|');
    for (const e of pm.attemptErrors) {
      out.push(
        `| ${offset(e.atMs, t0)} | ${e.step} | ${e.activityType} | ${e.host ?? ''} | ${attemptLabel(e)} | ${hostText(firstLine(e.error), tableCell)} |`,
      );
    }
    out.push('');
  }

  if (pm.load) {
    out.push('## Load progress', '');
    out.push(`${loadLine(pm.load)}.`, '');
    const samples = thinSamples(pm.load.samples, 20);
    if (samples.length > 0) {
      out.push('| t | phase | shards | health |', '|---|---|---|---|');
      for (const s of samples) {
        out.push(
          `| ${s.atS.toFixed(1)}s | ${s.phase} | ${s.shardsTotal !== undefined ? `${s.shardsDone ?? 0}/${s.shardsTotal}` : ''} | ${s.health ?? ''} |`,
        );
      }
      out.push('');
    }
  }

  if (pm.failure && pm.failure.diagnostics.length > 0) {
    out.push('## Diagnostics', '');
    for (const d of pm.failure.diagnostics) out.push(...diagnosticsSection(d));
  }

  if (pm.workflowTaskProblems.length > 0 || pm.workers.length > 1) {
    out.push('## Workers', '');
    for (const w of pm.workers) {
      out.push(
        `- ${hostText(w.identity)}: ${w.tasks} tasks, ${offset(w.firstSeenMs, t0)} to ${offset(w.lastSeenMs, t0)}`,
      );
    }
    for (const p of pm.workflowTaskProblems)
      out.push(`- ${offset(p.atMs, t0)} workflow task ${p.kind}: ${hostText(firstLine(p.detail))}`);
    out.push('');
  }

  if (pm.result?.smokeText !== undefined) {
    out.push('## Smoke test', '', `> ${hostText(firstLine(pm.result.smokeText))}`, '');
  }

  if (pm.spec) {
    out.push('## Effective spec (secrets redacted)', '');
    if (pm.spec.redactedFields.length > 0)
      out.push(`Redacted: ${pm.spec.redactedFields.map((f) => hostText(f)).join(', ')}`, '');
    out.push(fence(JSON.stringify(pm.spec.effective, null, 2), 'json'), '');
  }
  if (pm.notes.length > 0)
    out.push(
      '## Notes',
      '',
      ...pm.notes.map((n) => `- ${n.text}${n.hostText !== undefined ? ` ${hostText(n.hostText)}` : ''}`),
      '',
    );
  return out.join('\n');
}

// Run ids and the failed run's id come from the history, the cause from a server: all as host text.
function rollbackFacts(r: RollbackReport): string[] {
  const out: string[] = [];
  const { rolledBackTo: back, of } = r;
  if (back)
    out.push(`- Rolled back: revision ${back.revision}${back.runId ? ` (run ${hostText(back.runId)})` : ''}`);
  if (of) {
    const what = of.failedRun !== undefined ? `- Rollback of ${hostText(of.failedRun)}` : '- Rollback';
    const cause = of.cause ? hostText(firstLine(of.cause)) : '(no cause recorded)';
    out.push(
      of.from !== undefined
        ? `${what}: revision ${of.from} failed: ${cause}; restores revision ${of.to}`
        : `${what} to revision ${of.to}: ${cause}`,
    );
  }
  return out;
}

/** What differs between the bad revision and the one restored: a list, field by field. */
function rollbackSection(r: RollbackReport): string[] {
  if (!r.diff && r.diffUnavailable === undefined) return [];
  const out = ['## Rollback: what changed', ''];
  if (!r.diff) return [...out, r.diffUnavailable ?? '', ''];
  const { fromLabel, toLabel, changes, basis } = r.diff;
  if (basis === 'specs')
    out.push(
      'The two runs’ specs; what the hosts reported about themselves (image IDs, kernels, weights) is in the cluster’s revisions: `liftoff revisions --diff`.',
      '',
    );
  out.push(`From ${fromLabel} to ${toLabel}:`, '');
  if (changes.length === 0) out.push('- no field differs');
  for (const c of changes)
    out.push(
      `- ${hostText(c.field)}: ${hostText(c.from)} → ${hostText(c.to)}${c.outsideSpec ? ' (outside the spec)' : ''}`,
    );
  out.push('');
  return out;
}

function diagnosticsSection(d: HostDiagnostics): string[] {
  const out = [`### ${d.host}${d.reachable ? '' : ' (unreachable)'}`, ''];
  if (d.errors.length > 0) out.push(...d.errors.map((e) => `- error: ${hostText(firstLine(e))}`), '');
  for (const [title, text] of diagnosticsParts(d)) out.push(`${title}:`, '', fence(text, 'text'), '');
  return out;
}

/** At most `max` samples, evenly spread, always keeping the first and the last. */
function thinSamples(samples: LoadSample[], max: number): LoadSample[] {
  if (samples.length <= max) return samples;
  const out: LoadSample[] = [];
  for (let i = 0; i < max; i++) {
    const s = samples[Math.round((i * (samples.length - 1)) / (max - 1))];
    if (s && out.at(-1) !== s) out.push(s);
  }
  return out;
}

// A bar of up to 24 cells placed on the run's time axis: the text form of the HTML Gantt chart.
function bar(s: StepTimeline, t0: number, span: number): string {
  if (s.startedAtMs === undefined) return '';
  const width = 24;
  const from = Math.floor(((s.startedAtMs - t0) / span) * width);
  const to = Math.max(from + 1, Math.ceil((((s.endedAtMs ?? s.startedAtMs) - t0) / span) * width));
  return `\`${' '.repeat(from)}${(s.outcome === 'failed' ? 'x' : '█').repeat(Math.min(width, to) - from)}${' '.repeat(Math.max(0, width - to))}\``;
}

function fence(text: string, lang: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${lang}\n${text}\n${ticks}`;
}

const tableCell = { tableCell: true };
