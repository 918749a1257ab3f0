// `liftoff history` and `liftoff postmortem` as a user runs them: separate CLI processes against a real dev
// server after real deploys on the simulated cluster (a spec with literal secrets refused by validation; two
// successes, one started the UI way; a failure with real activity retries; a schedule-style run refused while
// that deploy runs), then the offline path on a
// `temporal workflow show --output json` export.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { liftoffArgv, runLiftoff, type CliRun } from '../helpers/cli.js';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import { deploySteps, type DeployResult } from '../../src/workflows/steps.js';
import { setHostDown, setHostUp } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { temporalCliPath } from '../../src/temporal/cli-path.js';
import { formatDuration } from '../../src/config/duration.js';
import type { HistoryReport } from '../../src/commands/history.js';
import type { Postmortem } from '../../src/report/index.js';
import { historyExportArgs } from '../../scripts/lib/history-export.js';

const execFileAsync = promisify(execFile);
const stateDir = '/tmp/liftoff-test-history';
const clusterName = 'history';
const workflowId = deployWorkflowId(clusterName);
const secrets = ['hf_historySecretToken', 'sk-history-api-key'];

describe('liftoff history and postmortem', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 13,
    vllm: { shards: 8, shardSeconds: 0.15, graphCaptureSeconds: 0.3 },
  });
  const spec = () => simDeploySpec(e2e.sim, { cluster: clusterName });
  let cliEnv: NodeJS.ProcessEnv;
  let dir: string;
  const results: DeployResult[] = [];
  const runIds: {
    first?: string;
    ui?: string;
    uiParent?: string;
    refused?: string;
    failed?: string;
    leaky?: string;
  } = {};

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-history-'));
    cliEnv = { ...process.env, ...e2e.temporalEnv };
    const { client } = e2e;

    // 0. A spec pasted into the UI with literal secrets: validation refuses it, but the input (secrets and
    // all) is in that run's history, which a postmortem must not repeat.
    const leaky = {
      ...spec(),
      serve: {
        ...spec().serve,
        args: [...spec().serve.args, '--api-key', secrets[1]],
        env: { ...spec().serve.env, HF_TOKEN: secrets[0] },
      },
    };
    const leakyRun = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'history-leaky-run',
      args: [leaky],
    });
    await assert.rejects(leakyRun.result());
    runIds.leaky = leakyRun.firstExecutionRunId;

    // 1. A CLI deploy that succeeds.
    const first = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [spec(), { trigger: 'cli' }],
    });
    results.push(await first.result());
    runIds.first = first.firstExecutionRunId;

    // 2. A deploy started the way the UI's form starts it: another id, the deploy runs as its child.
    const ui = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'history-ui-run',
      args: [spec()],
    });
    results.push(await ui.result());
    runIds.uiParent = ui.firstExecutionRunId;
    runIds.ui = (await client.workflow.getHandle(workflowId).describe()).runId;

    // 3. A deploy that fails: spark2's sshd is down, so preflightHost is retried (real Temporal retries, each
    // with its error), then preflight fails naming spark2.
    await setHostDown(stateDir, 'spark2', 'sshd');
    try {
      const failing = await client.workflow.start(deploy, {
        taskQueue: TASK_QUEUE,
        workflowId,
        args: [spec(), { trigger: 'cli' }],
      });
      runIds.failed = failing.firstExecutionRunId;
      // 4. Meanwhile a second trigger fires: refused, since the cluster's deploy is running.
      const refused = await client.workflow.start(deploy, {
        taskQueue: TASK_QUEUE,
        workflowId: 'history-refused-run',
        args: [spec(), { trigger: 'schedule' }],
      });
      runIds.refused = refused.firstExecutionRunId;
      await assert.rejects(refused.result());
      await assert.rejects(failing.result());
    } finally {
      await setHostUp(stateDir, 'spark2');
    }
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const liftoff = (args: string[]): Promise<CliRun> => runLiftoff(args, cliEnv, 60_000);

  function assertNoSecret(text: string): void {
    for (const s of secrets) assert.ok(!text.includes(s), 'no secret in the output');
  }

  it('`history --json` lists the deploys newest first, the UI parent once (as its child), the refused run', async () => {
    // Visibility is eventually consistent: wait until the last run is listed with its outcome.
    let report: HistoryReport | undefined;
    for (let i = 0; i < 30; i++) {
      const run = await liftoff(['history', clusterName, '--json']);
      assert.equal(run.code, 0, run.stderr);
      report = JSON.parse(run.stdout) as HistoryReport;
      if (report.entries.length === 5 && report.entries.every((e) => e.outcome !== 'running')) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.ok(report);
    const rows = report.entries.map((e) => [e.runId, e.workflowId, e.trigger, e.outcome]);
    // The refused run started while the failing deploy ran, so it is newer than that deploy.
    assert.deepEqual(rows, [
      [runIds.refused, 'history-refused-run', 'schedule', 'refused'],
      [runIds.failed, workflowId, 'cli', 'failed'],
      [runIds.ui, workflowId, 'ui', 'succeeded'],
      [runIds.first, workflowId, 'cli', 'succeeded'],
      // A refused spec that names its cluster is on the record too.
      [runIds.leaky, 'history-leaky-run', 'ui', 'failed'],
    ]);
    const [, , ui, first] = report.entries;
    for (const [entry, result] of [
      [first, results[0]],
      [ui, results[1]],
    ] as const) {
      assert.equal(entry?.loadSeconds, result?.loadSeconds);
      assert.equal(entry?.totalSeconds, result?.totalSeconds);
      assert.equal(entry?.tokensPerSecond, result?.smoke.tokensPerSecond);
    }
    const text = await liftoff(['history', clusterName]);
    assert.equal(text.code, 0);
    const lines = text.stdout.trim().split('\n');
    assert.match(lines[0] ?? '', /^STARTED\s+TRIGGER\s+OUTCOME\s+TOTAL\s+LOAD\s+TOKENS\/S\s+WORKFLOW\s+RUN$/);
    assert.equal(lines.length, 6, 'a header and the five runs');
    assert.match(lines[1] ?? '', /schedule\s+refused/);
    console.log(`README history:\n${text.stdout}`);
    const limited = JSON.parse(
      (await liftoff(['history', clusterName, '--json', '--limit', '1'])).stdout,
    ) as HistoryReport;
    assert.equal(limited.entries.length, 1);
  });

  it('`postmortem CLUSTER --format json` of the failed deploy: retries with their errors, failure, baseline', async () => {
    const run = await liftoff(['postmortem', clusterName, '--format', 'json']);
    assert.equal(run.code, 0, run.stderr);
    assertNoSecret(run.stdout);
    const pm = JSON.parse(run.stdout) as Postmortem;
    assert.equal(pm.runId, runIds.failed);
    assert.equal(pm.outcome, 'failed');
    assert.equal(pm.failure?.type, 'PreflightFailed');
    assert.equal(pm.failure?.step, 'preflight');
    assert.match(pm.failure?.message ?? '', /spark2: ssh: /);
    const preflight = pm.steps.find((s) => s.name === 'preflight');
    assert.equal(preflight?.outcome, 'failed');
    assert.ok((preflight?.attempts ?? 0) > 1, `preflightHost was retried (${preflight?.attempts} attempts)`);
    const errors = pm.attemptErrors.filter((e) => e.step === 'preflight' && e.host === 'spark2');
    assert.ok(
      errors.some((e) => !e.final && e.attempt === (preflight?.attempts ?? 0) - 1),
      'the attempt before the last',
    );
    assert.ok(
      errors.some((e) => e.final && e.attempt === preflight?.attempts),
      'the last attempt',
    );
    assert.deepEqual(
      pm.steps.filter((s) => s.outcome === 'not reached').map((s) => s.name),
      deploySteps.map((s) => s.name).slice(2),
    );
    const loads = results.map((r) => r.loadSeconds).sort((a, b) => a - b);
    assert.deepEqual(pm.loadVsBaseline.baseline, {
      available: true,
      medianSeconds: ((loads[0] ?? 0) + (loads[1] ?? 0)) / 2,
      runs: 2,
    });
    assert.equal(pm.trigger.kind, 'cli');
    console.log(
      `FIGURE: failed deploy postmortem: preflightHost on spark2 ${preflight?.attempts} attempts, ${pm.attemptErrors.length} attempt errors, baseline median ${pm.loadVsBaseline.baseline.available ? pm.loadVsBaseline.baseline.medianSeconds.toFixed(1) : '?'} s over 2 runs`,
    );
  });

  it('`postmortem CLUSTER --run FIRST` (md): every step with its duration; no earlier run to compare', async () => {
    const run = await liftoff(['postmortem', clusterName, '--run', runIds.first ?? '']);
    assert.equal(run.code, 0, run.stderr);
    assertNoSecret(run.stdout);
    const json = JSON.parse(
      (await liftoff(['postmortem', clusterName, '--run', runIds.first ?? '', '--json'])).stdout,
    ) as Postmortem;
    assert.match(run.stdout, /^# Postmortem: deploy of history — succeeded/);
    for (const s of json.steps) {
      const row = run.stdout.split('\n').find((l) => l.includes(`(\`${s.name}\`)`));
      // A step the spec does not run (startCompanions without companions) is skipped, with no duration.
      if (s.outcome === 'skipped') {
        assert.ok(row?.includes('skipped'), `${s.name}: ${row}`);
        continue;
      }
      assert.ok(
        row && s.durationMs !== undefined && row.includes(`| ${formatDuration(s.durationMs)} |`),
        s.name,
      );
    }
    assert.match(
      run.stdout,
      /baseline unavailable: no earlier successful deploy of history recorded a load time/,
    );
    assert.match(run.stdout, /shard 8\/8/);
    console.log(`README postmortem md:\n${run.stdout.split('## Effective spec')[0]}`);
  });

  it('`postmortem UI_WORKFLOW_ID` follows the UI run to the deploy it started', async () => {
    const run = await liftoff(['postmortem', 'history-ui-run', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const pm = JSON.parse(run.stdout) as Postmortem;
    assert.equal(pm.workflowId, workflowId);
    assert.equal(pm.runId, runIds.ui);
    assert.equal(pm.trigger.kind, 'ui');
    assert.deepEqual(pm.trigger.parent, { workflowId: 'history-ui-run', runId: runIds.uiParent });
    assert.equal(pm.outcome, 'succeeded');
    assert.deepEqual(pm.loadVsBaseline.baseline, {
      available: true,
      medianSeconds: results[0]?.loadSeconds,
      runs: 1,
      deltaSeconds: (results[1]?.loadSeconds ?? 0) - (results[0]?.loadSeconds ?? 0),
      ratio: (results[1]?.loadSeconds ?? 0) / (results[0]?.loadSeconds ?? 1),
    });
  });

  it('`postmortem` of the refused run says refused, and an unknown target exits 2', async () => {
    const run = await liftoff(['postmortem', 'history-refused-run', '--json']);
    const pm = JSON.parse(run.stdout) as Postmortem;
    assert.equal(pm.outcome, 'refused');
    assert.equal(pm.failure?.type, 'DeployAlreadyRunning');
    assert.equal(pm.trigger.kind, 'schedule');
    const missing = await liftoff(['postmortem', 'no-such-cluster']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no workflow no-such-cluster .* liftoff-no-such-cluster/);
  });

  it('`postmortem` of a run whose spec held literal secrets shows them redacted, in every format', async () => {
    for (const format of ['md', 'json', 'html']) {
      const run = await liftoff(['postmortem', 'history-leaky-run', '--format', format]);
      assert.equal(run.code, 0, run.stderr);
      assertNoSecret(run.stdout);
      assert.match(run.stdout, /\[redacted\]/);
    }
    const pm = JSON.parse(
      (await liftoff(['postmortem', 'history-leaky-run', '--json'])).stdout,
    ) as Postmortem;
    assert.equal(pm.outcome, 'failed');
    assert.equal(pm.failure?.type, 'InvalidSpec');
    assert.equal(pm.steps[0]?.outcome, 'failed');
    assert.deepEqual(pm.spec?.redactedFields.sort(), [
      `serve.args[${spec().serve.args.length + 1}]`,
      'serve.env.HF_TOKEN',
    ]);
  });

  it('`postmortem --format html -o FILE` writes one self-contained file', async () => {
    const file = join(dir, 'failed.html');
    const run = await liftoff(['postmortem', clusterName, '--format', 'html', '-o', file]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stdout.trim(),
      `wrote html postmortem of ${workflowId} run ${runIds.failed} (failed) to ${file}`,
    );
    const html = readFileSync(file, 'utf8');
    assertNoSecret(html);
    assert.match(html, /^<!doctype html>/);
    assert.doesNotMatch(html, /<script|<link|<img|<iframe|\ssrc=|\shref=|url\((?!#)|@import/i);
    assert.match(html, /<g class="gantt-row" data-step="preflight" data-outcome="failed"/);
    assert.match(
      html,
      /<tspan class="step-attempts"[^>]*> · \d+ attempts<\/tspan>/,
      'retries show in the chart',
    );
    console.log(`README postmortem html: ${run.stdout.trim()}`);
  });

  it('offline: a `temporal workflow show --output json` export gives the same postmortem, without the baseline', async () => {
    const file = join(dir, 'failed-history.json');
    const { stdout } = await execFileAsync(
      temporalCliPath(),
      historyExportArgs({
        address: e2e.temporalEnv.TEMPORAL_ADDRESS,
        namespace: e2e.temporalEnv.TEMPORAL_NAMESPACE,
        workflowId,
        runId: runIds.failed ?? '',
      }),
      { maxBuffer: 16 * 1024 * 1024 },
    );
    writeFileSync(file, stdout);
    // No Temporal for the offline path: the address points nowhere.
    const offlineEnv = { ...cliEnv, TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const { stdout: offlineJson } = await execFileAsync(
      process.execPath,
      liftoffArgv(['postmortem', '--history', file, '--format', 'json']),
      { env: offlineEnv, maxBuffer: 16 * 1024 * 1024 },
    );
    const offline = JSON.parse(offlineJson) as Postmortem;
    const online = JSON.parse((await liftoff(['postmortem', clusterName, '--json'])).stdout) as Postmortem;
    assert.equal(offline.loadVsBaseline.baseline.available, false);
    assert.deepEqual({ ...offline, loadVsBaseline: undefined }, { ...online, loadVsBaseline: undefined });
    const md = await execFileAsync(
      process.execPath,
      liftoffArgv(['postmortem', clusterName, '--history', file]),
      { env: offlineEnv, maxBuffer: 16 * 1024 * 1024 },
    );
    assert.match(md.stdout, /baseline unavailable: offline/);
    assertNoSecret(md.stdout);
    const wrong = await execFileAsync(
      process.execPath,
      liftoffArgv(['postmortem', 'other', '--history', file]),
      {
        env: offlineEnv,
      },
    ).then(
      () => 0,
      (e: { code?: number }) => e.code ?? -1,
    );
    assert.equal(wrong, 2, 'a history of another cluster is refused');
    console.log(`README postmortem offline md:\n${md.stdout.split('## Timeline')[0]}`);
  });
});
