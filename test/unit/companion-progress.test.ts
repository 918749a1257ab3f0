// The companions (issue 31) wherever a deploy's progress shows: the line each one gets (--follow, status, the
// Temporal UI), --follow's plain output under the startCompanions step, `liftoff status`'s rows, and the
// postmortem's Companions section built from the history's startCompanion and probeCompanion activities, with a
// companion that failed to start naming itself and its error, host text escaped.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { followPlain } from '../../src/cli/follow.js';
import { renderStatus } from '../../src/commands/status.js';
import { buildPostmortem, renderHtml, renderMarkdown } from '../../src/report/index.js';
import { companionReports } from '../../src/report/companions.js';
import { detailsMarkdown } from '../../src/workflows/step-tracker.js';
import type { ActivityTrack, RunRecord } from '../../src/report/fold.js';
import {
  companionLine,
  deploySteps,
  type CompanionProgress,
  type DeployProgress,
  type StepState,
} from '../../src/workflows/steps.js';

const histories = join(import.meta.dirname, '..', 'histories');

describe('a companion in one line', () => {
  it('says its name, host, status, time and the first line of its detail', () => {
    const ready: CompanionProgress = {
      name: 'embeddings',
      host: 'spark1',
      status: 'ready',
      startedAtMs: 1000,
      durationMs: 3100,
      detail: 'an embedding of 1024 dimensions',
    };
    assert.equal(
      companionLine(ready),
      'embeddings on spark1: ready in 3.1s — an embedding of 1024 dimensions',
    );
    assert.equal(
      companionLine(
        {
          name: 'reranker',
          host: 'spark2',
          status: 'starting',
          startedAtMs: 1000,
          detail: 'HTTP 503: loading\nmore',
        },
        6000,
      ),
      'reranker on spark2: starting for 5.0s — HTTP 503: loading',
    );
    assert.equal(
      companionLine({ name: 'reranker', host: 'spark2', status: 'pending' }),
      'reranker on spark2: pending',
    );
    assert.equal(
      companionLine({
        name: 'proxy',
        host: 'spark1',
        status: 'failed',
        durationMs: 400,
        detail: 'x'.repeat(500),
      }).length,
      'proxy on spark1: failed after 400ms — '.length + 200,
    );
  });
});

function progressAt(status: StepState['status'], companions: CompanionProgress[]): DeployProgress {
  return {
    cluster: 'c',
    launchId: 'l',
    trigger: 'cli',
    status: 'running',
    startedAtMs: 0,
    currentStep: 'startCompanions',
    steps: deploySteps.map((s) => ({
      name: s.name,
      title: s.title,
      status: s.name === 'startCompanions' ? status : s.name === 'record' ? 'pending' : 'done',
      ...(s.name === 'startCompanions' && status === 'done' ? { durationMs: 4000 } : {}),
    })),
    companions,
  };
}

describe('deploy --follow (plain) and status', () => {
  it('--follow writes each companion change under its step, before the step ends, once each', async () => {
    const starting: CompanionProgress = {
      name: 'embeddings',
      host: 'spark1',
      status: 'starting',
      startedAtMs: 0,
    };
    const ready: CompanionProgress = {
      ...starting,
      status: 'ready',
      durationMs: 3100,
      detail: 'an embedding of 4 dimensions',
    };
    const snapshots = [
      progressAt('running', [starting, { name: 'reranker', host: 'spark2', status: 'pending' }]),
      progressAt('running', [starting, { name: 'reranker', host: 'spark2', status: 'pending' }]),
      progressAt('done', [
        ready,
        {
          name: 'reranker',
          host: 'spark2',
          status: 'failed',
          durationMs: 10,
          detail: 'port \x1b[31m8002 in use',
        },
      ]),
    ];
    let settle: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (settle = resolve));
    let n = 0;
    const handle = {
      query: () => {
        const p = snapshots[Math.min(n++, snapshots.length - 1)];
        if (n >= snapshots.length) settle();
        return Promise.resolve(p);
      },
    } as unknown as WorkflowHandle;
    const lines: string[] = [];
    await followPlain(handle, done, (l) => lines.push(l));
    const from = lines.indexOf('▶ Start the companion services');
    assert.deepEqual(lines.slice(from), [
      '▶ Start the companion services',
      '  embeddings on spark1: starting',
      '  embeddings on spark1: ready in 3.1s — an embedding of 4 dimensions',
      '  reranker on spark2: failed after 10ms — port \\x1b[31m8002 in use',
      '✔ Start the companion services (4.0s)',
    ]);
  });

  it('the Temporal UI’s details: one indented line per companion under its step, its detail a code span', () => {
    const p = progressAt('running', [
      {
        name: 'embeddings',
        host: 'spark1',
        status: 'ready',
        durationMs: 3100,
        detail: 'an embedding of 4 dimensions',
      },
      {
        name: 'reranker',
        host: 'spark2',
        status: 'starting',
        startedAtMs: 10_000,
        detail: '[click](http://x) `y`',
      },
      { name: 'proxy', host: 'spark1', status: 'pending' },
    ]);
    const lines = detailsMarkdown(p, 12_000).split('\n');
    const at = lines.indexOf('- … Start the companion services');
    assert.deepEqual(lines.slice(at, at + 4), [
      '- … Start the companion services',
      '  - embeddings on spark1: ready in 3.1s — `an embedding of 4 dimensions`',
      '  - reranker on spark2: starting for 2.0s — `` [click](http://x) `y` ``',
      '  - proxy on spark1: pending',
    ]);
    const without = detailsMarkdown({ ...p, companions: undefined }, 12_000).split('\n');
    assert.equal(without[without.indexOf('- … Start the companion services') + 1], undefined);
  });

  it('status lists each companion under startCompanions', () => {
    const text = renderStatus({
      cluster: 'c',
      workflowId: 'liftoff-c',
      runId: 'r',
      status: 'RUNNING',
      startTime: '2026-12-07T00:00:00.000Z',
      progress: progressAt('running', [
        {
          name: 'embeddings',
          host: 'spark1',
          status: 'ready',
          durationMs: 3100,
          detail: 'an embedding of 4 dimensions',
        },
        { name: 'reranker', host: 'spark2', status: 'pending' },
      ]),
    });
    const rows = text.split('\n');
    const at = rows.findIndex((r) => r.startsWith('startCompanions '));
    assert.match(rows[at + 1] ?? '', /^ {2}embeddings@spark1 +ready +3\.1s +an embedding of 4 dimensions$/);
    assert.match(rows[at + 2] ?? '', /^ {2}reranker@spark2 +pending$/);
    assert.match(rows[at + 3] ?? '', /^record /);
  });
});

const track = (
  type: 'startCompanion' | 'probeCompanion',
  companion: string,
  host: string,
  atMs: number,
  ended: { result?: unknown; error?: string },
): ActivityTrack => ({
  step: 'startCompanions',
  companion,
  ...(ended.result !== undefined ? { result: ended.result } : {}),
  run: {
    activityId: String(atMs),
    activityType: type,
    host,
    scheduledAtMs: atMs,
    startedAtMs: atMs,
    endedAtMs: atMs + 100,
    attempt: 1,
    outcome: ended.error ? 'failed' : 'completed',
    ...(ended.error ? { error: ended.error } : {}),
  },
});

describe('the postmortem’s companions', () => {
  const succeeded = JSON.parse(readFileSync(join(histories, 'deploy-succeeded.json'), 'utf8')) as unknown;

  it('a history without companions has no Companions section', () => {
    const pm = buildPostmortem(succeeded);
    assert.equal(pm.companions, undefined);
    assert.doesNotMatch(renderMarkdown(pm), /## Companions/);
    assert.doesNotMatch(renderHtml(pm), /<h2>Companions/);
  });

  it('one ready, one that failed to start (naming itself and its error, escaped), one never started', () => {
    const base = buildPostmortem(succeeded);
    const t0 = base.startedAtMs;
    const error =
      'CompanionFailed: companion reranker: docker run of liftoff-reranker on spark2 failed (exit 125): <img src=x onerror=alert(1)> | `x`';
    const record = {
      input: {
        companions: [
          { name: 'embeddings', host: 'spark1' },
          { name: 'reranker', host: 'spark2' },
          { name: 'proxy', host: 'spark1' },
        ],
      },
      activities: [
        track('startCompanion', 'embeddings', 'spark1', t0 + 1000, { result: { host: 'spark1' } }),
        track('probeCompanion', 'embeddings', 'spark1', t0 + 2000, {
          result: { ok: false, running: true, error: 'HTTP 503' },
        }),
        track('probeCompanion', 'embeddings', 'spark1', t0 + 3000, {
          result: { ok: true, latencyMs: 12, detail: 'an embedding of 1024 dimensions' },
        }),
        track('startCompanion', 'reranker', 'spark2', t0 + 4000, { error }),
      ],
    } as unknown as RunRecord;
    const companions = companionReports(record, 'failed', 'startCompanions failed: …');
    assert.deepEqual(
      companions?.map((c) => [c.name, c.host, c.outcome, c.probes, c.durationMs, c.detail, c.error]),
      [
        ['embeddings', 'spark1', 'ready', 2, 2100, 'an embedding of 1024 dimensions', undefined],
        ['reranker', 'spark2', 'failed', 0, 100, undefined, error],
        ['proxy', 'spark1', 'not started', 0, undefined, undefined, undefined],
      ],
    );
    const pm = { ...base, companions };
    const md = renderMarkdown(pm);
    assert.match(
      md,
      /^\| `embeddings` \| `spark1` \| ready \| \+1\.0s \| 2\.1s \| 2 \| `an embedding of 1024 dimensions` \|$/m,
    );
    const reranker = md.split('\n').find((l) => l.startsWith('| `reranker`')) ?? '';
    assert.match(
      reranker,
      /\| failed \|.*`` CompanionFailed: companion reranker: docker run .*<img src=x onerror=alert\(1\)> \\\| `x` ``/,
    );
    assert.match(md, /^\| `proxy` \| `spark1` \| not started \| {2}\| {2}\| {2}\| {2}\|$/m);
    const html = renderHtml(pm);
    assert.match(
      html,
      /<tr data-companion="reranker"><td>reranker<\/td><td>spark2<\/td><td class="outcome-failed">failed<\/td>/,
    );
    assert.match(
      html,
      /companion reranker: docker run of liftoff-reranker on spark2 failed \(exit 125\): &lt;img src=x onerror=alert\(1\)&gt;/,
    );
    assert.doesNotMatch(html, /<img/);
  });

  it('a companion that stopped before it was ready names the error the workflow recorded for it', () => {
    const record = {
      input: { companions: [{ name: 'embeddings', host: 'spark1' }] },
      activities: [
        track('startCompanion', 'embeddings', 'spark1', 1000, { result: {} }),
        track('probeCompanion', 'embeddings', 'spark1', 2000, {
          result: { ok: false, running: false, error: 'its container exited (1)' },
        }),
      ],
      close: {
        kind: 'workflowExecutionFailed',
        attrs: {
          failure: {
            message: 'startCompanions failed: …',
            applicationFailureInfo: {
              type: 'CompanionFailed',
              details: {
                payloads: [
                  {
                    metadata: { encoding: Buffer.from('json/plain').toString('base64') },
                    data: Buffer.from(
                      JSON.stringify({
                        step: 'startCompanions',
                        progress: {
                          companions: [
                            {
                              name: 'embeddings',
                              host: 'spark1',
                              status: 'failed',
                              detail:
                                'companion embeddings (liftoff-embeddings on spark1) stopped before it was ready: its container exited (1)',
                            },
                          ],
                        },
                      }),
                    ).toString('base64'),
                  },
                ],
              },
            },
          },
        },
      },
    } as unknown as RunRecord;
    const [c] = companionReports(record, 'failed', 'startCompanions failed: …') ?? [];
    assert.equal(c?.outcome, 'failed');
    assert.equal(c?.detail, 'its container exited (1)');
    assert.equal(
      c?.error,
      'companion embeddings (liftoff-embeddings on spark1) stopped before it was ready: its container exited (1)',
    );
  });
});
