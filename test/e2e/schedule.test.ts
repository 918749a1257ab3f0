// `liftoff schedule …` through the CLI as a separate process, against a real Temporal dev server, a real worker
// and a simulated 2-host cluster: create (validation, the stored spec), list, describe (next runs, outcomes,
// no secrets), trigger (a scheduled run deploys under the cluster id; an overlapping fire is skipped; a fire while
// a CLI deploy runs is refused), pause/unpause, delete.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ScheduleNotFoundError } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { runLiftoff, type CliRun } from '../helpers/cli.js';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { headLaunches } from '../helpers/host-logs.js';
import { deployWorkflowId, searchAttributes } from '../../src/shared/constants.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import type { ScheduleCreated } from '../../src/commands/schedule/create.js';
import type { ScheduleListEntry } from '../../src/commands/schedule/list.js';
import type { ScheduleDetails } from '../../src/commands/schedule/describe.js';
import type { SchedulePauseReport } from '../../src/commands/schedule/pause.js';
import type { ScheduleTriggerReport } from '../../src/commands/schedule/trigger.js';
import type { ScheduleDeleteReport } from '../../src/commands/schedule/delete.js';
import { simDeploySpec } from '../../sim/spec.js';

const stateDir = '/tmp/liftoff-test-schedule';
const clusterName = 'sched';
const scheduleId = `liftoff-${clusterName}`;
const secret = 'hf_sched_e2e_secret_value';
// The spec names the secret; only the worker (this process) has its value.
const secretVar = 'SIM_SCHEDULE_TEST_HF_TOKEN';
const secretRef = { fromEnv: secretVar };

/** The hour a time has in a zone. */
function hourIn(iso: string, timeZone: string): number {
  return Number(
    new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', hourCycle: 'h23' }).format(new Date(iso)),
  );
}

describe('liftoff schedule (real dev server, CLI as a separate process)', () => {
  let workDir: string;
  let specFile: string;
  let cliEnv: NodeJS.ProcessEnv;

  before(() => {
    process.env[secretVar] = secret;
  });
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 14,
    // A load of a few seconds: long enough for a second trigger to find the first run still going.
    vllm: { shards: 20, shardSeconds: 0.15, graphCaptureSeconds: 0.3 },
    workerPolicy: { fromEnv: [secretVar] },
  });

  before(() => {
    workDir = mkdtempSync(join(tmpdir(), 'liftoff-schedule-'));
    specFile = join(workDir, 'cluster.yaml');
    writeSpec(specFile, secretRef);
    const { [secretVar]: _workerOnly, ...withoutSecret } = process.env;
    cliEnv = { ...withoutSecret, ...e2e.temporalEnv };
  });

  after(() => {
    delete process.env[secretVar];
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  function writeSpec(file: string, hfToken: string | typeof secretRef): void {
    const spec = simDeploySpec(e2e.sim, { cluster: clusterName });
    writeFileSync(
      file,
      stringify({ ...spec, serve: { ...spec.serve, env: { ...spec.serve.env, HF_TOKEN: hfToken } } }),
    );
  }

  const liftoff = (args: string[]): Promise<CliRun> => runLiftoff(args, cliEnv);
  /** `schedule create` of the spec, daily at 04:00 in `timezone`. */
  const createAt4In = (timezone: string) => [
    'schedule',
    'create',
    '-c',
    specFile,
    '--cron',
    '0 4 * * *',
    '--timezone',
    timezone,
  ];

  async function liftoffJson<T>(args: string[], expectedCode = 0): Promise<T> {
    const run = await liftoff([...args, '--json']);
    assert.equal(run.code, expectedCode, `liftoff ${args.join(' ')}: ${run.stderr}${run.stdout}`);
    assert.ok(!run.stdout.includes(secret), 'no secret in the output');
    return JSON.parse(run.stdout) as T;
  }

  const launches = () => headLaunches(e2e.sim);

  it('create refuses a bad spec, cron or time zone with exit 2, naming the field, and creates nothing', async () => {
    // The spec is stored in Temporal, so the deploy loader's rules apply: a secret written out is refused.
    const badSpecFile = join(workDir, 'bad.yaml');
    writeSpec(badSpecFile, secret);
    const badSpec = await liftoff(['schedule', 'create', '-c', badSpecFile, '--cron', '0 4 * * *']);
    assert.equal(badSpec.code, 2, badSpec.stderr);
    assert.match(badSpec.stderr, /serve\.env\.HF_TOKEN: looks like a secret/);
    assert.ok(!badSpec.stderr.includes(secret));

    const badCron = await liftoff(['schedule', 'create', '-c', specFile, '--cron', '0 25 * * *']);
    assert.equal(badCron.code, 2, badCron.stderr);
    assert.match(badCron.stderr, /--cron "0 25 \* \* \*" hour field "25": 25 is out of range 0-23/);

    const badZone = await liftoff(createAt4In('Mars/Olympus'));
    assert.equal(badZone.code, 2, badZone.stderr);
    assert.match(badZone.stderr, /--timezone "Mars\/Olympus" is not a time zone name/);

    const missing = await liftoff(['schedule', 'create', '-c', specFile]);
    assert.equal(missing.code, 2, 'a missing --cron is a usage error');

    const schedules: string[] = [];
    for await (const summary of e2e.client.schedule.list()) schedules.push(summary.scheduleId);
    assert.deepEqual(schedules, []);
  });

  it('create stores the spec in a SKIP schedule; list and describe show it, its next runs and no secret', async () => {
    const created = await liftoffJson<ScheduleCreated>(createAt4In('Europe/Paris'));
    assert.equal(created.scheduleId, scheduleId);
    assert.equal(created.paused, false);
    assert.ok(created.nextRuns.length >= 3, 'next runs listed');
    for (const t of created.nextRuns) assert.equal(hourIn(t, 'Europe/Paris'), 4, `${t} is 04:00 in Paris`);

    // What Temporal holds: the deploy workflow with the validated spec, SKIP, the cluster in memo and attributes.
    const held = await e2e.client.schedule.getHandle(scheduleId).describe();
    assert.equal(held.policies.overlap, 'SKIP');
    assert.equal(held.action.workflowType, 'deploy');
    assert.equal(held.action.taskQueue, 'liftoff');
    assert.equal(held.action.workflowId, `${deployWorkflowId(clusterName)}-scheduled`);
    const args: readonly unknown[] = held.action.args ?? [];
    const [storedSpec, options] = args;
    assert.deepEqual(options, { trigger: 'schedule' });
    assert.equal((storedSpec as { cluster: string }).cluster, clusterName);
    assert.deepEqual(
      (storedSpec as { serve: { env: Record<string, unknown> } }).serve.env.HF_TOKEN,
      secretRef,
    );
    assert.equal(held.memo?.cluster, clusterName);
    const attributes = held.action.typedSearchAttributes;
    assert.ok(attributes instanceof TypedSearchAttributes);
    assert.equal(attributes.get(searchAttributes.cluster), clusterName);
    assert.equal(attributes.get(searchAttributes.trigger), 'schedule');

    const again = await liftoff(['schedule', 'create', '-c', specFile, '--cron', '0 5 * * *']);
    assert.equal(again.code, 2);
    assert.match(again.stderr, new RegExp(`schedule ${scheduleId} already exists`));

    // Temporal's schedule listing is eventually consistent: a schedule appears in it shortly after creation.
    let listed: ScheduleListEntry[] = [];
    for (const until = Date.now() + 15_000; listed.length === 0 && Date.now() < until;) {
      listed = await liftoffJson<ScheduleListEntry[]>(['schedule', 'list']);
    }
    assert.equal(listed.length, 1);
    // --json leaves out what is unset: no note, no last run yet.
    assert.deepEqual(listed[0], {
      scheduleId,
      cluster: clusterName,
      cron: '0 4 * * *',
      timezone: 'Europe/Paris',
      paused: false,
      nextRun: created.nextRuns[0],
    });

    // By cluster name: the default id is found.
    const details = await liftoffJson<ScheduleDetails>(['schedule', 'describe', clusterName]);
    assert.equal(details.scheduleId, scheduleId);
    assert.equal(details.overlap, 'SKIP');
    assert.deepEqual(details.nextRuns.slice(0, 3), created.nextRuns.slice(0, 3));
    assert.deepEqual(details.spec?.serve.env.HF_TOKEN, secretRef);
    assert.equal(details.spec?.serve.model, 'Qwen/Qwen3.5-122B-A10B-FP8');
    assert.deepEqual(details.recentRuns, []);

    const text = await liftoff(['schedule', 'describe', scheduleId]);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(!text.stdout.includes(secret), 'no secret in the text form');
    assert.match(text.stdout, new RegExp(`HF_TOKEN=\\(worker env ${secretVar}\\)`));
    assert.match(text.stdout, /next runs:\n {2}\d{4}-\d\d-\d\d 04:00 Europe\/Paris/);
  });

  it('trigger starts a run that deploys under the cluster id; a trigger while it runs is skipped (SKIP)', async () => {
    const triggered = await liftoffJson<ScheduleTriggerReport>(['schedule', 'trigger', clusterName]);
    assert.equal(triggered.outcome, 'started');
    const run = triggered.run;
    assert.ok(run);
    assert.match(run.workflowId, new RegExp(`^liftoff-${clusterName}-scheduled-\\d{4}-\\d\\d-\\d\\dT`));

    // Fired while that run is still going: the schedule's overlap policy skips it.
    const overlapping = await liftoffJson<ScheduleTriggerReport>(['schedule', 'trigger', scheduleId], 1);
    assert.equal(overlapping.outcome, 'skipped');
    assert.deepEqual(overlapping.running, [run.workflowId]);

    const parent = await e2e.client.workflow.getHandle(run.workflowId, run.runId).describe();
    assert.equal(parent.typedSearchAttributes.get(searchAttributes.trigger), 'schedule');
    assert.equal(parent.typedSearchAttributes.get(searchAttributes.cluster), clusterName);
    assert.equal(parent.memo?.deployWorkflowId, deployWorkflowId(clusterName));

    const result = (await e2e.client.workflow.getHandle(run.workflowId, run.runId).result()) as DeployResult;
    assert.equal(result.cluster, clusterName);
    const child = await e2e.client.workflow.getHandle(deployWorkflowId(clusterName)).describe();
    assert.equal(child.status.name, 'COMPLETED');
    assert.equal(child.parentExecution?.workflowId, run.workflowId);
    assert.equal(child.typedSearchAttributes.get(searchAttributes.trigger), 'schedule');
    assert.equal(child.typedSearchAttributes.get(searchAttributes.outcome), 'succeeded');
    assert.equal(launches(), 1, 'one launch: the skipped fire started nothing');

    const details = await liftoffJson<ScheduleDetails>(['schedule', 'describe', scheduleId]);
    assert.equal(details.actionsTaken, 1);
    assert.equal(details.skippedOverlap, 1);
    assert.equal(details.recentRuns.length, 1);
    assert.equal(details.recentRuns[0]?.workflowId, run.workflowId);
    assert.equal(details.recentRuns[0]?.outcome, 'succeeded');
    assert.equal(details.recentRuns[0]?.deployWorkflowId, deployWorkflowId(clusterName));
    console.log(
      `FIGURE: scheduled run ${run.workflowId} deployed ${clusterName} in ${result.totalSeconds.toFixed(1)} s; overlapping trigger skipped (skippedOverlap=1), 1 launch`,
    );
  });

  it('a scheduled run while a CLI deploy runs is refused, and describe and list say so', async () => {
    const deployed = await liftoff(['deploy', '-c', specFile, '--json']);
    assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
    const triggered = await liftoffJson<ScheduleTriggerReport>(
      ['schedule', 'trigger', clusterName, '--wait'],
      1,
    );
    assert.equal(triggered.outcome, 'started');
    assert.equal(triggered.run?.outcome, 'refused');
    assert.match(
      triggered.run?.message ?? '',
      new RegExp(
        `already running \\(workflow ${deployWorkflowId(clusterName)}\\); this schedule run started nothing`,
      ),
    );
    const refusedId = triggered.run?.workflowId;
    assert.ok(refusedId);

    // The CLI's deploy was not disturbed.
    const cliDeploy = e2e.client.workflow.getHandle(deployWorkflowId(clusterName));
    const described = await cliDeploy.describe();
    assert.equal(described.typedSearchAttributes.get(searchAttributes.trigger), 'cli');
    await cliDeploy.result();
    assert.equal(launches(), 2, 'the refused run launched nothing');

    const details = await liftoffJson<ScheduleDetails>(['schedule', 'describe', scheduleId]);
    assert.deepEqual(
      details.recentRuns.map((r) => r.outcome),
      ['refused', 'succeeded'],
    );
    assert.equal(details.recentRuns[0]?.workflowId, refusedId);
    const text = await liftoff(['schedule', 'describe', scheduleId]);
    assert.match(
      text.stdout,
      new RegExp(`${refusedId} +refused: a deploy of ${clusterName} is already running`),
    );

    const listed = await liftoffJson<ScheduleListEntry[]>(['schedule', 'list']);
    assert.equal(listed[0]?.lastRun?.outcome, 'refused');
  });

  it('pause and unpause with a note, then delete; a deleted schedule is gone for every command', async () => {
    const paused = await liftoffJson<SchedulePauseReport>([
      'schedule',
      'pause',
      clusterName,
      '--note',
      'GPU maintenance',
    ]);
    assert.deepEqual({ paused: paused.paused, note: paused.note }, { paused: true, note: 'GPU maintenance' });
    const held = await e2e.client.schedule.getHandle(scheduleId).describe();
    assert.equal(held.state.paused, true);
    assert.equal(held.state.note, 'GPU maintenance');
    const whilePaused = await liftoffJson<ScheduleDetails>(['schedule', 'describe', scheduleId]);
    assert.equal(whilePaused.paused, true);
    assert.deepEqual(whilePaused.nextRuns, []);

    const unpaused = await liftoffJson<SchedulePauseReport>(['schedule', 'unpause', scheduleId]);
    assert.equal(unpaused.paused, false);
    assert.ok(unpaused.nextRun && hourIn(unpaused.nextRun, 'Europe/Paris') === 4);
    assert.equal((await e2e.client.schedule.getHandle(scheduleId).describe()).state.paused, false);

    const deleted = await liftoffJson<ScheduleDeleteReport>(['schedule', 'delete', clusterName]);
    assert.deepEqual(deleted, { scheduleId, cluster: clusterName, deleted: true, stillRunning: [] });
    await assert.rejects(e2e.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);

    for (const command of ['describe', 'trigger']) {
      const gone = await liftoff(['schedule', command, clusterName]);
      assert.equal(gone.code, 2, `${command} after delete: ${gone.stderr}`);
      assert.match(gone.stderr, new RegExp(`no liftoff schedule ${clusterName}`));
    }
  });
});
