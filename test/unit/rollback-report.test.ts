// A failed upgrade and its rollback (issue 30) in what reads histories: `liftoff history` lists the failed run
// (CONTINUED_AS_NEW to Temporal) as failed and rolled back, and the rollback's run with its trigger and the run
// it rolls back; the postmortem of each links the other and shows what differs between the two revisions. The
// histories are the recorded ones in test/histories, changed here the way the rollback changes a run.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildPostmortem, renderHtml, renderMarkdown } from '../../src/report/index.js';
import { historyEntries, type ListedRun } from '../../src/report/history-list.js';
import { listedRunOutcome, outcomeOfClose, rolledBackToOf } from '../../src/report/outcome.js';
import { rollbackOfOptions } from '../../src/report/rollback.js';
import { renderHistory } from '../../src/commands/history.js';
import { diffRevisions, diffSpecs } from '../../src/shared/revision-diff.js';
import type { Revision } from '../../src/shared/revisions.js';
import { redactedMarker } from '../../src/shared/secrets.js';

const dir = join(import.meta.dirname, '..', 'histories');

interface JsonEvent {
  eventId: string;
  eventTime: string;
  eventType: string;
  [key: string]: unknown;
}
interface JsonHistory {
  events: JsonEvent[];
}

const load = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as JsonHistory;
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: string) => Buffer.from(text, 'base64').toString('utf8');
const payload = (value: unknown) => ({
  metadata: { encoding: b64('json/plain') },
  data: b64(JSON.stringify(value)),
});

function startAttrs(json: JsonHistory): Record<string, unknown> {
  return json.events[0]?.workflowExecutionStartedEventAttributes as Record<string, unknown>;
}

interface Spec {
  ray: { image: string; env: Record<string, unknown> };
  serve: { env: Record<string, unknown> };
}

function specOf(json: JsonHistory): Spec {
  const input = startAttrs(json).input as { payloads: { data: string }[] };
  return JSON.parse(unb64(input.payloads[0]?.data ?? '')) as Spec;
}

function setStartInput(json: JsonHistory, spec: unknown, options: unknown): void {
  startAttrs(json).input = { payloads: [payload(spec), payload(options)] };
}

const restoredImage = 'sha256:3f2a9c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4';
const planted = 'hf_rollbackSecret1';

/** The known-good spec a rollback deploys: the image pinned by ID, one env value as it was. */
function restoredSpecOf(bad: Spec): Spec {
  const spec = structuredClone(bad);
  spec.ray.image = restoredImage;
  spec.ray.env.NCCL_SOCKET_IFNAME = 'enp1s0f0np0';
  return spec;
}

/**
 * deploy-failed.json as the run looks when it fails after the stop with a known-good to fall back on: it
 * records its revision bad (4), keeps its failure in its memo and continues as the rollback's deploy.
 */
function rolledBackHistory(): { json: JsonHistory; message: string } {
  const json = load('deploy-failed.json');
  const close = json.events.pop();
  assert.equal(close?.eventType, 'EVENT_TYPE_WORKFLOW_EXECUTION_FAILED');
  const failure = (close.workflowExecutionFailedEventAttributes as { failure: { message: string } }).failure;
  const message = `${failure.message.replace(/\ncontainers: [^\n]*$/, '')}\ncontainers: replaced by the rollback`;
  let id = Number(close.eventId);
  const at = (ms: number) => new Date(Date.parse(close.eventTime) + ms).toISOString();
  const event = (eventType: string, key: string, attrs: unknown, ms: number): JsonEvent => ({
    eventId: String(id++),
    eventTime: at(ms),
    eventType,
    [key]: attrs,
  });
  const scheduled = event(
    'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED',
    'activityTaskScheduledEventAttributes',
    {
      activityId: '99',
      activityType: { name: 'recordRevision' },
      input: { payloads: [payload({ cluster: 'replay' })] },
    },
    0,
  );
  json.events.push(
    scheduled,
    event(
      'EVENT_TYPE_ACTIVITY_TASK_STARTED',
      'activityTaskStartedEventAttributes',
      { scheduledEventId: scheduled.eventId, attempt: 1, identity: 'worker@test' },
      5,
    ),
    event(
      'EVENT_TYPE_ACTIVITY_TASK_COMPLETED',
      'activityTaskCompletedEventAttributes',
      { scheduledEventId: scheduled.eventId, result: { payloads: [payload(4)] } },
      10,
    ),
    event(
      'EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED',
      'workflowPropertiesModifiedEventAttributes',
      {
        upsertedMemo: {
          fields: { rolledBackTo: payload(3), failure: payload({ type: 'ServerFatal', message }) },
        },
      },
      20,
    ),
    event(
      'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW',
      'workflowExecutionContinuedAsNewEventAttributes',
      {
        newExecutionRunId: 'run-rollback',
        workflowType: { name: 'deploy' },
        input: {
          payloads: [
            payload(restoredSpecOf(specOf(json))),
            payload({ trigger: 'rollback', rollback: { to: 3, from: 4, cause: message, hosts: [] } }),
          ],
        },
      },
      30,
    ),
  );
  return { json, message };
}

const cause = 'waitHealthy failed: vllm failed <script>alert(1)</script> at shard 3/8';

/** deploy-succeeded.json as the rollback's run: started with the rollback's options and memo. */
function rollbackRunHistory(
  opts: { from?: number; failedRun?: string } = { from: 4, failedRun: 'liftoff-replay:run-failed' },
) {
  const json = load('deploy-succeeded.json');
  const good = specOf(json);
  setStartInput(json, good, {
    trigger: 'rollback',
    rollback: { to: 3, cause, hosts: [], ...opts },
  });
  startAttrs(json).memo = { fields: { rollbackOf: payload('liftoff-replay-supervise:sup-run-1') } };
  return { json, good };
}

describe('outcome of a run that rolled back', () => {
  it('a CONTINUED_AS_NEW run with rolledBackTo in its memo is failed, rolled back to that revision', () => {
    assert.equal(
      listedRunOutcome('CONTINUED_AS_NEW', 'failed', { rolledBackTo: 3 }),
      'failed (rolled back to 3)',
    );
    assert.equal(listedRunOutcome('CONTINUED_AS_NEW', undefined, {}), 'continued as new');
    assert.equal(listedRunOutcome('CONTINUED_AS_NEW', 'failed', undefined), 'failed');
    assert.equal(listedRunOutcome('RUNNING', undefined, { rolledBackTo: 3 }), 'running');
    assert.equal(
      listedRunOutcome('FAILED', 'failed', { rolledBackTo: 3 }),
      'failed',
      'only a run that went on',
    );
  });

  it('reads only a whole revision number', () => {
    assert.equal(rolledBackToOf('CONTINUED_AS_NEW', { rolledBackTo: '3' }), undefined);
    assert.equal(rolledBackToOf('CONTINUED_AS_NEW', { rolledBackTo: 2.5 }), undefined);
    assert.equal(rolledBackToOf('CONTINUED_AS_NEW', { rolledBackTo: 7 }), 7);
  });

  it('its close event is a failure, any other continue-as-new is not', () => {
    const close = 'workflowExecutionContinuedAsNew';
    assert.equal(outcomeOfClose(close, undefined, {}, { rolledBackTo: 3 }), 'failed');
    assert.equal(outcomeOfClose(close, undefined, {}, {}), 'continued as new');
    assert.equal(outcomeOfClose(close, undefined, {}), 'continued as new');
  });

  it('a rollback request is read from the start options, and only a whole one', () => {
    assert.deepEqual(
      rollbackOfOptions({ rollback: { to: 3, from: 4, cause: 'x', failedRun: 'w:r', hosts: [] } }),
      {
        to: 3,
        from: 4,
        cause: 'x',
        failedRun: 'w:r',
      },
    );
    assert.equal(rollbackOfOptions({ trigger: 'cli' }), undefined);
    assert.equal(rollbackOfOptions({ rollback: { from: 4 } }), undefined);
    assert.equal(rollbackOfOptions(undefined), undefined);
  });
});

describe('liftoff history of a failed upgrade and its rollback', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const runs: ListedRun[] = [
    {
      workflowId: 'liftoff-a',
      runId: 'r1',
      status: 'CONTINUED_AS_NEW',
      startTime: at(0),
      closeTime: at(40),
      trigger: 'cli',
      outcome: 'failed',
      memo: { rolledBackTo: 3, failure: { type: 'ServerFatal', message: 'waitHealthy failed: x' } },
    },
    {
      workflowId: 'liftoff-a',
      runId: 'r2',
      status: 'COMPLETED',
      startTime: at(40),
      closeTime: at(90),
      trigger: 'rollback',
      outcome: 'succeeded',
      memo: { rollbackOf: 'liftoff-a:r1' },
    },
  ];

  it('the failed run is failed and rolled back; the rollback says which run it rolls back', () => {
    const entries = historyEntries(runs, 10);
    assert.deepEqual(
      entries.map((e) => [e.runId, e.trigger, e.outcome, e.rolledBackTo, e.rollbackOf]),
      [
        ['r2', 'rollback', 'succeeded', undefined, 'liftoff-a:r1'],
        ['r1', 'cli', 'failed (rolled back to 3)', 3, undefined],
      ],
    );
    const json = JSON.parse(JSON.stringify(entries)) as Record<string, unknown>[];
    assert.equal(json[0]?.rollbackOf, 'liftoff-a:r1');
    assert.ok(!('rollbackOf' in (json[1] ?? {})), 'no empty field on other runs');
  });

  it('the table shows both, and a line naming the run the rollback rolls back', () => {
    const text = renderHistory({ cluster: 'a', entries: historyEntries(runs, 10) });
    assert.match(text, /rollback\s+succeeded/);
    assert.match(text, /cli\s+failed \(rolled back to 3\)/);
    assert.match(text, /^rollback r2 of liftoff-a:r1$/m);
  });
});

describe('postmortem of a run that failed and rolled back (continued as new)', () => {
  const { json, message } = rolledBackHistory();
  const pm = buildPostmortem(json);

  it('is failed in the step that failed, with the cause from its memo, not continued or running', () => {
    assert.equal(pm.outcome, 'failed');
    assert.equal(pm.failure?.type, 'ServerFatal');
    assert.equal(pm.failure?.step, 'waitHealthy');
    assert.equal(pm.failure?.message, message);
    assert.deepEqual(pm.failure?.teardown, ['replaced by the rollback']);
    assert.equal(pm.steps.find((s) => s.name === 'waitHealthy')?.outcome, 'failed');
    assert.equal(pm.steps.find((s) => s.name === 'smokeTest')?.outcome, 'not reached');
    assert.ok(pm.endedAtMs !== undefined);
  });

  it('keeps the diagnostics its collectDiagnostics activity returned', () => {
    assert.deepEqual(pm.failure?.diagnostics.map((d) => d.host).sort(), ['spark1', 'spark2']);
  });

  it('names the revision it rolled back to and the rollback run, from the ContinuedAsNew event', () => {
    assert.deepEqual(pm.rollback?.rolledBackTo, { revision: 3, runId: 'run-rollback' });
    const md = renderMarkdown(pm);
    assert.match(md, /^- Rolled back: revision 3 \(run `run-rollback`\)$/m);
    assert.match(md, /\*\*ServerFatal\*\* in step `waitHealthy`/);
    assert.match(
      md,
      /^- This run failed after the known-good was stopped.* `liftoff postmortem liftoff-replay --run run-rollback`$/m,
    );
    assert.match(renderHtml(pm), /<dt>Rolled back<\/dt><dd>revision 3 \(run run-rollback\)<\/dd>/);
  });

  it('diffs its own spec against the one the rollback deploys (both are in its history)', () => {
    const diff = pm.rollback?.diff;
    assert.equal(diff?.basis, 'specs');
    assert.equal(diff?.fromLabel, 'revision 4 (this run, failed)');
    assert.equal(diff?.toLabel, 'revision 3 (restored)');
    assert.deepEqual(
      diff?.changes.map((c) => [c.field, c.to]),
      [
        ['spec.ray.env.NCCL_SOCKET_IFNAME', 'enp1s0f0np0'],
        ['spec.ray.image', restoredImage],
      ],
    );
    assert.match(renderHtml(pm), /<table id="rollback-diff" data-basis="specs">/);
  });
});

describe('postmortem of a rollback’s run', () => {
  it('says what it rolls back, from its start options, with the cause as host text', () => {
    const { json } = rollbackRunHistory();
    const pm = buildPostmortem(json);
    assert.equal(pm.outcome, 'succeeded');
    assert.equal(pm.trigger.kind, 'rollback');
    assert.deepEqual(pm.rollback?.of, { to: 3, from: 4, cause, failedRun: 'liftoff-replay:run-failed' });
    const md = renderMarkdown(pm);
    assert.match(
      md,
      /^- Rollback of `liftoff-replay:run-failed`: revision 4 failed: `waitHealthy failed: vllm failed <script>alert\(1\)<\/script> at shard 3\/8`; restores revision 3$/m,
    );
    const html = renderHtml(pm);
    assert.match(
      html,
      /<dt>Rollback<\/dt><dd>of liftoff-replay:run-failed: revision 4 failed: waitHealthy failed: vllm failed &lt;script&gt;alert\(1\)&lt;\/script&gt; at shard 3\/8; restores revision 3<\/dd>/,
    );
    assert.doesNotMatch(html, /<script/);
    assert.match(
      md,
      /^- The postmortem of the run it rolls back: `liftoff postmortem liftoff-replay --run run-failed`$/m,
    );
  });

  it('without the failed run’s data, says the diff is unavailable offline', () => {
    const pm = buildPostmortem(rollbackRunHistory().json);
    assert.equal(pm.rollback?.diff, undefined);
    assert.match(
      pm.rollback?.diffUnavailable ?? '',
      /revision 4's spec is in the failed run's history \(liftoff-replay:run-failed\)/,
    );
    assert.match(renderHtml(pm), /<p id="rollback-diff-unavailable"/);
    assert.match(renderMarkdown(pm), /## Rollback: what changed\n\nrevision 4's spec/);
  });

  it('a bake-window rollback (no failedRun) names its supervisor’s run from its memo', () => {
    const pm = buildPostmortem(rollbackRunHistory({ from: 4 }).json);
    assert.equal(pm.rollback?.of?.failedRun, 'liftoff-replay-supervise:sup-run-1');
    assert.equal(pm.rollback?.of?.bySupervisor, true);
    assert.match(
      renderMarkdown(pm),
      /^- The supervisor lost the revision .* `temporal workflow show --workflow-id liftoff-replay-supervise --run-id sup-run-1`$/m,
    );
  });

  it('a rollback asked for with no failure behind it has no diff to show', () => {
    const pm = buildPostmortem(rollbackRunHistory({}).json);
    assert.equal(pm.rollback?.diff, undefined);
    assert.equal(pm.rollback?.diffUnavailable, undefined);
    assert.match(renderMarkdown(pm), /^- Rollback of `liftoff-replay-supervise:sup-run-1` to revision 3: `/m);
  });

  it('given the failed run’s spec, diffs the two specs field by field; host text is never markup', () => {
    const { json, good } = rollbackRunHistory();
    const bad = structuredClone(good);
    bad.ray.image = 'vllm/vllm-openai:nightly';
    // What a spec says is a person's text: an env value is as free as it gets.
    bad.ray.env.NOTE = '<img src=x onerror=alert(1)>';
    const pm = buildPostmortem(json, { rollbackEvidence: { failedSpec: bad } });
    const diff = pm.rollback?.diff;
    assert.equal(diff?.basis, 'specs');
    assert.deepEqual(
      diff?.changes.map((c) => [c.field, c.from, c.to]),
      [
        ['spec.ray.env.NOTE', bad.ray.env.NOTE, '(none)'],
        ['spec.ray.image', bad.ray.image, good.ray.image],
      ],
    );
    const html = renderHtml(pm);
    assert.match(html, /<table id="rollback-diff" data-basis="specs">/);
    assert.match(html, /<th>revision 4 \(failed\)<\/th><th>revision 3 \(restored\)<\/th>/);
    assert.match(html, /<td>&lt;img src=x onerror=alert\(1\)&gt;<\/td>/);
    assert.doesNotMatch(html, /<img|<script/);
    const md = renderMarkdown(pm);
    assert.match(md, /^- `spec\.ray\.env\.NOTE`: `<img src=x onerror=alert\(1\)>` → `\(none\)`$/m);
  });

  it('a literal secret in the failed spec (the schema refuses one; a crafted history may not) is redacted', () => {
    const { json, good } = rollbackRunHistory();
    const bad = structuredClone(good);
    bad.serve.env.HF_TOKEN = planted;
    const pm = buildPostmortem(json, { rollbackEvidence: { failedSpec: bad } });
    const token = pm.rollback?.diff?.changes.find((c) => c.field === 'spec.serve.env.HF_TOKEN');
    assert.deepEqual([token?.from, token?.to], [redactedMarker, '(none)']);
    for (const text of [JSON.stringify(pm), renderMarkdown(pm), renderHtml(pm)])
      assert.ok(!text.includes(planted), 'secret leaked');
  });

  it('given both recorded revisions, the diff has what the hosts reported too', () => {
    const { json, good } = rollbackRunHistory();
    const revision = (number: number, spec: unknown, imageId: string, kernel: string): Revision => ({
      number,
      atMs: 0,
      launchId: `liftoff-replay:run-${number}`,
      trigger: 'cli',
      spec,
      model: 'm',
      image: 'img',
      hosts: [{ host: 'spark1', imageId, kernel }],
      argv: ['vllm', 'serve', 'm'],
      envNames: ['HF_TOKEN'],
      status: number === 4 ? 'bad' : 'replaced',
    });
    const bad = revision(4, { ...good, ray: { ...good.ray, image: 'img:new' } }, 'sha256:bbb', '6.8.0-60');
    const restored = revision(3, good, 'sha256:aaa', '6.8.0-51');
    const pm = buildPostmortem(json, { rollbackEvidence: { revisions: { bad, restored } } });
    const diff = pm.rollback?.diff;
    assert.equal(diff?.basis, 'revisions');
    assert.deepEqual(
      diff?.changes.map((c) => [c.field, c.outsideSpec]),
      [
        ['spec.ray.image', false],
        ['spark1.imageId', true],
        ['spark1.kernel', true],
      ],
    );
    assert.match(
      renderHtml(pm),
      /<tr class="outside-spec"><td><code>spark1\.kernel<\/code><\/td><td>6\.8\.0-60<\/td><td>6\.8\.0-51<\/td><\/tr>/,
    );
    assert.match(
      renderMarkdown(pm),
      /^- `spark1\.kernel`: `6\.8\.0-60` → `6\.8\.0-51` \(outside the spec\)$/m,
    );
  });
});

describe('the recorded rolled-back upgrade (deploy-rolled-back-failed.json, deploy-rolled-back.json)', () => {
  interface Manifest {
    histories: { file: string; runId: string; workflowId: string; revisions?: Record<string, number> }[];
  }
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  const runOf = (file: string) => {
    const e = manifest.histories.find((h) => h.file === file);
    assert.ok(e, `${file} is in the manifest`);
    return e;
  };
  const failedRun = runOf('deploy-rolled-back-failed.json');
  const rollbackRun = runOf('deploy-rolled-back.json');
  const revisions = failedRun.revisions ?? {};

  it('the failed run: failed in waitHealthy, its diagnostics, rolled back to the known-good in the rollback run', () => {
    const pm = buildPostmortem(load('deploy-rolled-back-failed.json'));
    assert.equal(pm.outcome, 'failed');
    assert.equal(pm.failure?.step, 'waitHealthy');
    assert.match(pm.failure?.message ?? '', /^waitHealthy failed: /);
    assert.ok((pm.failure?.diagnostics.length ?? 0) > 0);
    assert.deepEqual(pm.rollback?.rolledBackTo, { revision: revisions.knownGood, runId: rollbackRun.runId });
    assert.equal(pm.rollback?.diff?.fromLabel, `revision ${revisions.bad} (this run, failed)`);
    assert.ok(
      pm.rollback?.diff?.changes.some((c) => c.field === 'spec.ray.image' && c.to.startsWith('sha256:')),
    );
    const steps = new Map(pm.steps.map((s) => [s.name, s.outcome]));
    assert.deepEqual(
      ['waitHealthy', 'smokeTest', 'record', 'diagnostics', 'rollback'].map((n) => steps.get(n)),
      ['failed', 'not reached', 'not reached', 'done', 'done'],
    );
  });

  it('the rollback run: trigger rollback, of the failed run, the spec diff once given the failed run’s spec', () => {
    const json = load('deploy-rolled-back.json');
    const alone = buildPostmortem(json);
    assert.equal(alone.outcome, 'succeeded');
    assert.equal(alone.trigger.kind, 'rollback');
    assert.deepEqual(
      { ...alone.rollback?.of, cause: undefined },
      {
        to: revisions.knownGood,
        from: revisions.bad,
        failedRun: `${failedRun.workflowId}:${failedRun.runId}`,
        cause: undefined,
      },
    );
    assert.match(alone.rollback?.diffUnavailable ?? '', /run the postmortem online/);
    const failedSpec = specOf(load('deploy-rolled-back-failed.json'));
    const pm = buildPostmortem(json, { rollbackEvidence: { failedSpec } });
    assert.equal(pm.rollback?.diff?.basis, 'specs');
    assert.ok(pm.rollback?.diff?.changes.some((c) => c.field.startsWith('spec.serve.args')));
    assert.match(renderHtml(pm), /<table id="rollback-diff" data-basis="specs">/);
  });
});

describe('diffSpecs', () => {
  it('compares two specs field by field, as diffRevisions does for their spec part', () => {
    const a = { ray: { image: 'x:1', env: { A: '1' } }, serve: { args: ['--a', '1'] } };
    const b = { ray: { image: 'x:2', env: {} }, serve: { args: ['--a', '1', '--b'] } };
    const changes = diffSpecs(a, b);
    assert.deepEqual(
      changes.map((c) => [c.field, c.from, c.to]),
      [
        ['spec.ray.env', '(none)', '{}'],
        ['spec.ray.env.A', '1', '(none)'],
        ['spec.ray.image', 'x:1', 'x:2'],
        ['spec.serve.args.2', '(none)', '--b'],
      ],
    );
    assert.deepEqual(diffSpecs(a, structuredClone(a)), []);
    const rev = (spec: unknown): Revision => ({
      number: 1,
      atMs: 0,
      launchId: 'w:r',
      trigger: 'cli',
      spec,
      model: 'm',
      image: 'i',
      hosts: [],
      argv: [],
      envNames: [],
      status: 'serving',
    });
    assert.deepEqual(diffRevisions(rev(a), rev(b)), changes);
  });
});
