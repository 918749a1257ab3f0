// The Temporal UI as a deploy trigger and a progress view, in Debian's headless Chromium against the UI that the
// embedded dev server serves. A deploy started from the Start Workflow form must behave like one from the CLI:
// same validation, same one-deploy-per-cluster rule, same progress. Real dev server, real worker, real sshd on two
// namespace hosts (spark2 reachable only through spark1).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Client, Connection, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Browser, Locator, Page } from 'playwright-core';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { createLiftoffWorker } from '../../src/worker.js';
import { simWorkerPolicy } from '../helpers/worker-policy.js';
import { TASK_QUEUE, deployWorkflowId, searchAttributes } from '../../src/shared/constants.js';
import { deploy, progressQuery } from '../../src/workflows/index.js';
import { deploySteps, type DeployProgress } from '../../src/workflows/steps.js';
import { downCluster, upCluster, type SimCluster } from '../../sim/cluster.js';
import { paths, readHostConfig, writeJson } from '../../sim/host-state.js';
import { simDeploySpec } from '../../sim/spec.js';
import { launchChromium, newPage, type RecordedRequest } from '../helpers/browser.js';
import { headLaunches } from '../helpers/host-logs.js';
import { tearDown } from '../helpers/teardown.js';
import {
  clusterWorkflowId as clusterWorkflowIdOf,
  type ClusterRecord,
} from '../../src/shared/cluster-api.js';
import type { DownResult } from '../../src/workflows/down.js';
import { waitUntil } from '../helpers/wait.js';
import { freeLoopbackPort } from '../../scripts/lib/free-port.js';

const stateDir = '/tmp/liftoff-test-ui';
const temporalDir = '/tmp/liftoff-test-ui-temporal';
const namespace = 'default';
const clusterName = 'ui-test';
const clusterWorkflowId = deployWorkflowId(clusterName);
// Long enough that the first deploy is still loading while the browser looks at it and the form is refused, also
// on a loaded machine (at 0.25 s a shard the load of 60 s ended first there); it is cancelled once that is seen.
const slowLoad = { shards: 240, shardSeconds: 0.5, graphCaptureSeconds: 0.5 };
const screenshot = (name: string) => `/tmp/liftoff-ui-${name}.png`;

async function failureOf(run: Promise<unknown>): Promise<unknown> {
  return run.then(
    () => assert.fail('the run succeeded, but it should have failed'),
    (e: unknown) => e,
  );
}

async function applicationFailureOf(run: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await failureOf(run);
  assert.ok(error instanceof WorkflowFailedError, `the run failed: ${String(error)}`);
  assert.ok(error.cause instanceof ApplicationFailure, String(error.cause));
  return error.cause;
}

interface FormSubmission {
  /** The request the form's Start Workflow button sent. */
  request: RecordedRequest;
  status: number;
  /** The toast the UI showed after the request. */
  toast: string;
}

describe('the Temporal UI: live progress of a deploy, and the Start Workflow form as a trigger', () => {
  let sim: SimCluster;
  let server: DevServer | undefined;
  let workerConnection: NativeConnection | undefined;
  let worker: Worker | undefined;
  let workerRunning: Promise<void> | undefined;
  let connection: Connection | undefined;
  let client: Client;
  let browser: Browser | undefined;
  let page: Page;
  let requests: RecordedRequest[];
  let firstDeploy: WorkflowHandle<typeof deploy>;
  let firstRunId: string;

  before(async () => {
    await downCluster(stateDir);
    rmSync(temporalDir, { recursive: true, force: true });
    const [port, uiPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
    // Settle all three before going on, so `after` finds (and stops) whichever of them did start.
    const started = await Promise.allSettled([
      upCluster({
        hosts: 2,
        mode: 'netns',
        stateDir,
        netIndex: 15,
        clusterOnly: ['spark2'],
        vllm: slowLoad,
      }).then((s) => (sim = s)),
      startDevServer({ stateDir: temporalDir, port, uiPort, namespace }).then((s) => (server = s)),
      launchChromium().then((b) => (browser = b)),
    ]);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    assert.ok(server && browser);
    workerConnection = await NativeConnection.connect({ address: server.address });
    worker = await createLiftoffWorker({
      connection: workerConnection,
      namespace,
      policy: simWorkerPolicy(sim),
    });
    workerRunning = worker.run();
    // `after` awaits it and reports its error; this only keeps an early failure from being unhandled meanwhile.
    workerRunning.catch(() => undefined);
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection, namespace });
    ({ page, requests } = await newPage(browser));
  });

  after(() =>
    tearDown([
      () => browser?.close(),
      async () => {
        worker?.shutdown();
        await workerRunning;
      },
      () => workerConnection?.close(),
      () => connection?.close(),
      () => server?.stop(),
      () => downCluster(stateDir),
      () => rmSync(temporalDir, { recursive: true, force: true }),
    ]),
  );

  const ui = (path: string) => `${server?.uiUrl ?? ''}/namespaces/${namespace}${path}`;
  const spec = () => simDeploySpec(sim, { cluster: clusterName });

  const launches = () => headLaunches(sim);

  /** When the UI does not do what a step expects, keep what the browser saw: a screenshot, the URL, the text. */
  async function withEvidence<T>(name: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      const path = `/tmp/liftoff-ui-failure-${name}.png`;
      await page.screenshot({ path, fullPage: true }).catch(() => undefined);
      const text = await page
        .locator('body')
        .innerText()
        .catch(() => '(no text)');
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(
        `${message}\nat ${page.url()} (screenshot ${path}); the page said:\n${text.slice(0, 1500)}`,
        {
          cause: err,
        },
      );
    }
  }

  /**
   * Opens a UI page and waits for `ready`. On a loaded machine the UI sometimes answers its own API call with
   * its "Uh oh. There's an error" page (a 500 from the UI server); a user would reload, and so does this, up to
   * twice, logging what it saw.
   */
  async function gotoUi(path: string, ready: Locator): Promise<void> {
    await page.goto(ui(path));
    for (let reloads = 0; ; reloads++) {
      try {
        await ready.waitFor({ timeout: 15_000 });
        return;
      } catch (err) {
        if (reloads >= 2) throw err;
        const text = (
          await page
            .locator('body')
            .innerText()
            .catch(() => '')
        )
          .slice(0, 200)
          .replace(/\s+/g, ' ');
        console.log(`UI page ${path} not ready within 15 s (${text}); reloading`);
        await page.reload();
      }
    }
  }

  /** Opens a run's page, waits until it shows every expected text, and keeps a screenshot. */
  async function openRun(workflowId: string, expected: (string | RegExp)[], shot: string): Promise<void> {
    await withEvidence(`run-${workflowId}`, async () => {
      const [first, ...rest] = expected;
      await gotoUi(`/workflows/${workflowId}`, page.getByText(first ?? workflowId).first());
      for (const text of rest) await page.getByText(text).first().waitFor({ timeout: 15_000 });
    });
    await page.screenshot({ path: screenshot(shot), fullPage: true });
  }

  /**
   * Opens the Start Workflow page. Once in several runs on a loaded machine the page stayed without its form for
   * 30 s; a user would reload, and so does this, once, keeping a screenshot of what it saw.
   */
  async function openStartForm(workflowId: string): Promise<void> {
    await page.goto(ui('/workflows/start-workflow'));
    const form = page.getByTestId('workflowId');
    try {
      await form.waitFor({ timeout: 20_000 });
    } catch {
      const path = `/tmp/liftoff-ui-failure-form-${workflowId}-before-reload.png`;
      await page.screenshot({ path, fullPage: true });
      console.log(`the Start Workflow form did not appear within 20 s at ${page.url()} (${path}); reloading`);
      await page.reload();
      await form.waitFor({ timeout: 20_000 });
    }
  }

  /** Fills the Start Workflow form the way a user would, presses Start Workflow and reads the UI's answer. */
  async function submitStartForm(
    workflowId: string,
    input: unknown,
    shot?: string,
    workflowType = 'deploy',
  ): Promise<FormSubmission> {
    await withEvidence(`form-${workflowId}`, async () => {
      await openStartForm(workflowId);
      await page.getByTestId('workflowId').fill(workflowId);
      await page.getByTestId('taskQueue').fill(TASK_QUEUE);
      await page.getByTestId('workflowType').fill(workflowType);
      await page.getByRole('textbox', { name: 'Data' }).fill(JSON.stringify(input, null, 2));
      assert.ok(await page.locator('input[name="encoding"][value="json/plain"]').isChecked(), 'json/plain');
    });
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    const apiPath = `/api/v1/namespaces/${namespace}/workflows/${encodeURIComponent(workflowId)}`;
    const answered = page.waitForResponse(
      (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === apiPath,
    );
    await page.getByTestId('start-workflow-button').click();
    const response = await answered;
    const toast = page.getByText(/Workflow started successfully|Error starting Workflow/);
    await toast.first().waitFor({ timeout: 10_000 });
    const request = [...requests]
      .reverse()
      .find((r) => r.method === 'POST' && new URL(r.url).pathname === apiPath);
    assert.ok(request, `the form sent POST ${apiPath}`);
    const alerts = await page.getByRole('alert').allInnerTexts();
    return {
      request,
      status: response.status(),
      toast: [await toast.first().innerText(), ...alerts].join('\n'),
    };
  }

  /** The spec the form sent, decoded from the request body exactly as the server will read it. */
  function sentInput(request: RecordedRequest): { encoding: string; value: unknown; payloads: number } {
    const body = JSON.parse(request.body ?? '{}') as {
      workflowType?: { name?: string };
      taskQueue?: { name?: string };
      input?: { payloads?: { metadata?: { encoding?: string }; data?: string }[] };
    };
    assert.equal(body.workflowType?.name, 'deploy');
    assert.equal(body.taskQueue?.name, TASK_QUEUE);
    const payloads = body.input?.payloads ?? [];
    const first = payloads[0];
    assert.ok(first?.data && first.metadata?.encoding, 'one payload with data and encoding');
    return {
      encoding: Buffer.from(first.metadata.encoding, 'base64').toString('utf8'),
      value: JSON.parse(Buffer.from(first.data, 'base64').toString('utf8')) as unknown,
      payloads: payloads.length,
    };
  }

  /** The Queries tab: picks `progress`, runs it, and reads the JSON the UI shows. */
  async function runProgressQuery(): Promise<DeployProgress> {
    await page.getByTestId('queries-tab').click();
    await page.getByTestId('query-select-button').click();
    await page.getByRole('option', { name: 'progress', exact: true }).click();
    const queried = page.waitForResponse(
      (r) =>
        r.request().method() === 'POST' &&
        r.url().includes(`/workflows/${clusterWorkflowId}/`) &&
        r.url().includes('query'),
    );
    await page.getByRole('button', { name: 'Run Query' }).click();
    const queryResponse = await queried;
    assert.equal(queryResponse.status(), 200, await queryResponse.text());
    const result = page.getByRole('textbox', { name: 'Query Result' });
    await result.getByText('"steps"').waitFor({ timeout: 10_000 });
    await page.screenshot({ path: screenshot('progress-query'), fullPage: true });
    // The editor only draws the lines in view; without formatting the whole result is one line, all drawn.
    await page.getByText('JSON Formatting').click();
    await result.getByText(/^\{"cluster"/).waitFor({ timeout: 10_000 });
    return JSON.parse(await result.innerText()) as DeployProgress;
  }

  it('opens a running deploy and shows its progress: current details, refreshed live, and the progress query', async () => {
    const started = await client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: clusterWorkflowId,
      args: [spec(), { trigger: 'cli' }],
    });
    firstDeploy = started;
    firstRunId = started.firstExecutionRunId;
    await waitUntil(
      'the deploy to be loading',
      async () => ((await firstDeploy.query(progressQuery)).load?.shardsDone ?? 0) >= 2,
      60_000,
    );
    const openedAt = Date.now();

    // The UI renders the workflow's current details (markdown) in an iframe of its own /render page.
    const details = page.frameLocator('#user-metadata-current-details').locator('body');
    const loadLine = /load: loading_weights, shard (\d+) of 240/;
    const shown = await withEvidence('current-details', async () => {
      await gotoUi(`/workflows/${clusterWorkflowId}`, page.getByTestId('user-metadata-tab'));
      await page.getByTestId('user-metadata-tab').click();
      await details.getByText(loadLine).waitFor({ timeout: 15_000 });
      return details.innerText();
    });
    assert.match(shown, new RegExp(`${clusterName} — running, step waitHealthy`));
    // Every step before the load is done.
    const loading = deploySteps.findIndex((s) => s.name === 'waitHealthy');
    for (const step of deploySteps.slice(0, loading))
      assert.ok(shown.includes(`✓ ${step.title}`), step.title);
    assert.match(shown, /… Wait until the server is healthy/);
    const firstShard = Number(loadLine.exec(shown)?.[1]);
    await page.screenshot({ path: screenshot('current-details'), fullPage: true });
    console.log(`UI current details at open: ${loadLine.exec(shown)?.[0] ?? '?'}`);

    // Live: once the load has moved on, R (the UI's refresh key) shows the new shard.
    await waitUntil(
      'the load to move on',
      async () => ((await firstDeploy.query(progressQuery)).load?.shardsDone ?? 0) > firstShard + 2,
      60_000,
    );
    await page.locator('body').press('r');
    let refreshedShard = firstShard;
    await withEvidence('refresh', () =>
      waitUntil(
        'the refreshed details to show a later shard',
        async () => {
          refreshedShard = Number(loadLine.exec(await details.innerText())?.[1] ?? firstShard);
          return refreshedShard > firstShard;
        },
        10_000,
      ),
    );

    // The Queries tab runs the `progress` query and shows its JSON.
    const progress = await withEvidence('progress-query', () => runProgressQuery());
    assert.equal(progress.cluster, clusterName);
    assert.equal(progress.trigger, 'cli');
    assert.equal(progress.status, 'running');
    assert.equal(progress.currentStep, 'waitHealthy');
    assert.deepEqual(
      progress.steps.map((s) => s.name),
      deploySteps.map((s) => s.name),
    );
    assert.deepEqual(
      progress.steps.slice(0, loading).map((s) => s.status),
      progress.steps.slice(0, loading).map(() => 'done'),
    );
    assert.equal(progress.steps[loading]?.status, 'running');
    assert.equal(progress.load?.shardsTotal, 240);
    assert.ok((progress.load?.shardsDone ?? 0) >= refreshedShard, 'the query is as fresh as the details');
    console.log(
      `FIGURE: UI showed the running deploy's details (shard ${firstShard}/240, after R shard ${refreshedShard}/240) and the progress query (shard ${progress.load?.shardsDone}/240) within ${((Date.now() - openedAt) / 1000).toFixed(1)} s; screenshots ${screenshot('current-details')}, ${screenshot('progress-query')}`,
    );
  });

  it('refuses a deploy started from the form while the cluster deploys, and starts nothing', async () => {
    assert.equal((await firstDeploy.describe()).status.name, 'RUNNING', 'the first deploy still runs');
    const uiId = `ui-${clusterName}-busy`;
    const submitted = await submitStartForm(uiId, spec(), screenshot('start-form'));
    assert.equal(submitted.status, 200, submitted.toast);
    assert.match(submitted.toast, /Workflow started successfully/);
    // The form sends the frontend's HTTP API one json/plain payload: exactly the spec, as the CLI would.
    const sent = sentInput(submitted.request);
    assert.equal(sent.encoding, 'json/plain');
    assert.equal(sent.payloads, 1);
    assert.deepEqual(sent.value, spec());

    const refused = await applicationFailureOf(client.workflow.getHandle(uiId).result());
    assert.equal(refused.type, 'DeployAlreadyRunning');
    assert.match(
      refused.message,
      new RegExp(`already running \\(workflow ${clusterWorkflowId}\\); this ui run started nothing`),
    );
    const described = await client.workflow.getHandle(uiId).describe();
    const refusedInMs = (described.closeTime?.getTime() ?? NaN) - described.startTime.getTime();
    assert.equal(described.typedSearchAttributes.get(searchAttributes.trigger), 'ui');
    assert.equal(described.typedSearchAttributes.get(searchAttributes.outcome), 'refused');
    const first = await client.workflow.getHandle(clusterWorkflowId).describe();
    assert.equal(first.runId, firstRunId, 'the cluster id still holds the first deploy');
    assert.equal(first.status.name, 'RUNNING');
    assert.equal(launches(), 1, 'the refused run launched nothing');

    // The failure as the UI shows it on the run's page: the status, and the message in the Result panel.
    await openRun(uiId, [/^failed$/i, 'this ui run started nothing'], 'refused');

    // Typing the cluster's own id into the form is refused by Temporal itself, before any run starts.
    const direct = await submitStartForm(clusterWorkflowId, spec());
    assert.notEqual(direct.status, 200);
    assert.match(direct.toast, /Error starting Workflow/);
    assert.match(direct.toast, new RegExp(`already running\\. WorkflowId: ${clusterWorkflowId}`));
    await page.screenshot({ path: screenshot('already-running'), fullPage: true });
    assert.equal((await client.workflow.getHandle(clusterWorkflowId).describe()).runId, firstRunId);
    console.log(
      `FIGURE: form-started run refused with DeployAlreadyRunning ${refusedInMs} ms after it started (server times); the cluster's own id typed into the form refused by Temporal (HTTP ${direct.status}); screenshots ${screenshot('start-form')}, ${screenshot('refused')}, ${screenshot('already-running')}`,
    );

    // Done with the slow first deploy: cancel it (teardown runs) so the next tests find the cluster idle.
    await firstDeploy.cancel();
    const cancelled = await failureOf(firstDeploy.result());
    assert.ok(
      cancelled instanceof WorkflowFailedError && cancelled.cause instanceof CancelledFailure,
      String(cancelled),
    );
  });

  it('fails a form-started run with an invalid spec as InvalidSpec naming the field, and starts nothing', async () => {
    const before = launches();
    const uiId = `ui-${clusterName}-invalid`;
    const bad = { ...spec(), serve: { ...spec().serve, port: 70000 } };
    const submitted = await submitStartForm(uiId, bad);
    assert.equal(submitted.status, 200, submitted.toast);
    const failure = await applicationFailureOf(client.workflow.getHandle(uiId).result());
    assert.equal(failure.type, 'InvalidSpec');
    assert.match(failure.message, /serve\.port: expected a port from 1 to 65535/);

    const { events } = await client.workflow.getHandle(uiId).fetchHistory();
    assert.ok(events, 'history');
    assert.equal(
      events.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).length,
      0,
      'no deploy child started',
    );
    assert.equal(events.filter((e) => e.activityTaskScheduledEventAttributes).length, 0, 'no activity ran');
    assert.equal((await client.workflow.getHandle(clusterWorkflowId).describe()).runId, firstRunId);
    assert.equal(launches(), before);

    await openRun(uiId, [/^failed$/i, 'serve.port: expected a port from 1 to 65535'], 'invalid-spec');
  });

  it('runs a deploy started from the form as the cluster deploy (child, trigger ui) to completion', async () => {
    // The first deploy needed a slow load to be watched; this one only has to finish.
    const head = sim.hosts[0];
    assert.ok(head);
    const config = readHostConfig(head.hostDir);
    writeJson(paths.config(head.hostDir), { ...config, vllm: { ...config.vllm, shards: 10 } });

    const before = launches();
    const uiId = `ui-${clusterName}-1`;
    const startedAt = Date.now();
    const submitted = await submitStartForm(uiId, spec());
    assert.equal(submitted.status, 200, submitted.toast);
    assert.match(submitted.toast, /Workflow started successfully/);

    const parent = client.workflow.getHandle<typeof deploy>(uiId);
    const result = await parent.result();
    assert.equal(result.cluster, clusterName);
    assert.ok(result.smoke.completionTokens > 0, 'the smoke test got an answer');
    const child = await client.workflow.getHandle(clusterWorkflowId).describe();
    assert.equal(child.status.name, 'COMPLETED');
    assert.equal(child.parentExecution?.workflowId, uiId);
    assert.equal(child.typedSearchAttributes.get(searchAttributes.trigger), 'ui');
    assert.equal(child.typedSearchAttributes.get(searchAttributes.outcome), 'succeeded');
    assert.equal(child.typedSearchAttributes.get(searchAttributes.cluster), clusterName);
    const parentDescribed = await parent.describe();
    assert.equal(parentDescribed.typedSearchAttributes.get(searchAttributes.trigger), 'ui');
    assert.equal(parentDescribed.typedSearchAttributes.get(searchAttributes.outcome), 'succeeded');
    assert.deepEqual(parentDescribed.memo, { deployWorkflowId: clusterWorkflowId });
    assert.equal(launches(), before + 1, 'one launch');
    const childProgress = await client.workflow.getHandle(clusterWorkflowId).query(progressQuery);
    assert.equal(childProgress.trigger, 'ui');
    assert.equal(childProgress.status, 'succeeded');

    // The child's page: completed, its parent is the form's run, and the result holds the endpoint.
    await openRun(
      clusterWorkflowId,
      [/^completed$/i, new RegExp(`^${uiId}$`), '"endpoint"'],
      'form-deploy-completed',
    );
    console.log(
      `FIGURE: deploy started from the form ran as child ${clusterWorkflowId} (trigger ui) and completed in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; screenshot ${screenshot('form-deploy-completed')}`,
    );
    // The UI reaches out to the internet on its own (a news feed); the browser helper stopped every such request.
    const blocked = [...new Set(requests.filter((r) => !r.allowed).map((r) => new URL(r.url).host))];
    console.log(`UI requests blocked because they left the machine: ${blocked.join(', ') || 'none'}`);
  });

  it('hands the hosts over with takeOver in a spec pasted into the form, and takes a cluster down from the form', async () => {
    // The cluster of the last test holds the hosts; another cluster takes them over from the form.
    const other = 'ui-other';
    const uiId = `ui-${other}-take-over`;
    const submitted = await submitStartForm(uiId, {
      ...simDeploySpec(sim, { cluster: other }),
      takeOver: true,
    });
    assert.equal(submitted.status, 200, submitted.toast);
    const result = await client.workflow.getHandle<typeof deploy>(uiId).result();
    assert.equal(result.cluster, other);
    const handedOver = (await client.workflow
      .getHandle(clusterWorkflowIdOf(clusterName))
      .result()) as ClusterRecord;
    assert.equal(handedOver.state, 'handed over');
    assert.match(
      handedOver.reason ?? '',
      new RegExp(`handed over to ${other} by liftoff-${other} \\(trigger ui\\)`),
    );

    const downId = `ui-${other}-down`;
    const down = await submitStartForm(downId, { cluster: other }, screenshot('down-form'), 'down');
    assert.equal(down.status, 200, down.toast);
    const done = (await client.workflow.getHandle(downId).result()) as DownResult;
    assert.equal(done.alreadyDown, false);
    assert.deepEqual(
      done.hosts.map((h) => h.gpus),
      sim.hosts.map(() => 'clear'),
    );
    const record = (await client.workflow.getHandle(clusterWorkflowIdOf(other)).result()) as ClusterRecord;
    assert.equal(record.state, 'down');
    assert.match(record.reason ?? '', new RegExp(`taken down by ${downId}`));
    await openRun(downId, [/^completed$/i, '"alreadyDown": false'], 'down-completed');
  });
});
