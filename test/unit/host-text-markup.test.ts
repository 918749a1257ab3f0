// A server's error body in the places that render markup (issue 26, item 4): the Slack text of a notification,
// the supervisor's current details in the Temporal UI, and the Markdown postmortem of a failed deploy. None of
// them may turn it into a mention, a link or an image.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildPostmortem, renderMarkdown } from '../../src/report/index.js';
import { markdownHostText } from '../../src/shared/host-markup.js';
import { notifyText } from '../../src/workflows/notify.js';
import { detailsMarkdown, initialState } from '../../src/workflows/supervise-state.js';

// What a hostile vLLM (or anything on a host) can put in an error body.
const hostile =
  'HTTP 500: <!channel> see <https://evil.example/x|the runbook> & ![b](http://evil.example/beacon.png) ' +
  '[a](http://evil.example/link) `` | <img src=http://evil.example/i>\nsecond line ![c](http://evil.example/2)';

/** Slack text with its code spans and blocks taken out: what Slack would read as markup. */
function slackOutsideCode(text: string): string {
  return text.replace(/```[^]*?```/g, '').replace(/`[^`\n]*`/g, '');
}

/** Markdown with fenced blocks and code spans taken out, as CommonMark reads them (a scan, not a regex). */
function markdownOutsideCode(md: string): string {
  const kept: string[] = [];
  let fence: number | undefined;
  for (const line of md.split('\n')) {
    const run = /^`{3,}/.exec(line)?.[0].length;
    if (fence !== undefined) {
      if (run !== undefined && run >= fence && /^`+\s*$/.test(line)) fence = undefined;
      continue;
    }
    if (run !== undefined) {
      fence = run;
      continue;
    }
    kept.push(withoutSpans(line));
  }
  return kept.join('\n');
}

/** A run of backticks opens a span that the next run of the same length closes; an unclosed run is text. */
function withoutSpans(line: string): string {
  const runs = [...line.matchAll(/`+/g)].map((m) => ({ at: m.index, length: m[0].length }));
  let out = '';
  let from = 0;
  for (let i = 0; i < runs.length; i++) {
    const open = runs[i];
    if (!open || open.at < from) continue;
    const close = runs.slice(i + 1).find((r) => r.length === open.length);
    if (!close) continue;
    out += line.slice(from, open.at);
    from = close.at + close.length;
    i = runs.indexOf(close);
  }
  return out + line.slice(from);
}

const live = /<!|<https?:|<img|!\[|\]\(http|&(?!amp;|lt;|gt;)/;

describe('notification text for Slack', () => {
  it('escapes & < > everywhere and keeps the server text in a code span', () => {
    const texts = [
      notifyText.deployFailed('lab', `waitHealthy failed: ${hostile}`),
      notifyText.lost('lab', hostile),
      notifyText.relaunched('lab', 2, hostile),
      notifyText.degraded('lab', `the relaunch budget is spent; last failure: ${hostile}`),
      notifyText.companionRestarted('lab', 'embeddings', 'spark1', 1, hostile, undefined),
      notifyText.companionRestarted('lab', 'embeddings', 'spark1', 2, 'gone', hostile),
      notifyText.companionFailed(
        'lab',
        'embeddings',
        'spark1',
        `its restart budget is spent; last failure: ${hostile}`,
      ),
    ];
    for (const text of texts) {
      assert.doesNotMatch(text, /<|>/, text);
      assert.doesNotMatch(slackOutsideCode(text), /evil|!\[|\]\(/, text);
      assert.match(text, /&lt;!channel&gt;/);
    }
    assert.equal(
      notifyText.lost('lab', 'head: GET /health failed <!here>'),
      '✖ lab is lost: `head: GET /health failed &lt;!here&gt;`',
    );
    assert.equal(
      notifyText.companionRestarted('lab', 'embeddings', 'spark1', 1, 'its container is gone', undefined),
      '↻ companion embeddings on spark1 of lab restarted alone (#1), serving again: `its container is gone`',
    );
    assert.equal(
      notifyText.deploySucceeded('lab', 'Org/A&B', 'http://10.0.0.1:8000/v1'),
      '✔ lab is serving Org/A&amp;B at http://10.0.0.1:8000/v1',
    );
  });
});

describe("the supervisor's current details (Markdown in the Temporal UI)", () => {
  it('shows the reason, the last probe failures and relaunch causes in code spans', () => {
    const state = initialState('lab', { launchId: 'l1', servingSinceMs: 0 }, 0);
    state.status = 'degraded';
    state.reason = `budget spent; last failure: ${hostile}`;
    state.lastProbe = {
      atMs: 0,
      durationMs: 1,
      verdict: 'failed',
      checks: [],
      failures: [hostile],
      unreachable: {},
    };
    state.relaunches.push({
      n: 1,
      lostAtMs: 0,
      cause: hostile,
      startedAtMs: 0,
      outcome: 'failed',
      error: hostile,
      deployWorkflowId: 'liftoff-lab',
    });
    const md = detailsMarkdown(state, 1000);
    assert.doesNotMatch(markdownOutsideCode(md), live, md);
    assert.ok(md.includes(markdownHostText(hostile)), md);
    assert.match(md, /^- #1 failed: `.*` → `.*`$/m);
  });
});

describe('the Markdown postmortem of a failure whose messages carry markup', () => {
  const dir = join(import.meta.dirname, '..', 'histories');
  const json = JSON.parse(readFileSync(join(dir, 'deploy-failed.json'), 'utf8')) as {
    events: Record<string, unknown>[];
  };
  const close = json.events.at(-1) as { workflowExecutionFailedEventAttributes: { failure: Failure } };
  interface Failure {
    message: string;
    cause?: Failure;
    applicationFailureInfo?: { type: string; details?: { payloads: { data: string }[] } };
  }
  const failure = close.workflowExecutionFailedEventAttributes.failure;
  failure.message += `\n${hostile}`;
  failure.cause = { message: hostile, applicationFailureInfo: { type: 'ServerFatal' } };
  const payload = failure.applicationFailureInfo?.details?.payloads[0];
  assert.ok(payload);
  const details = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as {
    diagnostics: { errors: string[]; serveLogTail?: string }[];
    teardown: string[];
  };
  const head = details.diagnostics[0];
  assert.ok(head);
  head.errors = [hostile];
  head.serveLogTail = `${head.serveLogTail ?? ''}\n\`\`\`\n${hostile}\n\`\`\`\n`;
  details.teardown = [`teardown failed: ${hostile}`];
  payload.data = Buffer.from(JSON.stringify(details)).toString('base64');
  const md = renderMarkdown(buildPostmortem(json));

  it('has the failure, its cause, the teardown and the diagnostics, none of it live', () => {
    assert.match(md, /Caused by:\n- `/);
    assert.match(md, /^- error: `+HTTP 500: <!channel>/m);
    assert.match(md, /^- `+teardown failed: HTTP 500/m);
    assert.doesNotMatch(markdownOutsideCode(md), live);
    assert.doesNotMatch(markdownOutsideCode(md), /evil/);
  });
});
