// The postmortem as one self-contained HTML file: inline CSS and SVG, no script, nothing fetched. The
// Content-Security-Policy forbids any load, so a stray reference could not reach the network either.
import type { HostDiagnostics } from '../activities/types.js';
import { formatDuration } from '../config/duration.js';
import type { LoadSample, Postmortem, RollbackReport } from './model.js';
import {
  attemptLabel,
  companionCells,
  diagnosticsParts,
  headline,
  loadLine,
  offset,
  runFacts,
  stepCells,
  stepDuration,
} from './format.js';
import { firstLine, round1 } from './values.js';

const csp = "default-src 'none'; style-src 'unsafe-inline'";

const style = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; color: #1d1d1f; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
.outcome-succeeded { color: #2e7d32; } .outcome-failed, .outcome-refused { color: #c62828; }
.outcome-cancelled { color: #ef6c00; }
table { border-collapse: collapse; width: 100%; } td, th { border-bottom: 1px solid #eee; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } pre { background: #f6f6f6; padding: .6rem; overflow-x: auto; font-size: 12px; white-space: pre-wrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; } dt { font-weight: 600; }
svg text { font: 11px system-ui, sans-serif; } .muted { color: #777; }
details { margin: .4rem 0; } summary { cursor: pointer; }
`;

export function renderHtml(pm: Postmortem): string {
  const t0 = pm.startedAtMs;
  const body: string[] = [];
  body.push(
    `<h1>${esc(headline(pm)).replace(esc(pm.outcome), `<span class="outcome-${cls(pm.outcome)}">${esc(pm.outcome)}</span>`)}</h1>`,
  );
  const f = runFacts(pm);
  const facts: [string, string][] = [
    ['Workflow', `${pm.workflowId}${pm.runId ? ` (run ${pm.runId})` : ''}`],
    ['Started', f.started],
    ['Ended', f.ended ?? 'still running'],
    ['Total', f.total ?? ''],
    ['Trigger', f.trigger],
    ['Load', f.load],
    ['Load vs earlier runs', f.baseline],
  ];
  if (f.result !== undefined) facts.push(['Result', f.result]);
  if (pm.rollback) facts.push(...rollbackFacts(pm.rollback));
  body.push(
    `<dl class="facts">${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join('')}</dl>`,
  );

  if (pm.failure) {
    const f = pm.failure;
    body.push('<h2>Failure</h2>');
    body.push(
      `<p id="failure"><strong>${esc(f.type)}</strong>${f.step ? ` in step <code>${esc(f.step)}</code>` : ''}</p>`,
    );
    body.push(`<pre>${esc(f.message)}</pre>`);
    if (f.causes.length > 0)
      body.push(`<p>Caused by:</p><ul>${f.causes.map((c) => `<li>${esc(c)}</li>`).join('')}</ul>`);
    if (f.teardown)
      body.push(`<p>Teardown:</p><ul>${f.teardown.map((l) => `<li>${esc(l)}</li>`).join('')}</ul>`);
  }
  if (pm.rollback) body.push(...rollbackSection(pm.rollback));
  if (pm.cancelled) {
    body.push('<h2>Cancelled</h2>');
    body.push(`<p>Cancelled during <code>${esc(pm.cancelled.step ?? '?')}</code>.</p>`);
    body.push(`<ul>${pm.cancelled.teardown.map((l) => `<li>${esc(l)}</li>`).join('')}</ul>`);
  }

  body.push('<h2>Timeline</h2>', gantt(pm));
  body.push(
    '<table id="steps"><thead><tr><th>#</th><th>step</th><th>status</th><th>start</th><th>end</th><th>duration</th><th>attempts</th><th>error / detail</th></tr></thead><tbody>',
  );
  pm.steps.forEach((s, i) => {
    const c = stepCells(s, i, t0);
    body.push(
      `<tr data-step="${esc(s.name)}"><td>${c.number}</td><td>${esc(s.title)} <code>${esc(s.name)}</code></td><td class="outcome-${cls(s.outcome)}">${esc(s.outcome)}</td><td>${c.start}</td><td>${c.end}</td><td class="duration">${esc(c.duration)}</td><td>${esc(c.attempts)}</td><td>${esc(firstLine(s.error ?? s.detail ?? ''))}</td></tr>`,
    );
  });
  body.push('</tbody></table>');

  if (pm.companions) {
    body.push(
      '<h2>Companions</h2>',
      '<table id="companions"><thead><tr><th>companion</th><th>host</th><th>outcome</th><th>start</th><th>duration</th><th>probes</th><th>detail / error</th></tr></thead><tbody>',
    );
    for (const c of pm.companions) {
      const cells = companionCells(c, t0);
      body.push(
        `<tr data-companion="${esc(c.name)}"><td>${esc(c.name)}</td><td>${esc(c.host)}</td><td class="outcome-${cls(c.outcome)}">${esc(c.outcome)}</td><td>${cells.start}</td><td class="duration">${esc(cells.duration)}</td><td>${esc(cells.probes)}</td><td>${esc(firstLine(cells.said))}</td></tr>`,
      );
    }
    body.push('</tbody></table>');
  }

  body.push('<h2>Retries and errors</h2>');
  if (pm.attemptErrors.length === 0) body.push('<p>No activity attempt failed.</p>');
  else {
    body.push(
      '<table id="attempt-errors"><thead><tr><th>at</th><th>step</th><th>activity</th><th>host</th><th>attempt</th><th>error</th></tr></thead><tbody>',
    );
    for (const e of pm.attemptErrors) {
      body.push(
        `<tr><td>${offset(e.atMs, t0)}</td><td>${esc(e.step)}</td><td>${esc(e.activityType)}</td><td>${esc(e.host ?? '')}</td><td>${attemptLabel(e)}</td><td>${esc(e.error)}</td></tr>`,
      );
    }
    body.push('</tbody></table>');
  }

  if (pm.load) {
    body.push('<h2>Load progress</h2>', `<p id="load-last">${esc(loadLine(pm.load))}</p>`);
    body.push(loadCurve(pm.load.samples));
  }

  if (pm.failure && pm.failure.diagnostics.length > 0) {
    body.push('<h2>Diagnostics</h2>');
    for (const d of pm.failure.diagnostics) body.push(diagnosticsHtml(d));
  }

  if (pm.workers.length > 1 || pm.workflowTaskProblems.length > 0) {
    body.push('<h2>Workers</h2><ul>');
    for (const w of pm.workers)
      body.push(
        `<li><code>${esc(w.identity)}</code>: ${w.tasks} tasks, ${offset(w.firstSeenMs, t0)} to ${offset(w.lastSeenMs, t0)}</li>`,
      );
    for (const p of pm.workflowTaskProblems)
      body.push(`<li>${offset(p.atMs, t0)} workflow task ${esc(p.kind)}: ${esc(p.detail)}</li>`);
    body.push('</ul>');
  }
  if (pm.result?.smokeText !== undefined)
    body.push('<h2>Smoke test</h2>', `<blockquote>${esc(pm.result.smokeText)}</blockquote>`);
  if (pm.spec) {
    body.push('<h2>Effective spec (secrets redacted)</h2>');
    if (pm.spec.redactedFields.length > 0)
      body.push(`<p>Redacted: ${pm.spec.redactedFields.map((f) => `<code>${esc(f)}</code>`).join(', ')}</p>`);
    body.push(`<pre id="spec">${esc(JSON.stringify(pm.spec.effective, null, 2))}</pre>`);
  }
  if (pm.notes.length > 0)
    body.push(
      '<h2>Notes</h2>',
      `<ul>${pm.notes.map((n) => `<li>${esc(n.text)}${n.hostText !== undefined ? ` <code>${esc(n.hostText)}</code>` : ''}</li>`).join('')}</ul>`,
    );

  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(headline(pm))}</title>
<style>${style}</style></head>
<body>
${body.join('\n')}
</body></html>
`;
}

const barColour: Record<string, string> = {
  done: '#43a047',
  failed: '#e53935',
  cancelled: '#fb8c00',
  running: '#1e88e5',
};

// Gantt chart: one row per step on the run's time axis, its bar labelled with the duration. Time before an
// activity's last attempt started (the earlier attempts and their backoff) is hatched, so retries show.
function gantt(pm: Postmortem): string {
  const t0 = pm.startedAtMs;
  const end = Math.max(pm.endedAtMs ?? 0, ...pm.steps.map((s) => s.endedAtMs ?? s.startedAtMs ?? 0), t0 + 1);
  const span = end - t0;
  const labelW = 260;
  const chartW = 600;
  const rowH = 24;
  const top = 22;
  const x = (ms: number) => labelW + ((ms - t0) / span) * chartW;
  const height = top + pm.steps.length * rowH + 8;
  const parts: string[] = [];
  parts.push(
    '<defs><pattern id="retry-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffe0b2"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ef6c00" stroke-width="3"/></pattern></defs>',
  );
  for (const tick of ticks(span)) {
    const tx = x(t0 + tick);
    parts.push(
      `<line x1="${n(tx)}" y1="${top - 4}" x2="${n(tx)}" y2="${height - 8}" stroke="#e0e0e0"/><text x="${n(tx)}" y="${top - 8}" text-anchor="middle" fill="#777">${esc(formatDuration(tick))}</text>`,
    );
  }
  pm.steps.forEach((s, i) => {
    const y = top + i * rowH;
    const row: string[] = [];
    row.push(
      `<text class="step-label" x="4" y="${y + 16}">${esc(`${s.aftermath ? '↳ ' : ''}${s.title}`)}</text>`,
    );
    if (s.startedAtMs === undefined) {
      row.push(`<text class="step-status muted" x="${labelW + 4}" y="${y + 16}">${esc(s.outcome)}</text>`);
    } else {
      const x1 = x(s.startedAtMs);
      const x2 = Math.max(x1 + 2, x(s.endedAtMs ?? end));
      const colour = s.aftermath && s.outcome === 'done' ? '#8d6e63' : (barColour[s.outcome] ?? '#9e9e9e');
      row.push(
        `<rect class="step-bar" x="${n(x1)}" y="${y + 5}" width="${n(x2 - x1)}" height="${rowH - 10}" rx="2" fill="${colour}"><title>${esc(`${s.title}: ${s.outcome}, ${stepDuration(s)}`)}</title></rect>`,
      );
      for (const a of s.activities) {
        if (a.attempt <= 1 || a.startedAtMs === undefined || a.startedAtMs <= a.scheduledAtMs) continue;
        const rx1 = x(a.scheduledAtMs);
        row.push(
          `<rect class="retry" x="${n(rx1)}" y="${y + 5}" width="${n(Math.max(2, x(a.startedAtMs) - rx1))}" height="${rowH - 10}" fill="url(#retry-hatch)"><title>${esc(`${a.activityType}${a.host ? ` on ${a.host}` : ''}: ${a.attempt - 1} failed ${a.attempt - 1 === 1 ? 'attempt' : 'attempts'} before this one`)}</title></rect>`,
        );
      }
      const retries =
        s.retries > 0 ? `<tspan class="step-attempts" fill="#ef6c00"> · ${s.attempts} attempts</tspan>` : '';
      row.push(
        `<text x="${n(x2 + 4)}" y="${y + 16}"><tspan class="step-duration">${esc(stepDuration(s))}</tspan>${retries}</text>`,
      );
    }
    parts.push(
      `<g class="gantt-row" data-step="${esc(s.name)}" data-outcome="${esc(s.outcome)}"${s.durationMs !== undefined ? ` data-duration-ms="${s.durationMs}"` : ''}>${row.join('')}</g>`,
    );
  });
  const width = labelW + chartW + 130;
  return `<svg id="gantt" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="timeline of the deploy's steps">${parts.join('')}</svg>`;
}

// Shards loaded over time: the load curve from the health polls.
function loadCurve(samples: LoadSample[]): string {
  const withShards = samples.filter((s) => s.shardsTotal !== undefined && s.shardsTotal > 0);
  if (withShards.length === 0) return '<p class="muted">No shard progress was reported.</p>';
  const w = 600;
  const h = 140;
  const left = 40;
  const maxT = Math.max(1, ...samples.map((s) => s.atS));
  const px = (t: number) => left + (t / maxT) * w;
  const py = (p: number) => 10 + (1 - p) * (h - 30);
  const points = withShards.map(
    (s) => `${n(px(s.atS))},${n(py((s.shardsDone ?? 0) / (s.shardsTotal ?? 1)))}`,
  );
  const last = withShards.at(-1);
  return `<svg id="load-curve" width="${left + w + 80}" height="${h}" viewBox="0 0 ${left + w + 80} ${h}" role="img" aria-label="shards loaded over time">
<line x1="${left}" y1="${n(py(0))}" x2="${left + w}" y2="${n(py(0))}" stroke="#999"/><line x1="${left}" y1="${n(py(1))}" x2="${left + w}" y2="${n(py(1))}" stroke="#eee"/>
<text x="${left - 4}" y="${n(py(1)) + 4}" text-anchor="end">100%</text><text x="${left - 4}" y="${n(py(0)) + 4}" text-anchor="end">0</text>
<text x="${left + w}" y="${h - 4}" text-anchor="end">${esc(`${maxT.toFixed(1)} s`)}</text><text x="${left}" y="${h - 4}">0 s</text>
<polyline points="${points.join(' ')}" fill="none" stroke="#1e88e5" stroke-width="2"/>
${withShards.map((s) => `<circle cx="${n(px(s.atS))}" cy="${n(py((s.shardsDone ?? 0) / (s.shardsTotal ?? 1)))}" r="2.5" fill="#1e88e5"><title>${esc(`${s.atS.toFixed(1)} s: ${s.phase}, shard ${s.shardsDone ?? 0}/${s.shardsTotal ?? 0}`)}</title></circle>`).join('')}
${last ? `<text x="${n(px(last.atS)) + 6}" y="${n(py((last.shardsDone ?? 0) / (last.shardsTotal ?? 1))) + 4}">${esc(`${last.phase} ${last.shardsDone ?? 0}/${last.shardsTotal ?? 0}`)}</text>` : ''}
</svg>`;
}

// Plain text: the facts list escapes every value.
function rollbackFacts(r: RollbackReport): [string, string][] {
  const out: [string, string][] = [];
  const { rolledBackTo: back, of } = r;
  if (back) out.push(['Rolled back', `revision ${back.revision}${back.runId ? ` (run ${back.runId})` : ''}`]);
  if (of) {
    const cause = of.cause ? firstLine(of.cause) : '(no cause recorded)';
    const what = of.failedRun !== undefined ? `of ${of.failedRun}` : '';
    out.push([
      'Rollback',
      of.from !== undefined
        ? `${what}: revision ${of.from} failed: ${cause}; restores revision ${of.to}`
        : `${what ? `${what} ` : ''}to revision ${of.to}: ${cause}`,
    ]);
  }
  return out;
}

/** The bad revision against the one restored, as a table of the fields that differ. Every cell escaped. */
function rollbackSection(r: RollbackReport): string[] {
  if (!r.diff && r.diffUnavailable === undefined) return [];
  const out = ['<h2>Rollback: what changed</h2>'];
  if (!r.diff)
    return [...out, `<p id="rollback-diff-unavailable" class="muted">${esc(r.diffUnavailable ?? '')}</p>`];
  const { fromLabel, toLabel, changes, basis } = r.diff;
  if (basis === 'specs')
    out.push(
      '<p class="muted">The two runs’ specs; what the hosts reported about themselves (image IDs, kernels, weights) is in the cluster’s revisions: <code>liftoff revisions --diff</code>.</p>',
    );
  if (changes.length === 0) return [...out, '<p id="rollback-diff">No field differs.</p>'];
  out.push(
    `<table id="rollback-diff" data-basis="${esc(basis)}"><thead><tr><th>field</th><th>${esc(fromLabel)}</th><th>${esc(toLabel)}</th></tr></thead><tbody>`,
    ...changes.map(
      (c) =>
        `<tr${c.outsideSpec ? ' class="outside-spec"' : ''}><td><code>${esc(c.field)}</code></td><td>${esc(c.from)}</td><td>${esc(c.to)}</td></tr>`,
    ),
    '</tbody></table>',
  );
  return out;
}

function diagnosticsHtml(d: HostDiagnostics): string {
  return `<h3>${esc(d.host)}${d.reachable ? '' : ' (unreachable)'}</h3>${d.errors.length > 0 ? `<ul>${d.errors.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>` : ''}${diagnosticsParts(
    d,
  )
    .map(([title, text]) => `<details><summary>${esc(title)}</summary><pre>${esc(text)}</pre></details>`)
    .join('')}`;
}

/** Axis ticks at a round step giving 4 to 10 marks. */
function ticks(spanMs: number): number[] {
  const steps = [
    100, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000,
    1_800_000, 3_600_000,
  ];
  const step = steps.find((s) => spanMs / s <= 10) ?? 3_600_000;
  const out: number[] = [];
  for (let t = 0; t <= spanMs; t += step) out.push(t);
  return out;
}

function n(v: number): string {
  return String(round1(v));
}

function esc(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

function cls(text: string): string {
  return text.replace(/[^a-z]+/gi, '-');
}
