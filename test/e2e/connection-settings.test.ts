// Where the CLI and the worker find Temporal (src/temporal/connection.ts): the standard TEMPORAL_* variables, or a
// temporal.toml profile chosen by TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE. A real dev server listens on a
// non-default port and serves a non-default namespace; the CLI and workers run as separate processes and must
// land there, not on 127.0.0.1:7233 or in the namespace `default` of the same server.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, ScheduleNotFoundError, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { runLiftoff, type CliRun } from '../helpers/cli.js';
import { startWorkerProcess, type WorkerProcess } from '../../scripts/lib/worker-process.js';
import { ensureBuilt } from '../helpers/cli.js';

const execFileAsync = promisify(execFile);

const stateDir = '/tmp/liftoff-test-connection-settings';
const serverPorts = { port: 27433, uiPort: 28433 };
const namespace = 'liftoff-prod';
// Nothing listens on port 1: where a wrong setting sends the CLI.
const closedAddress = '127.0.0.1:1';
const specFile = join(projectRoot, 'examples/spark-qwen35.yaml');
const scheduleId = deployWorkflowId('spark-qwen35');
const apiKey = 'conn-settings-api-key-canary-7f3a';
const { TaskQueueType, TaskQueueKind } = proto.temporal.api.enums.v1;

/** This process's environment without any Temporal or payload-key setting, so each test names its own. */
const cleanEnv: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('LIFTOFF_PAYLOAD_KEY'),
  ),
);

const output = (run: CliRun) => `${run.stdout}${run.stderr}`;

function scheduleIds(run: CliRun): string[] {
  assert.equal(run.code, 0, output(run));
  return (JSON.parse(run.stdout) as { scheduleId: string }[]).map((s) => s.scheduleId);
}

describe('connection settings: TEMPORAL_* variables and temporal.toml profiles (real dev server, CLI and workers as processes)', () => {
  let server: DevServer | undefined;
  let connection: Connection | undefined;
  let prod: Client;
  let byVars: NodeJS.ProcessEnv;
  let byProfile: NodeJS.ProcessEnv;
  let withSecrets: NodeJS.ProcessEnv;
  let privateKeyBody: string;
  const workers: WorkerProcess[] = [];

  before(async () => {
    rmSync(stateDir, { recursive: true, force: true });
    mkdirSync(stateDir, { recursive: true });
    server = await startDevServer({ stateDir: join(stateDir, 'temporal'), ...serverPorts, namespace });
    connection = await Connection.connect({ address: server.address });
    prod = new Client({ connection, namespace });

    // A real private key, so a leak of its body would be recognisable; the certificate only has to be read.
    const privateKey = generateKeyPairSync('ed25519')
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    privateKeyBody = privateKey.split('\n')[1] ?? '';
    assert.ok(privateKeyBody.length > 20);
    writeFileSync(join(stateDir, 'client.key'), privateKey);
    writeFileSync(
      join(stateDir, 'client.pem'),
      '-----BEGIN CERTIFICATE-----\nbm90LWEtY2VydA==\n-----END CERTIFICATE-----\n',
    );
    const configFile = join(stateDir, 'temporal.toml');
    writeFileSync(
      configFile,
      [
        // Chosen when TEMPORAL_PROFILE is unset: a wrong address, so a test passing through it proves the choice.
        '[profile.default]',
        `address = "${closedAddress}"`,
        '',
        '[profile.prod]',
        `address = "${server.address}"`,
        `namespace = "${namespace}"`,
        '',
        '[profile.cloud]',
        `address = "${closedAddress}"`,
        'namespace = "liftoff-prod.a1b2c"',
        `api_key = "${apiKey}"`,
        '[profile.cloud.tls]',
        `client_cert_path = "${join(stateDir, 'client.pem')}"`,
        `client_key_path = "${join(stateDir, 'client.key')}"`,
        '',
      ].join('\n'),
    );
    byVars = { ...cleanEnv, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: namespace };
    byProfile = { ...cleanEnv, TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'prod' };
    withSecrets = { ...cleanEnv, TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'cloud' };
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await connection?.close();
    await server?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE route the CLI to that server and namespace', async () => {
    const created = await runLiftoff(
      ['schedule', 'create', '-c', specFile, '--cron', '0 4 * * *', '--paused', '--json'],
      byVars,
    );
    assert.equal(created.code, 0, output(created));
    // Read back without the CLI: the schedule is in liftoff-prod, and not in `default` of the same server.
    assert.equal((await prod.schedule.getHandle(scheduleId).describe()).scheduleId, scheduleId);
    const other = new Client({ connection: prod.connection, namespace: 'default' });
    await assert.rejects(other.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);

    const [inProd, inDefault] = await Promise.all([
      runLiftoff(['schedule', 'list', '--json'], byVars),
      runLiftoff(['schedule', 'list', '--json'], { ...byVars, TEMPORAL_NAMESPACE: 'default' }),
    ]);
    assert.deepEqual(scheduleIds(inProd), [scheduleId]);
    assert.deepEqual(scheduleIds(inDefault), []);
  });

  it('a temporal.toml profile chosen by TEMPORAL_PROFILE routes the CLI; TEMPORAL_* variables override it', async () => {
    const [profiled, overridden, defaultProfile] = await Promise.all([
      runLiftoff(['schedule', 'list', '--json'], byProfile),
      runLiftoff(['schedule', 'list', '--json'], { ...byProfile, TEMPORAL_NAMESPACE: 'default' }),
      // Without TEMPORAL_PROFILE the file's `default` profile applies, which names the closed address.
      runLiftoff(['worker'], { ...byProfile, TEMPORAL_PROFILE: undefined }),
    ]);
    assert.deepEqual(scheduleIds(profiled), [scheduleId]);
    assert.deepEqual(scheduleIds(overridden), []);
    assert.equal(defaultProfile.code, 3, output(defaultProfile));
    assert.match(defaultProfile.stderr, new RegExp(`cannot reach Temporal at ${closedAddress}`));
  });

  it('workers started with the variables or with the profile poll liftoff-prod, and the profile worker runs its workflows', async () => {
    const [varsWorker, profileWorker] = await Promise.all([
      startWorkerProcess({ env: byVars }),
      startWorkerProcess({ env: byProfile }),
    ]);
    workers.push(varsWorker, profileWorker);
    for (const w of [varsWorker, profileWorker]) {
      assert.match(
        w.output(),
        new RegExp(`worker polling ${TASK_QUEUE} on ${server?.address} \\(namespace ${namespace}\\)`),
      );
    }

    const pollers = async (ns: string): Promise<string[]> => {
      const { pollers: list } = await prod.workflowService.describeTaskQueue({
        namespace: ns,
        taskQueue: { name: TASK_QUEUE, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      return (list ?? []).map((p) => p.identity ?? '');
    };
    const deadline = Date.now() + 20_000;
    let inProd = await pollers(namespace);
    while (!(inProd.includes(varsWorker.identity) && inProd.includes(profileWorker.identity))) {
      assert.ok(Date.now() < deadline, `both workers poll ${namespace}; pollers: ${inProd.join(', ')}`);
      await new Promise((r) => setTimeout(r, 200));
      inProd = await pollers(namespace);
    }
    assert.deepEqual(await pollers('default'), [], 'nobody polls the default namespace');

    // The image's HEALTHCHECK asks the server the same question, for workers on this host: the compiled script.
    ensureBuilt();
    const health = (env: NodeJS.ProcessEnv) =>
      execFileAsync(process.execPath, ['dist/worker-healthcheck.js'], {
        cwd: projectRoot,
        env,
      }).then(
        ({ stdout }) => ({ code: 0, stdout }),
        (err: { code?: number; stdout?: string }) => ({ code: err.code ?? -1, stdout: err.stdout ?? '' }),
      );
    const [healthy, unhealthy] = await Promise.all([
      health(byProfile),
      health({ ...byProfile, TEMPORAL_NAMESPACE: 'default' }),
    ]);
    assert.equal(healthy.code, 0, healthy.stdout);
    assert.match(
      healthy.stdout,
      new RegExp(
        `^healthy: \\d+@\\S+ polls task queue ${TASK_QUEUE} on ${server?.address} \\(namespace ${namespace}\\)`,
      ),
    );
    assert.equal(unhealthy.code, 1, unhealthy.stdout);
    assert.match(unhealthy.stdout, /^unhealthy: no worker on this host .* \(namespace default\)/);

    // With the variables' worker gone, a workflow started in liftoff-prod can only be run by the profile's worker.
    // An invalid spec keeps it short: the deploy workflow refuses it in its first task, without any SSH.
    await varsWorker.kill('SIGTERM');
    const handle = await prod.workflow.start('deploy', {
      taskQueue: TASK_QUEUE,
      workflowId: 'connection-settings-invalid-spec',
      args: [{ cluster: 'connection-settings' }],
    });
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowFailedError, String(err));
    assert.ok(err.cause instanceof ApplicationFailure && err.cause.type === 'InvalidSpec', String(err.cause));
    const { events } = await handle.fetchHistory();
    const ranBy = (events ?? []).flatMap((e) => e.workflowTaskStartedEventAttributes?.identity ?? []);
    assert.ok(ranBy.length > 0);
    assert.ok(ranBy.includes(profileWorker.identity), `workflow tasks ran on ${ranBy.join(', ')}`);
    assert.ok(!ranBy.includes(varsWorker.identity), 'the stopped worker ran none');
  });

  it('a wrong address fails with exit 3 naming it; an API key and a TLS client key are never printed', async () => {
    const runs = await Promise.all([
      runLiftoff(['schedule', 'list', '--json'], { ...byVars, TEMPORAL_ADDRESS: closedAddress }),
      runLiftoff(['worker'], { ...byVars, TEMPORAL_ADDRESS: closedAddress }),
      runLiftoff(['schedule', 'list'], withSecrets),
      runLiftoff(['worker', '--json'], withSecrets),
    ]);
    for (const run of runs) {
      assert.equal(run.code, 3, output(run));
      assert.match(output(run), new RegExp(`cannot reach Temporal at ${closedAddress}`));
      assert.ok(!output(run).includes(apiKey), 'the API key is not printed');
      assert.ok(!output(run).includes(privateKeyBody), 'the TLS client key is not printed');
    }
    const [json] = runs;
    assert.equal((JSON.parse(json?.stdout ?? '{}') as { error?: { exitCode?: number } }).error?.exitCode, 3);
  });
});
