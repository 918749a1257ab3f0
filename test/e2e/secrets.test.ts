// Issue 6, secrets: a real deploy on the simulated cluster with an HF token set by reference and the SSH key by
// path, its full history exported the way a user exports it (`temporal workflow show --output json`), and
// scanned for the token and the key's material. Then the same deploy through the CLI with payload encryption
// on (LIFTOFF_PAYLOAD_KEY): every payload in the history is ciphertext, the spec's text is nowhere in it, and
// the CLI with the key still reads status and postmortems (online and offline); without the key it says so.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLiftoffWorker } from '../../src/worker.js';
import { liftoffDataConverter, ENCRYPTED_ENCODING } from '../../src/temporal/codec.js';
import { temporalCliPath } from '../../src/temporal/cli-path.js';
import { TASK_QUEUE, deployWorkflowId, downWorkflowId } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import { patchIds } from '../../src/workflows/patches.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import type { StatusReport } from '../../src/commands/status.js';
import type { Postmortem } from '../../src/report/index.js';
import { downCluster, upCluster, type SimCluster } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { createDevServerEnv } from '../helpers/temporal.js';
import { sshRun } from '../helpers/ssh.js';
import { simWorkerPolicy } from '../helpers/worker-policy.js';
import { historyExportArgs } from '../../scripts/lib/history-export.js';
import { runLiftoff, runProcess } from '../helpers/cli.js';

const stateDir = '/tmp/liftoff-test-secrets';
const clusterName = 'secrets';
const workflowId = deployWorkflowId(clusterName);
const plainQueue = 'liftoff-secrets-plain';
const tokenEnv = 'SIM_TEST_SECRETS_HF_TOKEN';
const token = `hf_${randomBytes(16).toString('hex')}`;
const payloadKey = randomBytes(32).toString('base64');

interface Scan {
  /** Every string in the export, and each base64 string decoded. */
  strings: string[];
  raw: string;
}

function scanOf(raw: string): Scan {
  const strings: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      strings.push(v);
      if (/^[A-Za-z0-9+/]{4,}={0,2}$/.test(v)) strings.push(Buffer.from(v, 'base64').toString('utf8'));
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach(walk);
  };
  walk(JSON.parse(raw));
  return { strings, raw };
}

/** The needle's base64 as it shows inside a longer base64 text, at each of the three byte alignments. */
function base64Forms(needle: string): string[] {
  return ['', 'x', 'xx'].map((pad) =>
    Buffer.from(pad + needle)
      .toString('base64')
      .slice(Math.ceil((pad.length * 4) / 3), -4),
  );
}

function appears(scan: Scan, needle: string): boolean {
  return (
    scan.raw.includes(needle) ||
    scan.strings.some((s) => s.includes(needle)) ||
    base64Forms(needle).some((form) => form.length >= 8 && scan.raw.includes(form))
  );
}

interface PayloadSeen {
  path: string;
  encoding: string;
  /** The payload's data as text. */
  data: string;
}

/** Every payload in the export (anything with metadata.encoding), with where it sits. */
function payloadsIn(history: unknown): PayloadSeen[] {
  const seen: PayloadSeen[] = [];
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}[${i}]`));
    if (typeof v !== 'object' || v === null) return;
    const record = v as Record<string, unknown>;
    const metadata = record.metadata as Record<string, unknown> | undefined;
    if (typeof metadata?.encoding === 'string') {
      seen.push({
        path,
        encoding: Buffer.from(metadata.encoding, 'base64').toString('utf8'),
        data: typeof record.data === 'string' ? Buffer.from(record.data, 'base64').toString('utf8') : '',
      });
      return;
    }
    for (const [k, x] of Object.entries(record)) walk(x, `${path}.${k}`);
  };
  walk(history, '');
  return seen;
}

describe('secrets: nothing secret in an exported history; payload encryption', () => {
  let sim: SimCluster;
  let env: TestWorkflowEnvironment | undefined;
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  let dir: string;
  let cliEnv: NodeJS.ProcessEnv;
  let keyFileText: string;
  const plainRun: { history?: string; result?: DeployResult } = {};
  const sealedRun: { history?: string; historyFile?: string; result?: DeployResult } = {};

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-secrets-'));
    process.env[tokenEnv] = token;
    await downCluster(stateDir);
    let started: TestWorkflowEnvironment;
    [sim, started] = await Promise.all([
      upCluster({
        hosts: 2,
        mode: 'netns',
        stateDir,
        netIndex: 18,
        clusterOnly: ['spark2'],
        vllm: { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.2 },
      }),
      createDevServerEnv(),
    ]);
    env = started;
    keyFileText = readFileSync(sim.privateKeyPath, 'utf8');
    const namespace = env.namespace ?? 'default';
    // One worker without encryption (its own queue) and the one with it (the CLI's queue), as two installs would.
    for (const [taskQueue, dataConverter] of [
      [plainQueue, liftoffDataConverter({})],
      [TASK_QUEUE, liftoffDataConverter({ LIFTOFF_PAYLOAD_KEY: payloadKey })],
    ] as const) {
      const worker = await createLiftoffWorker({
        connection: env.nativeConnection,
        namespace,
        taskQueue,
        dataConverter,
        policy: simWorkerPolicy(sim, { fromEnv: [tokenEnv] }),
      });
      workers.push({ worker, running: worker.run() });
    }
    cliEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: namespace,
      LIFTOFF_PAYLOAD_KEY: payloadKey,
    };
  });

  after(async () => {
    for (const w of workers) w.worker.shutdown();
    await Promise.allSettled(workers.map((w) => w.running));
    await env?.teardown();
    await downCluster(stateDir);
    delete process.env[tokenEnv];
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function spec() {
    const base = simDeploySpec(sim, { cluster: clusterName });
    return {
      ...base,
      ray: { ...base.ray, env: { ...base.ray.env, HF_TOKEN: { fromEnv: tokenEnv } } },
      serve: { ...base.serve, env: { ...base.serve.env, HF_TOKEN: { fromEnv: tokenEnv } } },
    };
  }

  const run = (file: string, args: string[], env: NodeJS.ProcessEnv = cliEnv) =>
    runProcess(file, args, { env });
  const liftoff = (args: string[], env: NodeJS.ProcessEnv = cliEnv) => runLiftoff(args, env);

  async function exportHistory(runId: string): Promise<string> {
    const r = await run(
      temporalCliPath(),
      historyExportArgs({
        address: env?.address ?? '',
        namespace: env?.namespace ?? 'default',
        workflowId,
        runId,
      }),
    );
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  }

  async function assertTokenReachedHosts() {
    for (const h of sim.hosts) {
      const inspect = await sshRun(sim, h.name, 'docker inspect vllm_qwen35');
      assert.ok(inspect.includes(`HF_TOKEN=${token}`), `${h.name}: the Ray container got HF_TOKEN`);
    }
  }

  function assertNoSecrets(raw: string, label: string): number {
    const scan = scanOf(raw);
    assert.ok(!appears(scan, token), `${label}: the HF token appears`);
    const bodyLines = keyFileText
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('-----'));
    assert.ok(bodyLines.length > 0, 'the private key has body lines');
    for (const line of bodyLines)
      assert.ok(!appears(scan, line), `${label}: a line of the private key appears`);
    assert.ok(!appears(scan, keyFileText), `${label}: the private key file appears`);
    assert.ok(!appears(scan, keyFileText.trim()), `${label}: the private key file appears`);
    return bodyLines.length;
  }

  it('a plain deploy with a token by reference: the exported history holds neither the token nor the key', async () => {
    assert.ok(env);
    const t0 = Date.now();
    const handle = await env.client.workflow.start(deploy, {
      taskQueue: plainQueue,
      workflowId,
      args: [spec(), { trigger: 'cli' }],
    });
    plainRun.result = await handle.result();
    const deploySeconds = (Date.now() - t0) / 1000;
    await assertTokenReachedHosts();
    const raw = await exportHistory(handle.firstExecutionRunId);
    plainRun.history = raw;
    const encodings = payloadsIn(JSON.parse(raw)).map((p) => p.encoding);
    assert.ok(encodings.includes('json/plain'), 'the plain run is readable (the scan is not of ciphertext)');
    // The spec is in the plain history (so a scan for the secrets would find them if they were there).
    assert.ok(appears(scanOf(raw), spec().serve.model));
    assert.ok(appears(scanOf(raw), tokenEnv), 'the reference (the variable name) is recorded');
    const keyLines = assertNoSecrets(raw, 'plain history');
    // The plain worker's cluster workflow holds the hosts; a keyed client's messages could not be read there. So
    // the plain cluster is taken down first, as a user moving it to a worker with a key would.
    const down = await env.client.workflow.start('down', {
      taskQueue: plainQueue,
      workflowId: downWorkflowId(clusterName),
      args: [{ cluster: clusterName }],
    });
    await down.result();
    console.log(
      `FIGURE: plain deploy ${deploySeconds.toFixed(1)} s; exported history ${(raw.length / 1024).toFixed(0)} KiB, ${encodings.length} payloads; token (on both hosts' containers) found 0 times, private key (${keyLines} body lines + file) found 0 times`,
    );
  });

  it('with LIFTOFF_PAYLOAD_KEY: every payload is encrypted, no spec text in the history, and no secrets', async () => {
    const specFile = join(dir, 'spec.yaml');
    writeFileSync(specFile, JSON.stringify(spec(), null, 2));
    const t0 = Date.now();
    const deployed = await liftoff(['deploy', '-c', specFile, '--follow', '--json']);
    assert.equal(deployed.code, 0, `${deployed.stdout}\n${deployed.stderr}`);
    const deploySeconds = (Date.now() - t0) / 1000;
    // --json adds the run's ids to the workflow's result.
    const {
      workflowId: shownId,
      runId,
      ...result
    } = JSON.parse(deployed.stdout) as DeployResult & {
      workflowId: string;
      runId: string;
    };
    assert.equal(shownId, workflowId);
    sealedRun.result = result;
    assert.equal(sealedRun.result.model, spec().serve.model);
    await assertTokenReachedHosts();

    const raw = await exportHistory(runId);
    sealedRun.history = raw;
    sealedRun.historyFile = join(dir, 'sealed-history.json');
    writeFileSync(sealedRun.historyFile, raw);
    const history = JSON.parse(raw) as { events: Record<string, unknown>[] };

    // The payloads the brief names, event by event: workflow input and result, activity inputs and results.
    const required: Record<string, string[]> = {
      workflowExecutionStartedEventAttributes: ['input'],
      workflowExecutionCompletedEventAttributes: ['result'],
      activityTaskScheduledEventAttributes: ['input'],
      activityTaskCompletedEventAttributes: ['result'],
    };
    const counts: Record<string, number> = {};
    for (const event of history.events) {
      for (const [attrsKey, fields] of Object.entries(required)) {
        const attrs = event[attrsKey] as Record<string, { payloads?: unknown[] }> | undefined;
        if (!attrs) continue;
        for (const field of fields) {
          const payloads = payloadsIn(attrs[field]);
          if (attrsKey !== 'activityTaskCompletedEventAttributes')
            assert.ok(payloads.length > 0, `${attrsKey}.${field} has payloads`);
          for (const p of payloads) {
            assert.equal(p.encoding, ENCRYPTED_ENCODING, `${attrsKey}.${field}${p.path}`);
            counts[attrsKey] = (counts[attrsKey] ?? 0) + 1;
          }
        }
      }
    }
    assert.ok((counts.activityTaskScheduledEventAttributes ?? 0) >= 10, 'activities were scheduled');
    assert.equal(counts.workflowExecutionCompletedEventAttributes, 1);

    // Anywhere else only two kinds of payload never reach the codec, and so stay plain: search attributes, and
    // the SDK's own patch markers, whose data is the patch's name and a flag, nothing of the spec.
    const all = payloadsIn(history);
    const plain = all.filter((p) => p.encoding !== ENCRYPTED_ENCODING);
    const isPatchMarker = (p: PayloadSeen) =>
      /\.markerRecordedEventAttributes\.details\.patch-data\./.test(p.path) &&
      Object.values(JSON.parse(p.data) as Record<string, unknown>).every(
        (v) => (typeof v === 'string' && patchIds.includes(v)) || typeof v === 'boolean',
      );
    assert.deepEqual(
      plain.filter((p) => !/\.searchAttributes\.indexedFields\./.test(p.path) && !isPatchMarker(p)),
      [],
      'only search attributes and patch markers are unencrypted',
    );
    assert.ok(
      !all.some(
        (p) => p.encoding === 'json/plain' && !p.path.includes('searchAttributes') && !isPatchMarker(p),
      ),
    );

    const scan = scanOf(raw);
    const specTexts = [
      spec().serve.model,
      spec().ray.image,
      spec().serve.logPath,
      tokenEnv,
      ...sim.hosts.flatMap((h) => [h.address, h.clusterIp]),
    ];
    const found = specTexts.filter((t) => appears(scan, t));
    assert.deepEqual(found, [], 'spec text in the encrypted history');
    const keyLines = assertNoSecrets(raw, 'encrypted history');
    console.log(
      `FIGURE: encrypted deploy via the CLI ${deploySeconds.toFixed(1)} s; ${all.length} payloads in the export, ${all.length - plain.length} binary/encrypted (${plain.length} plain: search attributes only; 0 json/plain elsewhere); ${specTexts.length} spec texts (model, image, log path, host addresses) found 0 times; token and private key (${keyLines} lines) found 0 times`,
    );
  });

  it('the CLI with the key reads status and the postmortem (online); without it says LIFTOFF_PAYLOAD_KEY', async () => {
    assert.ok(sealedRun.result, 'the encrypted deploy ran');
    const status = await liftoff(['status', clusterName, '--json']);
    assert.equal(status.code, 0, status.stderr);
    const report = JSON.parse(status.stdout) as StatusReport;
    assert.equal(report.status, 'COMPLETED');
    assert.deepEqual(report.result, sealedRun.result);
    assert.ok(report.progress?.steps.every((s) => s.status === 'done' || s.status === 'skipped'));

    const online = await liftoff(['postmortem', clusterName, '--format', 'json']);
    assert.equal(online.code, 0, online.stderr);
    const pm = JSON.parse(online.stdout) as Postmortem;
    assert.equal(pm.outcome, 'succeeded');
    assert.equal(pm.result?.model, spec().serve.model);
    assert.equal(pm.result?.endpoint, sealedRun.result.endpoint);
    assert.ok(JSON.stringify(pm.spec).includes(spec().serve.model), 'the decrypted spec is in the report');
    assert.ok(!online.stdout.includes(token), 'the postmortem does not repeat the token');
    assert.ok(
      pm.steps.some((s) => s.activities.length > 0),
      'the steps show their activities',
    );

    const { LIFTOFF_PAYLOAD_KEY: _key, ...keyless } = cliEnv;
    const statusWithout = await liftoff(['status', clusterName, '--json'], keyless);
    assert.notEqual(statusWithout.code, 0);
    assert.match(statusWithout.stdout + statusWithout.stderr, /LIFTOFF_PAYLOAD_KEY is not set/);
    const pmWithout = await liftoff(['postmortem', clusterName, '--format', 'json'], keyless);
    assert.notEqual(pmWithout.code, 0);
    assert.match(pmWithout.stdout + pmWithout.stderr, /LIFTOFF_PAYLOAD_KEY/);
  });

  it('offline postmortem of the export: works with the key, fails clearly without it or with another', async () => {
    assert.ok(sealedRun.historyFile && plainRun.history);
    const withKey = await liftoff(['postmortem', '--history', sealedRun.historyFile, '--format', 'json']);
    assert.equal(withKey.code, 0, withKey.stderr);
    const pm = JSON.parse(withKey.stdout) as Postmortem;
    assert.equal(pm.outcome, 'succeeded');
    assert.equal(pm.cluster, clusterName);
    assert.equal(pm.result?.model, spec().serve.model);
    assert.ok(!withKey.stdout.includes(token));

    const { LIFTOFF_PAYLOAD_KEY: _key, ...keyless } = cliEnv;
    const without = await liftoff(['postmortem', '--history', sealedRun.historyFile], keyless);
    assert.notEqual(without.code, 0);
    const said = without.stdout + without.stderr;
    assert.match(said, /encrypted/);
    assert.match(said, /LIFTOFF_PAYLOAD_KEY is not set/);

    const other = await liftoff(['postmortem', '--history', sealedRun.historyFile], {
      ...keyless,
      LIFTOFF_PAYLOAD_KEY: randomBytes(32).toString('base64'),
    });
    assert.notEqual(other.code, 0);
    assert.match(other.stdout + other.stderr, /cannot decrypt a payload with LIFTOFF_PAYLOAD_KEY/);

    const malformed = await liftoff(['postmortem', '--history', sealedRun.historyFile], {
      ...keyless,
      LIFTOFF_PAYLOAD_KEY: 'c2hvcnQ=',
    });
    assert.notEqual(malformed.code, 0);
    assert.match(malformed.stdout + malformed.stderr, /LIFTOFF_PAYLOAD_KEY .*openssl rand -base64 32/);

    // A plain history reads the same with the key set: plain payloads pass through.
    const plainFile = join(dir, 'plain-history.json');
    writeFileSync(plainFile, plainRun.history);
    const plainPm = await liftoff(['postmortem', '--history', plainFile, '--format', 'json']);
    assert.equal(plainPm.code, 0, plainPm.stderr);
    assert.equal((JSON.parse(plainPm.stdout) as Postmortem).result?.model, spec().serve.model);
    console.log(
      'FIGURE: encrypted history read by status, online and offline postmortem with the key; refused without it (status, postmortem online/offline), with another key, and with a malformed key',
    );
  });
});
