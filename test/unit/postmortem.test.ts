// Postmortems built from the recorded histories in test/histories (real deploys on the simulated cluster,
// exported with `temporal workflow show --output json`): what each report must say, from the events alone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import proto from '@temporalio/proto';
import { buildPostmortem, renderHtml, renderMarkdown, type Postmortem } from '../../src/report/index.js';
import { historyEntries, median, type ListedRun } from '../../src/report/history-list.js';
import { formatDuration } from '../../src/config/duration.js';
import { deploySteps } from '../../src/workflows/steps.js';
import { redactedMarker } from '../../src/shared/secrets.js';
import { decodedText } from '../../scripts/lib/history-export.js';

const dir = join(import.meta.dirname, '..', 'histories');

interface Manifest {
  cluster: { name: string; pace: Record<string, { shards: number }> };
  histories: { file: string; runId: string; outcome: string; workerIdentities: string[] }[];
}
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;

interface JsonEvent {
  eventType: string;
  [key: string]: unknown;
}
interface JsonHistory {
  events: JsonEvent[];
}

function load(file: string): JsonHistory {
  return JSON.parse(readFileSync(join(dir, file), 'utf8')) as JsonHistory;
}

function entry(file: string) {
  const e = manifest.histories.find((h) => h.file === file);
  assert.ok(e, `${file} is in the manifest`);
  return e;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: string) => Buffer.from(text, 'base64').toString('utf8');

/** The history as `handle.fetchHistory()` returns it: protobuf messages decoded from the wire. */
function asFetched(json: JsonHistory): proto.temporal.api.history.v1.History {
  const timestamp = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
  const duration = /^\d+(\.\d+)?s$/;
  const convert = (v: unknown): unknown => {
    if (typeof v === 'string' && timestamp.test(v)) {
      const fraction = /\.(\d+)Z$/.exec(v)?.[1] ?? '';
      return { seconds: String(Math.floor(Date.parse(v) / 1000)), nanos: Number(fraction.padEnd(9, '0')) };
    }
    if (typeof v === 'string' && duration.test(v)) {
      const s = Number(v.slice(0, -1));
      return { seconds: String(Math.floor(s)), nanos: Math.round((s % 1) * 1e9) };
    }
    if (Array.isArray(v)) return v.map(convert);
    if (typeof v === 'object' && v !== null)
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, convert(x)]));
    return v;
  };
  const History = proto.temporal.api.history.v1.History;
  return History.decode(History.encode(History.fromObject(convert(json) as object)).finish());
}

function attrs(e: JsonEvent, key: string): Record<string, unknown> {
  return e[key] as Record<string, unknown>;
}

function step(pm: Postmortem, name: string) {
  const s = pm.steps.find((x) => x.name === name);
  assert.ok(s, `step ${name} is in the report`);
  return s;
}

describe('postmortem of a successful deploy (deploy-succeeded.json)', () => {
  const pm = buildPostmortem(load('deploy-succeeded.json'));

  it('names the run, its cluster, outcome and CLI trigger', () => {
    assert.equal(pm.workflowId, 'liftoff-replay');
    assert.equal(pm.runId, entry('deploy-succeeded.json').runId);
    assert.equal(pm.cluster, manifest.cluster.name);
    assert.equal(pm.outcome, 'succeeded');
    assert.equal(pm.trigger.kind, 'cli');
    assert.match(pm.trigger.startedBy ?? '', /^\d+@/, 'the starting CLI identity (pid@host)');
  });

  it('has every deploy step in order, done, with start, end and duration that add up', () => {
    assert.deepEqual(
      pm.steps.map((s) => s.name),
      deploySteps.map((s) => s.name),
    );
    let previousEnd = pm.startedAtMs;
    // A recording made before clusters held hosts skips that step (its run took the unpatched branch).
    // (The marker's id is inside its base64 payload: the decoded text holds it, the file's text does not.)
    const heldHosts = decodedText(readFileSync(join(dir, 'deploy-succeeded.json'), 'utf8')).includes(
      '"cluster-hold"',
    );
    for (const s of pm.steps) {
      if (s.name === 'holdHosts' && !heldHosts) {
        assert.equal(s.outcome, 'skipped', 'holdHosts skipped in a run recorded before it');
        continue;
      }
      // The recording's spec has no companions: their step is skipped, as the deploy's progress says.
      if (s.name === 'startCompanions') {
        assert.deepEqual([s.outcome, s.detail], ['skipped', 'no companions']);
        continue;
      }
      assert.equal(s.outcome, 'done', `${s.name} done`);
      assert.ok(s.startedAtMs !== undefined && s.endedAtMs !== undefined, `${s.name} has times`);
      assert.equal(s.durationMs, s.endedAtMs - s.startedAtMs);
      assert.ok(s.startedAtMs >= previousEnd - 5, `${s.name} starts after the step before it ended`);
      assert.equal(s.attempts, 1);
      previousEnd = s.endedAtMs;
    }
    assert.ok(pm.endedAtMs !== undefined && previousEnd <= pm.endedAtMs);
    assert.ok((step(pm, 'waitHealthy').durationMs ?? 0) > 1000, 'the load took the simulated shard time');
  });

  it('reads the load curve from the health polls, ending ready at every shard', () => {
    const shards = manifest.cluster.pace.default?.shards;
    assert.ok(pm.load && pm.load.polls >= 2);
    assert.equal(pm.load.samples.length, pm.load.polls);
    assert.deepEqual(
      { phase: pm.load.last?.phase, done: pm.load.last?.shardsDone, total: pm.load.last?.shardsTotal },
      { phase: 'ready', done: shards, total: shards },
    );
    const done = pm.load.samples.map((s) => s.shardsDone ?? 0);
    assert.deepEqual(
      done,
      [...done].sort((a, b) => a - b),
      'shards only go up',
    );
  });

  it('takes the result and the load time the workflow recorded', () => {
    assert.match(pm.result?.endpoint ?? '', /^http:\/\/[\d.]+:30000\/v1$/);
    assert.ok((pm.result?.tokensPerSecond ?? 0) > 0);
    assert.equal(pm.loadVsBaseline.loadSeconds, pm.result?.loadSeconds);
    assert.deepEqual(pm.loadVsBaseline.baseline.available, false);
    assert.equal(pm.failure, undefined);
  });

  it('shows the effective spec with the schema defaults applied', () => {
    const spec = pm.spec?.effective as { serve: { hostUnreachableTimeout: string }; onFailure: string };
    assert.equal(pm.spec?.valid, true);
    assert.equal(spec.serve.hostUnreachableTimeout, '2m', 'a default the input did not set');
  });

  it('is the same model from the JSON export and from the client’s protobuf history', () => {
    const json = load('deploy-succeeded.json');
    assert.deepEqual(buildPostmortem(asFetched(json)), buildPostmortem(json));
  });
});

describe('postmortem of a failed deploy (deploy-failed.json)', () => {
  const pm = buildPostmortem(load('deploy-failed.json'));

  it('is failed in waitHealthy with the failure type, message and last shard', () => {
    assert.equal(pm.outcome, 'failed');
    assert.equal(pm.failure?.type, 'ServerFatal');
    assert.equal(pm.failure?.step, 'waitHealthy');
    assert.match(pm.failure?.message ?? '', /^waitHealthy failed: vllm failed .* shard 3\/8/);
    assert.equal(step(pm, 'waitHealthy').outcome, 'failed');
    assert.equal(step(pm, 'smokeTest').outcome, 'not reached');
    assert.equal(step(pm, 'record').outcome, 'not reached');
    assert.equal(pm.load?.last?.shardsDone, 3);
    assert.equal(pm.load?.last?.shardsTotal, 8);
  });

  it('carries the diagnostics from every host and what happened to the containers', () => {
    assert.deepEqual(pm.failure?.diagnostics.map((d) => d.host).sort(), ['spark1', 'spark2']);
    const head = pm.failure?.diagnostics.find((d) => d.host === 'spark1');
    assert.match(head?.serveLogTail ?? '', /Loading safetensors checkpoint shards/);
    assert.match(head?.rayStatus ?? '', /Active:/);
    assert.deepEqual(pm.failure?.teardown, ['left for inspection (onFailure: leave)']);
    const diagnostics = step(pm, 'diagnostics');
    assert.equal(diagnostics.aftermath, true);
    assert.ok((diagnostics.startedAtMs ?? 0) >= (step(pm, 'waitHealthy').endedAtMs ?? Infinity));
  });

  it('the secret the recording gave the workers (by reference) is in neither the history nor any report', () => {
    const manifest = JSON.parse(readFileSync('test/histories/manifest.json', 'utf8')) as {
      histories: { file: string; plantedSecret?: { env: string; value: string } }[];
    };
    const planted = manifest.histories.find((h) => h.file === 'deploy-failed.json')?.plantedSecret;
    assert.ok(planted && planted.value.length >= 8, 'the recording planted a secret (see manifest.json)');
    const raw = readFileSync('test/histories/deploy-failed.json', 'utf8');
    for (const text of [raw, JSON.stringify(pm), renderMarkdown(pm), renderHtml(pm)]) {
      assert.ok(!text.includes(planted.value), 'the planted secret leaked');
    }
  });

  it('the markdown names the failure, every step with its duration, and the diagnostics', () => {
    const md = renderMarkdown(pm);
    assert.match(md, /^# Postmortem: deploy of replay — failed/);
    assert.match(md, /\*\*ServerFatal\*\* in step `waitHealthy`/);
    for (const s of pm.steps) {
      const row = md.split('\n').find((l) => l.includes(`(\`${s.name}\`)`));
      assert.ok(row, `a timeline row for ${s.name}`);
      if (s.durationMs !== undefined) assert.ok(row.includes(`| ${formatDuration(s.durationMs)} |`), row);
    }
    assert.match(md, /### spark2/);
    assert.match(md, /last progress: phase failed, shard 3\/8/);
    assert.match(md, /baseline unavailable: offline/);
  });

  it('the HTML has one Gantt row per step with its duration, and references nothing outside the file', () => {
    const html = renderHtml(pm);
    for (const s of pm.steps) {
      const row = new RegExp(`<g class="gantt-row" data-step="${s.name}"[^>]*>(.*?)</g>`).exec(html);
      assert.ok(row, `a Gantt row for ${s.name}`);
      if (s.durationMs !== undefined)
        assert.ok(row[1]?.includes(`<tspan class="step-duration">${formatDuration(s.durationMs)}</tspan>`));
    }
    assert.doesNotMatch(html, /<script|<link|<img|<iframe|\ssrc=|\shref=|url\((?!#)|@import/i);
    assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
  });
});

describe('postmortem of a resumed deploy (deploy-resumed.json)', () => {
  const pm = buildPostmortem(load('deploy-resumed.json'));

  it('shows both workers and the workflow task that timed out when the first one died', () => {
    assert.equal(pm.outcome, 'succeeded');
    assert.deepEqual(
      pm.workers.map((w) => w.identity).sort(),
      [...entry('deploy-resumed.json').workerIdentities].sort(),
    );
    assert.ok(pm.workflowTaskProblems.length >= 1);
    const [first, second] = pm.workers;
    assert.ok(first && second && first.lastSeenMs < second.firstSeenMs, 'the second worker took over after');
    const polls = step(pm, 'waitHealthy').activities.filter((a) => a.activityType === 'checkServeHealth');
    assert.ok(
      polls.some((p) => p.worker === first.identity) && polls.some((p) => p.worker === second.identity),
      'the load was polled by both workers',
    );
    assert.equal(pm.load?.last?.phase, 'ready');
  });
});

describe('retries, secrets and triggers (derived from the recorded histories)', () => {
  it('an activity retried twice shows its attempts and the errors the history kept', () => {
    const json = load('deploy-succeeded.json');
    const scheduled = json.events.find(
      (e) =>
        e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' &&
        (attrs(e, 'activityTaskScheduledEventAttributes').activityType as { name: string }).name ===
          'verifyGpusClear',
    );
    assert.ok(scheduled);
    const started = json.events.find(
      (e) =>
        e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED' &&
        attrs(e, 'activityTaskStartedEventAttributes').scheduledEventId === scheduled.eventId,
    );
    assert.ok(started);
    const completed = json.events.find(
      (e) =>
        e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED' &&
        attrs(e, 'activityTaskCompletedEventAttributes').scheduledEventId === scheduled.eventId,
    );
    assert.ok(completed);
    // What the server writes for a third attempt: the last attempt's start time, attempt 3, and the second
    // attempt's failure.
    started.eventTime = new Date(Date.parse(completed.eventTime as string) - 100).toISOString();
    Object.assign(attrs(started, 'activityTaskStartedEventAttributes'), {
      attempt: 3,
      lastFailure: {
        message: 'GPUs on spark1 are not clear: pid 4242 python3 (85183 MiB)',
        applicationFailureInfo: { type: 'GpuNotClear' },
      },
    });
    const pm = buildPostmortem(json);
    const gpu = step(pm, 'verifyGpusClear');
    assert.equal(gpu.attempts, 3);
    assert.equal(gpu.retries, 2);
    assert.equal(gpu.outcome, 'done');
    assert.deepEqual(
      pm.attemptErrors.map((e) => [e.step, e.attempt, e.final]),
      [['verifyGpusClear', 2, false]],
    );
    assert.match(pm.attemptErrors[0]?.error ?? '', /^GpuNotClear: GPUs on spark1 are not clear/);
    assert.ok(pm.notes.some((n) => /last two attempts/.test(n.text)));
    assert.match(renderHtml(pm), /<rect class="retry"/);
    assert.match(renderMarkdown(pm), /\| verifyGpusClear \| verifyGpusClear \| spark\d \| 2 \| `GpuNotClear/);
  });

  it('secrets in the spec (env and --api-key) appear nowhere in any format', () => {
    const json = load('deploy-failed.json');
    const start = attrs(json.events[0] as JsonEvent, 'workflowExecutionStartedEventAttributes');
    const payload = (start.input as { payloads: { data: string }[] }).payloads[0];
    assert.ok(payload);
    const spec = JSON.parse(unb64(payload.data)) as {
      serve: { env: Record<string, string>; args: string[] };
      ray: { env: Record<string, string> };
    };
    spec.serve.env.HF_TOKEN = 'hf_postmortemSecret1';
    spec.ray.env.AWS_SECRET_ACCESS_KEY = 'aws-postmortem-secret-2';
    spec.serve.args.push('--api-key', 'sk-postmortem-secret-3', '--max-num-batched-tokens', '8192');
    payload.data = b64(JSON.stringify(spec));
    // A secret quoted by a failure message is removed there too.
    const close = json.events.at(-1) as JsonEvent;
    const failure = attrs(close, 'workflowExecutionFailedEventAttributes').failure as { message: string };
    failure.message += '\nvllm serve --api-key sk-postmortem-secret-3';

    const pm = buildPostmortem(json);
    for (const text of [JSON.stringify(pm), renderMarkdown(pm), renderHtml(pm)]) {
      assert.doesNotMatch(text, /postmortemSecret1|postmortem-secret-2|postmortem-secret-3/);
    }
    const effective = pm.spec?.effective as typeof spec;
    assert.equal(effective.serve.env.HF_TOKEN, redactedMarker);
    assert.equal(effective.ray.env.AWS_SECRET_ACCESS_KEY, redactedMarker);
    assert.deepEqual(effective.serve.args.slice(-4), [
      '--api-key',
      redactedMarker,
      '--max-num-batched-tokens',
      '8192',
    ]);
    assert.match(pm.failure?.message ?? '', /--api-key \[redacted\]$/);
    for (const field of [
      'ray.env.AWS_SECRET_ACCESS_KEY',
      `serve.args[${effective.serve.args.length - 3}]`,
      'serve.env.HF_TOKEN',
    ])
      assert.ok(pm.spec?.redactedFields.includes(field), field);
  });

  it('a relaunch by the supervisor names the supervisor run whose history holds the failure bundle', () => {
    const json = load('deploy-succeeded.json');
    const start = attrs(json.events[0] as JsonEvent, 'workflowExecutionStartedEventAttributes');
    const relaunch = {
      supervisorWorkflowId: 'liftoff-replay-supervise',
      supervisorRunId: 'run-7',
      n: 2,
      cause: 'spark1 health: GET /health failed (curl exit 7)',
    };
    start.memo = {
      fields: {
        relaunch: { metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(relaunch)) },
      },
    };
    const pm = buildPostmortem(json);
    assert.deepEqual(pm.trigger.relaunch, relaunch);
    const md = renderMarkdown(pm);
    assert.match(md, /relaunch #2 by liftoff-replay-supervise/);
    assert.match(
      md,
      /declaring it lost\. The failure bundle .* collectFailureBundle result in its history: temporal workflow show --workflow-id liftoff-replay-supervise --run-id run-7/,
    );
    assert.match(md, /^- What the supervisor saw: `spark1 health: GET \/health failed \(curl exit 7\)`$/m);
  });

  it('a run started by a schedule says so, with the schedule id', () => {
    const json = load('deploy-succeeded.json');
    const start = attrs(json.events[0] as JsonEvent, 'workflowExecutionStartedEventAttributes');
    const input = start.input as { payloads: { data: string }[] };
    input.payloads = input.payloads.slice(0, 1);
    start.searchAttributes = {
      indexedFields: {
        TemporalScheduledById: { metadata: { encoding: b64('json/plain') }, data: b64('"liftoff-replay"') },
      },
    };
    // The workflow upserts the trigger it derived; without it the schedule id alone says "schedule".
    json.events = json.events.filter(
      (e) =>
        !(
          e.eventType === 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES' &&
          'LiftoffTrigger' in
            ((
              attrs(e, 'upsertWorkflowSearchAttributesEventAttributes').searchAttributes as {
                indexedFields: object;
              }
            ).indexedFields ?? {})
        ),
    );
    const pm = buildPostmortem(json);
    assert.equal(pm.trigger.kind, 'schedule');
    assert.equal(pm.trigger.scheduleId, 'liftoff-replay');
  });
});

describe('history listing rules', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const runs: ListedRun[] = [
    {
      workflowId: 'liftoff-a',
      runId: 'r1',
      status: 'COMPLETED',
      startTime: at(0),
      closeTime: at(50),
      trigger: 'cli',
      outcome: 'succeeded',
      loadSeconds: 30,
      memo: { summary: { totalSeconds: 49.5, loadSeconds: 30, tokensPerSecond: 12.5 } },
    },
    // A UI run that delegated to a child: the child (r3) is the deploy; this one is not listed twice.
    {
      workflowId: 'ui-1',
      runId: 'p1',
      status: 'COMPLETED',
      startTime: at(60),
      closeTime: at(120),
      trigger: 'ui',
      outcome: 'succeeded',
      memo: { deployWorkflowId: 'liftoff-a' },
    },
    {
      workflowId: 'liftoff-a',
      runId: 'r3',
      status: 'FAILED',
      startTime: at(61),
      closeTime: at(119),
      trigger: 'ui',
      outcome: 'failed',
    },
    // A schedule run refused because a deploy was running: the only record that it fired.
    {
      workflowId: 'liftoff-a-scheduled-x',
      runId: 'p2',
      status: 'FAILED',
      startTime: at(70),
      closeTime: at(71),
      trigger: 'schedule',
      outcome: 'refused',
      memo: { deployWorkflowId: 'liftoff-a' },
    },
    {
      workflowId: 'liftoff-a',
      runId: 'r4',
      status: 'RUNNING',
      startTime: at(200),
      trigger: 'cli',
      outcome: 'failed',
    },
  ];

  it('lists newest first, hides delegating runs unless refused, running has no outcome yet', () => {
    const entries = historyEntries(runs, 10);
    assert.deepEqual(
      entries.map((e) => [e.runId, e.trigger, e.outcome]),
      [
        ['r4', 'cli', 'running'],
        ['p2', 'schedule', 'refused'],
        ['r3', 'ui', 'failed'],
        ['r1', 'cli', 'succeeded'],
      ],
    );
    const r1 = entries.find((e) => e.runId === 'r1');
    assert.deepEqual([r1?.totalSeconds, r1?.loadSeconds, r1?.tokensPerSecond], [49.5, 30, 12.5]);
    assert.equal(entries.find((e) => e.runId === 'r3')?.totalSeconds, 58, 'from start and close time');
    assert.equal(historyEntries(runs, 2).length, 2);
  });

  it('median of earlier load times', () => {
    assert.equal(median([]), undefined);
    assert.equal(median([5]), 5);
    assert.equal(median([9, 1, 5]), 5);
    assert.equal(median([4, 1, 10, 6]), 5);
  });
});
