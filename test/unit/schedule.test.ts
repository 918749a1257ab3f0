// The schedule commands' local checks and renderings: cron and time zone validation before Temporal is asked,
// the stored spec shown without secrets, times in the schedule's zone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cronProblem, timezoneProblem } from '../../src/commands/schedule/cron.js';
import {
  formatInZone,
  memoOf,
  redactSpec,
  scheduleIdFor,
  scheduledWorkflowIdFor,
  specSummary,
} from '../../src/commands/schedule/common.js';
import { renderDetails, type ScheduleDetails } from '../../src/commands/schedule/describe.js';
import { renderList } from '../../src/commands/schedule/list.js';
import { parseSpec } from '../../src/config/load.js';
import { deploySpecSchema, type DeploySpec } from '../../src/config/schema.js';

describe('cronProblem', () => {
  for (const ok of [
    '0 4 * * *',
    '*/15 * * * *',
    '30 2 * * 1-5',
    '0 4 * * MON-FRI',
    '0 4 1,15 jan,jul *',
    '0 4 * * 7',
    '0 0 4 * * * 2030',
    '0 4 * * * 2027',
    '0 4 * * *  # nightly',
    '@daily',
    '@every 6h',
    '@every 1d/4h',
  ]) {
    it(`accepts ${JSON.stringify(ok)}`, () => assert.equal(cronProblem(ok), undefined));
  }

  const bad: [string, RegExp][] = [
    ['', /is empty/],
    ['0 4 * *', /has 4 fields; expected 5/],
    ['0 4 * * * * * *', /has 8 fields/],
    ['60 4 * * *', /^minute field "60": 60 is out of range 0-59$/],
    ['0 24 * * *', /^hour field "24": 24 is out of range 0-23$/],
    ['0 4 0 * *', /^day of month field "0": 0 is out of range 1-31$/],
    ['0 4 * 13 *', /^month field "13": 13 is out of range 1-12$/],
    ['0 4 * * 8', /^day of week field "8": 8 is out of range 0-7$/],
    ['0 4 * * MOON', /"MOON" is not a number or a name \(SUN, MON/],
    ['0 4 * * 5-1', /range "5-1" ends before it starts/],
    ['*/0 4 * * *', /step "0" is not a positive whole number/],
    ['0 4,,5 * * *', /hour field "4,,5": has an empty list item/],
    ['0 4 * * * 1900', /^year field "1900": 1900 is out of range/],
    ['@sometimes', /"@sometimes" is not one of @yearly/],
    ['CRON_TZ=Europe/Paris 0 4 * * *', /use --timezone instead/],
  ];
  for (const [expression, expected] of bad) {
    it(`rejects ${JSON.stringify(expression)}`, () => assert.match(cronProblem(expression) ?? '', expected));
  }
});

describe('timezoneProblem', () => {
  it('accepts IANA names', () => {
    for (const zone of ['UTC', 'Europe/Paris', 'America/Los_Angeles', 'Asia/Kolkata'])
      assert.equal(timezoneProblem(zone), undefined, zone);
  });
  it('rejects anything else, naming it', () => {
    assert.match(timezoneProblem('Mars/Olympus') ?? '', /"Mars\/Olympus" is not a time zone name/);
    assert.match(timezoneProblem('') ?? '', /is not a time zone name/);
  });
});

const spec = parseSpec(deploySpecSchema, {
  cluster: 'spark',
  ssh: { user: 'aurora', privateKeyPath: '/root/.ssh/id_ed25519' },
  hosts: [
    { name: 'spark1', address: '10.213.14.1', clusterIp: '10.213.114.1', role: 'head' },
    { name: 'spark2', address: '10.213.114.2', clusterIp: '10.213.114.2', jumpHost: 'spark1' },
  ],
  ray: {
    image: 'vllm/vllm-openai:latest',
    container: 'vllm_ray',
    env: { RAY_memory_monitor_refresh_ms: '0', WANDB_API_KEY: { fromFile: '/etc/liftoff/wandb' } },
    volumes: ['/home/aurora/.cache/huggingface:/root/.cache/huggingface'],
  },
  serve: {
    model: 'Org/Model',
    tensorParallelSize: 2,
    args: ['--max-model-len', '4096'],
    env: { HF_TOKEN: { fromEnv: 'HF_TOKEN' }, VLLM_LOGGING_LEVEL: 'INFO' },
    logPath: '/home/aurora/serve.log',
  },
});

// A spec stored by a liftoff from before secrets became references: literal values the schema now refuses.
const legacy: DeploySpec = {
  ...spec,
  ray: { ...spec.ray, env: { ...spec.ray.env, WANDB_API_KEY: 'wandb-secret-1' } },
  serve: {
    ...spec.serve,
    args: ['--api-key', 'sk-secret-2', '--max-model-len', '4096'],
    env: { ...spec.serve.env, HF_TOKEN: 'hf_secret_3' },
  },
};
const secrets = ['wandb-secret-1', 'sk-secret-2', 'hf_secret_3'];

describe('a stored spec, shown', () => {
  it('redactSpec hides literal secret env values and --api-key in an older stored spec', () => {
    const shown = redactSpec(legacy);
    const text = JSON.stringify(shown);
    for (const s of secrets) assert.ok(!text.includes(s), `${s} hidden`);
    assert.equal(shown.serve.env.HF_TOKEN, '[redacted]');
    assert.equal(shown.ray.env.WANDB_API_KEY, '[redacted]');
    assert.deepEqual(shown.serve.args, ['--api-key', '[redacted]', '--max-model-len', '4096']);
    assert.equal(shown.serve.env.VLLM_LOGGING_LEVEL, 'INFO');
    assert.deepEqual({ ...shown, ray: legacy.ray, serve: legacy.serve }, legacy);
    assert.equal(legacy.serve.env.HF_TOKEN, 'hf_secret_3', 'the original is not modified');
  });

  it('redactSpec keeps a current spec as it is: its secrets are references', () => {
    assert.deepEqual(redactSpec(spec), spec);
  });

  it('specSummary names hosts, model, env names and where secrets come from, never a secret', () => {
    const lines = specSummary(spec);
    assert.equal(
      lines[0],
      'cluster spark: spark1 (head, 10.213.14.1), spark2 (worker, 10.213.114.2 via spark1)',
    );
    const text = lines.join('\n');
    assert.match(text, /model Org\/Model, tensor parallel 2, port 8000/);
    assert.match(
      text,
      /ray\.env RAY_memory_monitor_refresh_ms=0 WANDB_API_KEY=\(worker file \/etc\/liftoff\/wandb\)/,
    );
    assert.match(text, /serve\.env HF_TOKEN=\(worker env HF_TOKEN\) VLLM_LOGGING_LEVEL=INFO/);
    const old = specSummary(legacy).join('\n');
    for (const s of secrets) assert.ok(!old.includes(s), `${s} hidden`);
    assert.match(old, /HF_TOKEN=\[redacted\]/);
  });

  it('describe renders the spec, next runs in the zone and each run with its outcome', () => {
    const details: ScheduleDetails = {
      scheduleId: 'liftoff-spark',
      cluster: 'spark',
      cron: '0 4 * * *',
      timezone: 'Europe/Paris',
      paused: false,
      overlap: 'SKIP',
      catchupWindowMs: 600_000,
      workflowIdPrefix: 'liftoff-spark-scheduled',
      taskQueue: 'liftoff',
      spec: redactSpec(legacy),
      nextRuns: ['2026-12-03T03:00:00.000Z', '2026-07-03T02:00:00.000Z'],
      recentRuns: [
        {
          workflowId: 'liftoff-spark-scheduled-2026-12-02T03:00:00Z',
          runId: 'r2',
          scheduledAt: '2026-12-02T03:00:00.000Z',
          startedAt: '2026-12-02T03:00:00.100Z',
          outcome: 'refused',
          message: 'a deploy of spark is already running',
        },
      ],
      actionsTaken: 1,
      skippedOverlap: 2,
      missedCatchupWindow: 0,
      createdAt: '2026-12-01T00:00:00.000Z',
    };
    const text = renderDetails(details);
    for (const s of secrets) assert.ok(!text.includes(s), `${s} hidden`);
    assert.match(
      text,
      /next runs:\n {2}2026-12-03 04:00 Europe\/Paris {2}\(2026-12-03T03:00:00\.000Z\)\n {2}2026-07-03 04:00 Europe\/Paris/,
    );
    assert.match(text, /skipped 2 \(a scheduled run was still going\)/);
    assert.match(
      text,
      /2026-12-02 04:00 Europe\/Paris +liftoff-spark-scheduled-2026-12-02T03:00:00Z +refused: a deploy of spark is already running/,
    );
    assert.match(renderDetails({ ...details, paused: true }), /next runs:\n {2}none while paused/);
  });

  it('list renders one row per schedule, with its last outcome', () => {
    const text = renderList([
      {
        scheduleId: 'liftoff-spark',
        cluster: 'spark',
        cron: '0 4 * * *',
        timezone: 'UTC',
        paused: true,
        lastRun: {
          workflowId: 'w',
          runId: 'r',
          scheduledAt: '2026-12-02T04:00:00.000Z',
          startedAt: '2026-12-02T04:00:00.000Z',
          outcome: 'succeeded',
        },
      },
    ]);
    const [header, row] = text.split('\n');
    assert.match(header ?? '', /^CLUSTER +SCHEDULE +CRON +PAUSED +NEXT RUN +LAST OUTCOME$/);
    assert.match(
      row ?? '',
      /^spark +liftoff-spark +0 4 \* \* \* \(UTC\) +yes +- +succeeded \(2026-12-02 04:00 UTC\)$/,
    );
    assert.match(renderList([]), /no liftoff schedules/);
  });
});

describe('ids, memo and times', () => {
  it('a schedule is liftoff-<cluster>; its runs start as liftoff-<cluster>-scheduled-<time>', () => {
    assert.equal(scheduleIdFor('spark'), 'liftoff-spark');
    assert.equal(scheduledWorkflowIdFor('spark'), 'liftoff-spark-scheduled');
  });

  it('memoOf recognises liftoff schedules only', () => {
    assert.deepEqual(memoOf({ memo: { cluster: 'spark', cron: '0 4 * * *', timezone: 'Europe/Paris' } }), {
      cluster: 'spark',
      cron: '0 4 * * *',
      timezone: 'Europe/Paris',
    });
    assert.equal(memoOf({ memo: {} }), undefined);
    assert.equal(memoOf({}), undefined);
    assert.equal(memoOf({ memo: { cluster: 'spark' } })?.timezone, 'UTC');
  });

  it('formatInZone reads a time in the zone, with seconds only when there are some', () => {
    assert.equal(formatInZone('2026-12-03T03:00:00.000Z', 'Europe/Paris'), '2026-12-03 04:00 Europe/Paris');
    assert.equal(formatInZone('2026-07-03T02:00:00.000Z', 'Europe/Paris'), '2026-07-03 04:00 Europe/Paris');
    assert.equal(formatInZone('2026-12-02T20:22:05.658Z', 'UTC'), '2026-12-02 20:22:05 UTC');
  });
});
