// A failed upgrade and its automatic rollback as `liftoff history` and `liftoff postmortem` show them, against a
// real dev server after real deploys on the simulated cluster: a deploy that serves (revision 1), then one whose
// server refuses its args after the stop (revision 2, bad), which continues as the rollback's deploy of
// revision 1 under the same workflow id. Online and from `temporal workflow show --output json` exports.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { liftoffArgv, runLiftoff, type CliRun } from '../helpers/cli.js';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { tempDir } from '../helpers/temp-dir.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import { simDeploySpec } from '../../sim/spec.js';
import { temporalCliPath } from '../../src/temporal/cli-path.js';
import type { HistoryReport } from '../../src/commands/history.js';
import type { Postmortem } from '../../src/report/index.js';
import { historyExportArgs } from '../../scripts/lib/history-export.js';

const execFileAsync = promisify(execFile);
const cluster = 'rbview';
const workflowId = deployWorkflowId(cluster);
const goodArgs = ['--gpu-memory-utilization', '0.85', '--max-model-len', '32768'];

describe('history and postmortem of a failed upgrade and its rollback', () => {
  const e2e = useE2eCluster({
    stateDir: '/tmp/liftoff-test-rollback-history',
    netIndex: 89,
    vllm: { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.2 },
  });
  const dir = tempDir('liftoff-rollback-history-');
  const runs: { first?: string; failed?: string; rollback?: string } = {};
  let rolledBack: DeployResult | undefined;

  const specOf = (args: string[]) => {
    const base = simDeploySpec(e2e.sim, { cluster });
    return { ...base, serve: { ...base.serve, args }, rollout: { onFailure: 'rollback' as const } };
  };
  const liftoff = (args: string[]): Promise<CliRun> =>
    runLiftoff(args, { ...process.env, ...e2e.temporalEnv }, 120_000);
  const postmortemJson = async (args: string[]): Promise<Postmortem> => {
    const r = await liftoff(['postmortem', ...args, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return JSON.parse(r.stdout) as Postmortem;
  };
  const exportHistory = async (runId: string, name: string): Promise<string> => {
    const { stdout } = await execFileAsync(
      temporalCliPath(),
      historyExportArgs({
        address: e2e.temporalEnv.TEMPORAL_ADDRESS,
        namespace: e2e.temporalEnv.TEMPORAL_NAMESPACE,
        workflowId,
        runId,
      }),
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const file = join(dir, `${name}.json`);
    writeFileSync(file, stdout);
    return file;
  };

  before(async () => {
    const { client } = e2e;
    const first = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [specOf(goodArgs), { trigger: 'cli', supervise: false }],
    });
    await first.result();
    runs.first = first.firstExecutionRunId;
    // vLLM refuses an argument it does not know: the server exits after the known-good was stopped.
    const upgrade = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [specOf([...goodArgs, '--bogus-flag']), { trigger: 'cli', supervise: false }],
    });
    runs.failed = upgrade.firstExecutionRunId;
    // result() follows the run the failed one continued as: the rollback's.
    rolledBack = await upgrade.result();
    runs.rollback = (await client.workflow.getHandle(workflowId).describe()).runId;
  });

  it('the deploy rolled back to revision 1 in a new run of the same workflow', () => {
    assert.equal(rolledBack?.rolledBack?.to, 1);
    assert.equal(rolledBack?.rolledBack?.from, 2);
    assert.notEqual(runs.rollback, runs.failed);
  });

  it('`history --json`: the rollback (trigger rollback, rollbackOf the failed run), the failed run rolled back', async () => {
    const r = await liftoff(['history', cluster, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const { entries } = JSON.parse(r.stdout) as HistoryReport;
    assert.deepEqual(
      entries.map((e) => [e.runId, e.trigger, e.outcome, e.rolledBackTo, e.rollbackOf]),
      [
        [runs.rollback, 'rollback', 'succeeded', undefined, `${workflowId}:${runs.failed}`],
        [runs.failed, 'cli', 'failed (rolled back to 1)', 1, undefined],
        [runs.first, 'cli', 'succeeded', undefined, undefined],
      ],
    );
    const text = await liftoff(['history', cluster]);
    assert.match(text.stdout, /cli\s+failed \(rolled back to 1\)/);
    assert.match(text.stdout, new RegExp(`^rollback ${runs.rollback} of ${workflowId}:${runs.failed}$`, 'm'));
  });

  it('`postmortem CLUSTER` is the rollback: what it rolls back, and the diff of the two recorded revisions', async () => {
    const pm = await postmortemJson([cluster]);
    assert.equal(pm.runId, runs.rollback);
    assert.equal(pm.outcome, 'succeeded');
    assert.equal(pm.trigger.kind, 'rollback');
    assert.equal(pm.rollback?.of?.to, 1);
    assert.equal(pm.rollback?.of?.from, 2);
    assert.equal(pm.rollback?.of?.failedRun, `${workflowId}:${runs.failed}`);
    assert.match(pm.rollback?.of?.cause ?? '', /bogus-flag/);
    const diff = pm.rollback?.diff;
    assert.equal(diff?.basis, 'revisions', 'online, both revisions are the cluster’s record');
    assert.ok(
      diff?.changes.some(
        (c) => c.field === 'spec.serve.args.4' && c.from === '--bogus-flag' && c.to === '(none)',
      ),
      JSON.stringify(diff?.changes),
    );
    const md = await liftoff(['postmortem', cluster]);
    assert.match(
      md.stdout,
      new RegExp(
        `^- Rollback of \`${workflowId}:${runs.failed}\`: revision 2 failed: \`.*; restores revision 1$`,
        'm',
      ),
    );
    const html = await liftoff(['postmortem', cluster, '--format', 'html']);
    assert.match(html.stdout, /<table id="rollback-diff" data-basis="revisions">/);
    assert.match(html.stdout, /<td><code>spec\.serve\.args\.4<\/code><\/td><td>--bogus-flag<\/td>/);
  });

  it('`postmortem --run FAILED`: failed in its step, with its cause, rolled back to revision 1 in the rollback run', async () => {
    const pm = await postmortemJson([cluster, '--run', runs.failed ?? '']);
    assert.equal(pm.outcome, 'failed');
    assert.ok(pm.failure?.step, 'the step it failed in');
    assert.match(pm.failure?.message ?? '', /bogus-flag/);
    assert.equal(pm.steps.find((s) => s.name === pm.failure?.step)?.outcome, 'failed');
    assert.ok(pm.failure?.diagnostics.length, 'the diagnostics it collected');
    assert.deepEqual(pm.rollback?.rolledBackTo, { revision: 1, runId: runs.rollback });
    assert.equal(pm.steps.find((s) => s.name === 'rollback')?.outcome, 'done');
    const md = await liftoff(['postmortem', cluster, '--run', runs.failed ?? '']);
    assert.match(md.stdout, new RegExp(`^- Rolled back: revision 1 \\(run \`${runs.rollback}\`\\)$`, 'm'));
  });

  it('offline: the failed run’s export links the rollback; the rollback’s alone cannot diff', async () => {
    const offlineEnv = { ...process.env, ...e2e.temporalEnv, TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const offline = async (file: string): Promise<Postmortem> => {
      const { stdout } = await execFileAsync(
        process.execPath,
        liftoffArgv(['postmortem', '--history', file, '--format', 'json']),
        { env: offlineEnv, maxBuffer: 16 * 1024 * 1024 },
      );
      return JSON.parse(stdout) as Postmortem;
    };
    const failed = await offline(await exportHistory(runs.failed ?? '', 'failed'));
    assert.equal(failed.outcome, 'failed');
    assert.deepEqual(failed.rollback?.rolledBackTo, { revision: 1, runId: runs.rollback });
    assert.ok(failed.rollback?.diff?.changes.some((c) => c.from === '--bogus-flag'));
    const rollback = await offline(await exportHistory(runs.rollback ?? '', 'rollback'));
    assert.equal(rollback.rollback?.of?.from, 2);
    assert.equal(rollback.rollback?.diff, undefined);
    assert.match(rollback.rollback?.diffUnavailable ?? '', /run the postmortem online/);
  });
});
