// Issue 32, traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, `liftoff deploy` (the CLI, its own process) and the
// worker send OpenTelemetry spans over OTLP/HTTP, one trace from the CLI's start of the workflow down to the
// activity: StartWorkflow:deploy (liftoff-cli) → RunWorkflow:deploy → StartActivity → RunActivity (liftoff-worker).
// No simulated cluster: a real Temporal dev server, the worker in this process, and a deploy the worker's policy
// refuses in its validate step (its checkWorkerPolicy activity), before anything connects to a host. The
// collector is a node:http server on loopback that keeps the JSON bodies POSTed to /v1/traces.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { Worker } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { clusterWorkflowId, releaseUpdate } from '../../src/shared/cluster-api.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLiftoffWorker } from '../../src/worker.js';
import { workflowBundle } from '../../src/temporal/workflow-bundle.js';
import { loadWorkerPolicy } from '../../src/config/worker-policy.js';
import { createDevServerEnv } from '../helpers/temporal.js';
import { runLiftoff } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait.js';

/** One span as the OTLP JSON encoding has it (ids in hex), with the service that sent it. */
interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, unknown>;
  /** OTLP's status: code 2 is an error. */
  status: { code?: number; message?: string };
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}
interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: {
      spans?: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        attributes?: OtlpKeyValue[];
        status?: { code?: number; message?: string };
      }[];
    }[];
  }[];
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries(
    (list ?? []).map((a) => [a.key, a.value?.stringValue ?? a.value?.intValue ?? a.value?.boolValue]),
  );
}

function spansOf(body: OtlpTraces): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes)['service.name']);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        name: s.name,
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        attributes: attributesOf(s.attributes),
        status: s.status ?? {},
      })),
    );
  });
}

/** A collector that takes OTLP/HTTP JSON trace exports and keeps their spans. */
function startCollector(): Promise<{
  server: Server;
  url: string;
  spans: ReceivedSpan[];
  contentTypes: Set<string>;
}> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.add(String(req.headers['content-type']));
      spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpTraces));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, spans, contentTypes });
    });
  });
}

/** A one-host spec whose host is a loopback port nothing listens on: each deploy fails at its first SSH. */
function unreachableSpec(
  cluster: string,
  privateKeyPath: string,
  knownHostsPath: string,
  serveEnv: Record<string, { fromEnv: string }> = {},
) {
  return {
    cluster,
    ssh: { user: 'nobody', privateKeyPath, knownHostsPath },
    hosts: [{ name: 'h1', address: '127.0.0.1', port: 1, clusterIp: '127.0.0.1', role: 'head' }],
    gpu: { perHost: 1 },
    ray: { image: 'liftoff/none:1', container: 'traces_ray' },
    serve: {
      model: 'none/none',
      modelPath: '/nonexistent/liftoff-traces-weights',
      port: 30000,
      tensorParallelSize: 1,
      logPath: '/tmp/liftoff-traces-never.log',
      ...(Object.keys(serveEnv).length > 0 ? { env: serveEnv } : {}),
    },
  };
}
describe('traces of a deploy, from the CLI to the activity', () => {
  const dir = tempDir('liftoff-traces-');
  let env: TestWorkflowEnvironment | undefined;
  let collector: Awaited<ReturnType<typeof startCollector>> | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const otelEnv = (url: string) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: url,
    // The batch goes out within 100 ms instead of 5 s.
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });

  before(async () => {
    collector = await startCollector();
    // The worker reads the standard OTel environment of its process, as `liftoff worker` does.
    Object.assign(process.env, otelEnv(collector.url));
    env = await createDevServerEnv();
    worker = await createLiftoffWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      // The defaults: whatever the spec says, its serve.env may not read the worker's own settings. Its home is
      // the test's folder, so a spec may name the key and known_hosts under dir/.ssh (the child test's does).
      policy: loadWorkerPolicy({}, dir),
    });
    running = worker.run();
  });

  after(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await env?.teardown();
    collector?.server.close();
  });

  it('one trace: the CLI starts it, the workflow run and its activity are in it, each under its parent', async () => {
    assert.ok(env && collector);
    // Refused in validate by the worker's policy (checkWorkerPolicy, an activity), before any host is contacted;
    // the hosts are loopback addresses nothing listens on besides.
    const specPath = join(dir, 'spec.yaml');
    writeFileSync(
      specPath,
      stringify({
        ...unreachableSpec('traces', join(dir, 'id_ed25519'), join(dir, 'known_hosts'), {
          HF_TOKEN: { fromEnv: 'LIFTOFF_PAYLOAD_KEY' },
        }),
      }),
    );
    // --follow: the CLI polls the deploy's progress query until it ends, and those polls make no span.
    const cli = await runLiftoff(['deploy', '-c', specPath, '--follow'], {
      ...process.env,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: env.namespace ?? 'default',
      ...otelEnv(collector.url),
    });
    assert.notEqual(cli.code, 0, `the deploy is refused: ${cli.stdout}${cli.stderr}`);
    assert.match(cli.stdout + cli.stderr, /refused by the worker policy/);

    const spans = collector.spans;
    const named = (name: string) => spans.find((s) => s.name === name);
    const start = await waitFor(
      'the spans of the CLI and the worker',
      () => {
        const found = named('StartWorkflow:deploy');
        return found && named('RunWorkflow:deploy') && named('RunActivity:checkWorkerPolicy')
          ? found
          : undefined;
      },
      15_000,
      { detail: () => `spans so far: ${spans.map((s) => `${s.service} ${s.name}`).join(', ')}` },
    );
    console.log(`spans: ${spans.map((s) => `${s.service}:${s.name}`).join(', ')}`);
    assert.deepEqual([...collector.contentTypes], ['application/json']);

    const run = named('RunWorkflow:deploy');
    const activity = named('RunActivity:checkWorkerPolicy');
    assert.ok(run && activity);
    assert.equal(start.service, 'liftoff-cli');
    assert.equal(start.parentSpanId, '', 'the CLI start is the root of the trace');
    assert.equal(start.attributes.temporalWorkflowId, 'liftoff-traces');
    assert.deepEqual(
      [start.attributes['liftoff.cluster'], start.attributes['liftoff.trigger']],
      ['traces', 'cli'],
    );
    assert.equal(run.service, 'liftoff-worker');
    assert.equal(activity.service, 'liftoff-worker');
    // The refusal is on the activity's span.
    assert.equal(activity.status.code, 2, 'the activity span has the error status');
    assert.match(activity.status.message ?? '', /refused by the worker policy/);
    for (const s of [run, activity])
      assert.equal(s.traceId, start.traceId, `${s.name} is in the CLI's trace`);
    assert.equal(run.parentSpanId, start.spanId, 'the workflow run is under the CLI start');
    // The activity run is under the workflow's StartActivity span, which is under the run.
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const scheduled = byId.get(activity.parentSpanId);
    assert.equal(scheduled?.name, 'StartActivity:checkWorkerPolicy');
    assert.equal(scheduled.parentSpanId, run.spanId);
    // The CLI's progress polls are not traced.
    assert.ok(!spans.some((s) => s.name.startsWith('QueryWorkflow')), 'no span per query');
  });

  it("the traced run's history carries the trace in headers only, and replays on a worker without tracing", async () => {
    assert.ok(env);
    const handle = env.client.workflow.getHandle('liftoff-traces');
    await assert.rejects(handle.result());
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).find((e) => e.activityTaskScheduledEventAttributes);
    const headerFields = Object.keys(scheduled?.activityTaskScheduledEventAttributes?.header?.fields ?? {});
    assert.ok(headerFields.includes('_tracer-data'), `the activity's headers: ${headerFields.join(', ')}`);
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'liftoff-traces');
  });

  it('an Update handler and a child workflow get spans, each under its caller', async () => {
    assert.ok(env && collector);
    const { spans } = collector;
    // A client of this process traced as the CLI's is (its start, updates): the worker's spans join its trace.
    const client = new Client({
      connection: env.client.connection,
      namespace: env.namespace ?? 'default',
      interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
    });
    const waitSpan = (name: string, match: (s: ReceivedSpan) => boolean = () => true) =>
      waitFor(name, () => spans.find((s) => s.name === name && match(s)), 30_000, {
        detail: () => `spans so far: ${spans.map((s) => `${s.service} ${s.name}`).join(', ')}`,
      });

    // An Update: a cluster's workflow released by hand (its handler ends the workflow).
    const held = await client.workflow.start('cluster', {
      taskQueue: TASK_QUEUE,
      workflowId: clusterWorkflowId('traces-update'),
      args: [{ cluster: 'traces-update' }],
    });
    await held.executeUpdate(releaseUpdate, { args: [{ by: 'traces test' }] });
    await held.result();
    const handled = await waitSpan('HandleUpdate:release');
    // The caller's span comes from this process's exporter, which may send it after the worker sent the handler's.
    const asked = await waitSpan('StartWorkflowUpdate:release', (s) => s.spanId === handled.parentSpanId);
    assert.equal(handled.traceId, asked.traceId, 'the handler is in the caller’s trace');

    // A child: a deploy started under another id (as the Temporal UI starts one) runs as a child under
    // liftoff-<cluster>. The spec passes the policy; its preflight fails on a port nothing listens on.
    const parent = await client.workflow.start('deploy', {
      taskQueue: TASK_QUEUE,
      workflowId: 'traces-from-ui',
      args: [
        unreachableSpec('traces-child', join(dir, '.ssh', 'id_ed25519'), join(dir, '.ssh', 'known_hosts')),
      ],
    });
    await assert.rejects(parent.result());
    const started = await waitSpan('StartChildWorkflow:deploy');
    const childRun = await waitSpan('RunWorkflow:deploy', (s) => s.parentSpanId === started.spanId);
    const parentRun = await waitSpan('RunWorkflow:deploy', (s) => s.spanId === started.parentSpanId);
    assert.equal(childRun.traceId, parentRun.traceId, 'one trace');
    // The child's own activities are under its run.
    const childActivity = spans.find(
      (s) => s.name.startsWith('StartActivity:') && s.parentSpanId === childRun.spanId,
    );
    assert.ok(childActivity, `an activity of the child: ${spans.map((s) => s.name).join(', ')}`);
  });
});
