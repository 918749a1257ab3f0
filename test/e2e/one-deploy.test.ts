// One deploy per cluster, whoever starts it (CLI, the Temporal UI under another workflow id, a schedule). Real dev
// server, real worker, real sshd on two namespace hosts; the CLI runs as a separate process. `liftoff cancel` and
// its teardown are tested on real Docker Engines (docker-faults.test.ts), where what the hosts' Docker lists is the
// evidence.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { runLiftoff, type CliRun } from '../helpers/cli.js';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { headLaunches } from '../helpers/host-logs.js';
import { waitUntil } from '../helpers/wait.js';
import { TASK_QUEUE, deployWorkflowId, searchAttributes } from '../../src/shared/constants.js';
import { deploy, progressQuery } from '../../src/workflows/index.js';
import type { DeployProgress } from '../../src/workflows/steps.js';
import { simDeploySpec } from '../../sim/spec.js';
import { tempDir } from '../helpers/temp-dir.js';

const stateDir = '/tmp/liftoff-test-one-deploy';
const clusterName = 'one-deploy';
const workflowId = deployWorkflowId(clusterName);

describe('one deploy per cluster', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 11,
    vllm: { shards: 39, shardSeconds: 0.25, graphCaptureSeconds: 0.5 },
    workerPolicy: { fromEnv: ['SIM_TEST_VLLM_API_KEY'] },
  });
  const specFile = join(tempDir('liftoff-one-deploy-'), 'cluster.yaml');
  before(() => {
    writeFileSync(specFile, stringify(simDeploySpec(e2e.sim, { cluster: clusterName })));
  });

  const liftoff = (args: string[]): Promise<CliRun> =>
    runLiftoff(args, { ...process.env, ...e2e.temporalEnv });

  const launches = () => headLaunches(e2e.sim);

  async function progressOf(): Promise<DeployProgress> {
    return e2e.client.workflow.getHandle(workflowId).query(progressQuery);
  }

  async function expectRefused(run: Promise<unknown>): Promise<ApplicationFailure> {
    const error = await run.then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof WorkflowFailedError, `the run was refused: ${String(error)}`);
    assert.ok(error.cause instanceof ApplicationFailure, String(error.cause));
    return error.cause;
  }

  it('refuses a second deploy from the CLI, the UI and a schedule while one runs, naming it', async () => {
    const first = await liftoff(['deploy', '-c', specFile, '--json']);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    await waitUntil(
      'the first deploy to reach the load',
      async () => (await progressOf()).load !== undefined,
      90_000,
    );

    const second = await liftoff(['deploy', '-c', specFile]);
    assert.equal(second.code, 1, second.stdout);
    assert.match(second.stderr, new RegExp(`already running \\(workflow ${workflowId}\\)`));
    console.log(
      `FIGURE: CLI second deploy refused in ${second.ms} ms (whole CLI process), naming ${workflowId}`,
    );

    // The Temporal UI starts the workflow type with a generated id and the spec as input.
    const uiStartedAt = Date.now();
    const ui = await expectRefused(
      e2e.client.workflow.execute(deploy, {
        taskQueue: TASK_QUEUE,
        workflowId: `ui-${Date.now()}`,
        args: [simDeploySpec(e2e.sim, { cluster: clusterName })],
      }),
    );
    assert.equal(ui.type, 'DeployAlreadyRunning');
    assert.match(
      ui.message,
      new RegExp(`already running \\(workflow ${workflowId}\\); this ui run started nothing`),
    );
    console.log(`FIGURE: UI-started run (other workflow id) refused in ${Date.now() - uiStartedAt} ms`);

    const scheduleId = `${clusterName}-nightly`;
    const schedule = await e2e.client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '365 days' }] },
      action: {
        type: 'startWorkflow',
        workflowType: deploy,
        workflowId: `${workflowId}-scheduled`,
        taskQueue: TASK_QUEUE,
        args: [simDeploySpec(e2e.sim, { cluster: clusterName })],
      },
      state: { paused: true },
    });
    try {
      await schedule.trigger();
      let scheduledId: string | undefined;
      await waitUntil(
        'the scheduled run to start',
        async () => {
          scheduledId = (await schedule.describe()).info.recentActions[0]?.action.workflow.workflowId;
          return scheduledId !== undefined;
        },
        90_000,
      );
      assert.ok(scheduledId);
      const scheduled = await expectRefused(e2e.client.workflow.getHandle(scheduledId).result());
      assert.equal(scheduled.type, 'DeployAlreadyRunning');
      assert.match(scheduled.message, /this schedule run started nothing/);
      const described = await e2e.client.workflow.getHandle(scheduledId).describe();
      assert.equal(described.typedSearchAttributes.get(searchAttributes.trigger), 'schedule');
      assert.equal(described.typedSearchAttributes.get(searchAttributes.outcome), 'refused');
      console.log(`FIGURE: scheduled run ${scheduledId} refused; trigger=schedule, outcome=refused`);
    } finally {
      await schedule.delete();
    }

    // The refused runs touched nothing: the first deploy goes on and finishes with its one launch.
    const result = await e2e.client.workflow.getHandle<typeof deploy>(workflowId).result();
    assert.equal(result.cluster, clusterName);
    assert.equal(launches(), 1, 'one launch: the refused runs launched nothing');
  });

  it('runs a UI-started deploy under the cluster id when none is running (server with an API key)', async () => {
    const uiId = `ui-run-${Date.now()}`;
    // The key is a reference the worker (this process) resolves: the health check and the smoke test must send it.
    const apiKey = `sk-test-${Date.now().toString(36)}`;
    process.env.SIM_TEST_VLLM_API_KEY = apiKey;
    const base = simDeploySpec(e2e.sim, { cluster: clusterName });
    const spec = {
      ...base,
      serve: {
        ...base.serve,
        env: { ...base.serve.env, VLLM_API_KEY: { fromEnv: 'SIM_TEST_VLLM_API_KEY' } },
      },
    };
    const result = await e2e.client.workflow.execute(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: uiId,
      args: [spec],
    });
    const head = e2e.sim.hosts[0];
    assert.ok(head);
    const models = `http://${head.address}:30000/v1/models`;
    assert.equal((await fetch(models)).status, 401, 'the server wants the key');
    assert.equal((await fetch(models, { headers: { authorization: `Bearer ${apiKey}` } })).status, 200);
    assert.ok(result.smoke.text.length > 0, 'the smoke test got an answer with the key');
    // Every string and every payload's bytes as text, so a key inside any payload would show.
    const texts: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') texts.push(v);
      else if (v instanceof Uint8Array) texts.push(Buffer.from(v).toString('utf8'));
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk((await e2e.client.workflow.getHandle(workflowId).fetchHistory()).events);
    const history = texts.join('\n');
    assert.ok(history.includes('VLLM_API_KEY'), 'the scan sees payload text');
    assert.ok(!history.includes(apiKey), 'the key is not in the history');
    assert.equal(result.cluster, clusterName);
    const child = await e2e.client.workflow.getHandle(workflowId).describe();
    assert.equal(child.status.name, 'COMPLETED');
    assert.equal(child.parentExecution?.workflowId, uiId);
    assert.equal(child.typedSearchAttributes.get(searchAttributes.trigger), 'ui');
    assert.equal(launches(), 2);
  });
});
