// Records the event histories that test/replay replays: a successful deploy, a deploy that fails after Ray
// started, a deploy whose worker is SIGKILLed mid-load and finished by a second worker, and a supervisor that
// loses its cluster, relaunches it and is stopped. A script for engineers (`npx tsx scripts/record-histories.ts`),
// not part of `npm test`: it takes about two minutes.
//
// Everything is real except the hosts: a simulated 2-host cluster, the embedded Temporal dev server, and
// `liftoff worker` processes. The files are written the way a user exports a history:
// `temporal workflow show --workflow-id … --run-id … --output json`.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import {
  Client,
  Connection,
  WorkflowFailedError,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { downCluster, setFaults, upCluster, type SimCluster } from '../sim/cluster.js';
import { paths, readJson, writeJson, type HostConfig } from '../sim/host-state.js';
import { simDeploySpec } from '../sim/spec.js';
import { projectRoot, temporalCliPath } from '../src/temporal/cli-path.js';
import { startDevServer, type DevServer } from '../src/temporal/dev-server.js';
import { deployWorkflowId, superviseWorkflowId } from '../src/shared/constants.js';
import { startDeploy } from '../src/temporal/start-deploy.js';
import { startWorkerProcess, type WorkerProcess } from './lib/worker-process.js';
import { decodedText, historyExportArgs } from './lib/history-export.js';
import { deploy, progressQuery } from '../src/workflows/index.js';
import { stopSupervisionSignal, supervisionQuery } from '../src/workflows/supervise-api.js';
import type { SuperviseState } from '../src/workflows/supervise-state.js';

const simStateDir = '/tmp/liftoff-record-histories';
// Apart from the sim's state dir: bringing the cluster up wipes that one.
const serverStateDir = '/tmp/liftoff-record-histories.temporal';
const netIndex = 12;
const clusterName = 'replay';
const workflowId = deployWorkflowId(clusterName);
const supervisorId = superviseWorkflowId(clusterName);
const historiesDir = join(projectRoot, 'test', 'histories');

const fastPace: Partial<HostConfig['vllm']> = { shards: 8, shardSeconds: 0.2, graphCaptureSeconds: 0.3 };
// Long enough that a worker can be killed with most of the load still ahead.
const resumePace: Partial<HostConfig['vllm']> = { shards: 32, shardSeconds: 0.5, graphCaptureSeconds: 0.3 };
const crashAtShard = 3;
// The failed deploy needs a credential, the way real specs do: the spec names it ({ fromEnv }) and only the
// workers' environment holds the value, so tests can check that the value appears nowhere in the history.
// Fake, and shaped so that no secret scanner takes it for a real token.
// Not LIFTOFF_*: no worker lets a spec read its own settings; this one is allowed by the workers' policy.
const plantedSecret = {
  env: 'RECORD_HF_TOKEN',
  value: 'record-histories-fake-hf-token-0f3a9c',
};
const killAtShard = 3;
// The supervisor's settings: rounds every second, lost after two failed rounds in a row.
const superviseSettings = {
  enabled: true,
  interval: '1s',
  failureThreshold: 2,
  backoff: '1s',
  maxRelaunches: 3,
  window: '1h',
};
// The workers' policy: the cluster's key and known_hosts, and the planted secret's variable besides the defaults.
const workerPolicyFile = join(simStateDir, 'worker-policy-recording.yaml');

/** The fields of an exported (proto JSON) history event that this script checks. */
interface HistoryEvent {
  eventType?: string;
  workflowTaskCompletedEventAttributes?: { identity?: string };
  activityTaskStartedEventAttributes?: { identity?: string };
  workflowExecutionCompletedEventAttributes?: object;
  workflowExecutionFailedEventAttributes?: {
    failure?: { applicationFailureInfo?: { details?: { payloads?: unknown[] } } };
  };
}

const say = (line: string): void => void process.stdout.write(`record-histories: ${line}\n`);

/** Undo actions, run newest first however the script ends. */
const cleanups: { name: string; run: () => Promise<void> }[] = [];

async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) {
    await cleanup.run().catch((err: unknown) => say(`cleanup "${cleanup.name}" failed: ${String(err)}`));
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    say(`${signal}: cleaning up`);
    void runCleanups().finally(() => process.exit(130));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** `liftoff worker` in its own process, so it can die the way a control host does. */
async function startWorker(server: DevServer): Promise<WorkerProcess> {
  const worker = await startWorkerProcess({
    address: server.address,
    namespace: server.namespace,
    env: { ...process.env, [plantedSecret.env]: plantedSecret.value },
    workerPolicyPath: workerPolicyFile,
  });
  cleanups.push({ name: `worker ${worker.pid}`, run: () => worker.kill('SIGKILL') });
  return worker;
}

function setPace(sim: SimCluster, pace: Partial<HostConfig['vllm']>): void {
  for (const h of sim.hosts) {
    const config = readJson<HostConfig>(paths.config(h.hostDir));
    if (!config) throw new Error(`${h.name} has no host.json`);
    writeJson(paths.config(h.hostDir), { ...config, vllm: { ...config.vllm, ...pace } });
  }
}

type SimSpec = ReturnType<typeof simDeploySpec>;
type EnvInput = Record<string, string | { fromEnv: string }>;
type DeploySpecInput = Omit<SimSpec, 'ray' | 'serve'> & {
  ray: Omit<SimSpec['ray'], 'env'> & { env: EnvInput };
  serve: Omit<SimSpec['serve'], 'env'> & { env: EnvInput };
};

/** Starts the deploy of the sim cluster's spec (adjusted), exactly as `liftoff deploy` does. */
function startSimDeploy(
  client: Client,
  sim: SimCluster,
  adjust: (spec: DeploySpecInput) => DeploySpecInput = (spec) => spec,
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof deploy>> {
  return startDeploy(client, adjust(simDeploySpec(sim, { cluster: clusterName })), 'cli');
}

const deployTimeoutMs = 6 * 60_000;

/** A deploy that neither ends nor fails (a stuck workflow task) must not hang the script forever. */
async function within<T>(result: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Error(`the deploy did not end within ${deployTimeoutMs / 1000} s; see the Temporal UI`)),
      deployTimeoutMs,
    );
  });
  try {
    return await Promise.race([result, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The user's export: `temporal workflow show --output json`, byte for byte. */
async function exportHistory(server: DevServer, runId: string, id = workflowId): Promise<string> {
  const { stdout } = await promisify(execFile)(
    temporalCliPath(),
    historyExportArgs({ address: server.address, namespace: server.namespace, workflowId: id, runId }),
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return stdout;
}

function eventsOf(json: string): HistoryEvent[] {
  const parsed = JSON.parse(json) as { events?: HistoryEvent[] };
  if (!Array.isArray(parsed.events)) throw new Error('`temporal workflow show` printed no events array');
  return parsed.events;
}

/** Worker identities in the order they first ran a workflow task or picked up an activity. */
function workerIdentities(events: HistoryEvent[]): string[] {
  const seen: string[] = [];
  for (const e of events) {
    const identity =
      e.workflowTaskCompletedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
    if (identity && !seen.includes(identity)) seen.push(identity);
  }
  return seen;
}

type Closing = 'workflowExecutionCompletedEventAttributes' | 'workflowExecutionFailedEventAttributes';

function expectClosedAs(events: HistoryEvent[], closing: Closing, what: string): HistoryEvent {
  const last = events[events.length - 1];
  if (!last?.[closing]) {
    throw new Error(`${what}: the history does not end with ${closing.replace(/Attributes$/, '')}`);
  }
  return last;
}

interface Recording {
  file: string;
  workflowType: 'deploy' | 'supervise';
  workflowId: string;
  description: string;
  runId: string;
  outcome: 'succeeded' | 'failed';
  json: string;
  events: number;
  workerIdentities: string[];
}

function recording(
  file: string,
  description: string,
  runId: string,
  outcome: Recording['outcome'],
  json: string,
  workflow: Pick<Recording, 'workflowType' | 'workflowId'> = { workflowType: 'deploy', workflowId },
): Recording {
  const events = eventsOf(json);
  return {
    file,
    ...workflow,
    description,
    runId,
    outcome,
    json,
    events: events.length,
    workerIdentities: workerIdentities(events),
  };
}

async function recordSucceeded(client: Client, server: DevServer, sim: SimCluster): Promise<Recording> {
  say('1/4: a successful deploy');
  const handle = await startSimDeploy(client, sim);
  const result = await within(handle.result());
  say(`  served at ${result.endpoint}, load ${result.loadSeconds.toFixed(1)} s`);
  const json = await exportHistory(server, handle.firstExecutionRunId);
  expectClosedAs(eventsOf(json), 'workflowExecutionCompletedEventAttributes', 'succeeded deploy');
  return recording(
    'deploy-succeeded.json',
    'a full successful deploy: every step, the load polled to healthy, smoke test, result recorded',
    handle.firstExecutionRunId,
    'succeeded',
    json,
  );
}

async function recordFailed(client: Client, server: DevServer, sim: SimCluster): Promise<Recording> {
  say(`2/4: the server crashes at shard ${crashAtShard} (sim fault crashAtShard on the head)`);
  const head = sim.hosts[0];
  if (!head) throw new Error('the cluster has no head');
  setFaults(simStateDir, head.name, { crashAtShard });
  let handle: WorkflowHandleWithFirstExecutionRunId<typeof deploy>;
  try {
    handle = await startSimDeploy(client, sim, (spec) => ({
      ...spec,
      ray: { ...spec.ray, env: { ...spec.ray.env, HF_TOKEN: { fromEnv: plantedSecret.env } } },
      serve: { ...spec.serve, env: { ...spec.serve.env, HF_TOKEN: { fromEnv: plantedSecret.env } } },
    }));
    const outcome = await within(handle.result()).then(
      () => undefined,
      (err: unknown) => err,
    );
    if (!(outcome instanceof WorkflowFailedError)) {
      throw new Error(`the crashing deploy did not fail: ${String(outcome)}`);
    }
    say(`  failed as expected: ${outcome.cause?.message.split('\n')[0] ?? outcome.message}`);
  } finally {
    setFaults(simStateDir, head.name, {});
  }
  const json = await exportHistory(server, handle.firstExecutionRunId);
  const events = eventsOf(json);
  const closed = expectClosedAs(events, 'workflowExecutionFailedEventAttributes', 'failed deploy');
  const failureDetails = closed.workflowExecutionFailedEventAttributes?.failure;
  const text = decodedText(json);
  if (!text.includes(`"fromEnv":"${plantedSecret.env}"`)) {
    throw new Error('the failed deploy was meant to name its HF_TOKEN by reference');
  }
  if (text.includes(plantedSecret.value)) {
    throw new Error(`the secret value of ${plantedSecret.env} is in the history: liftoff leaked it`);
  }
  if (!failureDetails?.applicationFailureInfo?.details?.payloads?.length) {
    throw new Error('the failed deploy carries no failure details (diagnostics)');
  }
  return recording(
    'deploy-failed.json',
    `the server crashes at shard ${crashAtShard} during the load; the deploy fails with ServerFatal, diagnostics from every host and teardown; HF_TOKEN given by reference ({ fromEnv }) with a fake value in the workers' environment`,
    handle.firstExecutionRunId,
    'failed',
    json,
  );
}

async function recordResumed(
  client: Client,
  server: DevServer,
  sim: SimCluster,
  first: WorkerProcess,
): Promise<Recording> {
  say(`3/4: worker ${first.identity} is SIGKILLed at shard ${killAtShard}, a second worker finishes`);
  setPace(sim, resumePace);
  const handle = await startSimDeploy(client, sim);
  const deadline = Date.now() + 180_000;
  for (;;) {
    const progress = await handle.query(progressQuery);
    if (progress.status !== 'running')
      throw new Error(`the deploy ended (${progress.status}) before the kill`);
    if (progress.currentStep === 'waitHealthy' && (progress.load?.shardsDone ?? 0) >= killAtShard) {
      say(
        `  load at shard ${progress.load?.shardsDone}/${progress.load?.shardsTotal}: SIGKILL ${first.identity}`,
      );
      break;
    }
    if (Date.now() > deadline) throw new Error('the load did not reach the kill point within 180 s');
    await sleep(250);
  }
  await first.kill('SIGKILL');
  const second = await startWorker(server);
  say(`  second worker ${second.identity} polling`);
  const result = await within(handle.result());
  say(`  served at ${result.endpoint}, load ${result.loadSeconds.toFixed(1)} s`);
  setPace(sim, fastPace);

  const json = await exportHistory(server, handle.firstExecutionRunId);
  const events = eventsOf(json);
  expectClosedAs(events, 'workflowExecutionCompletedEventAttributes', 'resumed deploy');
  const identities = workerIdentities(events);
  if (!identities.includes(first.identity) || !identities.includes(second.identity)) {
    throw new Error(
      `the resumed history should show both workers (${first.identity}, ${second.identity}); it shows ${identities.join(', ')}`,
    );
  }
  return recording(
    'deploy-resumed.json',
    `worker ${first.identity} is SIGKILLed mid-load (shard ${killAtShard}/${resumePace.shards}); worker ${second.identity} replays the history and finishes the deploy`,
    handle.firstExecutionRunId,
    'succeeded',
    json,
  );
}

/** Polls the supervisor's state until `pred` holds. */
async function superviseUntil(
  client: Client,
  what: string,
  pred: (s: SuperviseState) => boolean,
): Promise<SuperviseState> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const s = await client.workflow
      .getHandle(supervisorId)
      .query(supervisionQuery)
      .catch(() => undefined);
    if (s && pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`the supervisor did not reach "${what}" within 180 s`);
    await sleep(200);
  }
}

async function recordSupervised(client: Client, server: DevServer, sim: SimCluster): Promise<Recording> {
  say('4/4: a supervised deploy, vLLM SIGKILLed, lost, relaunched, serving again, stopped');
  const handle = await startSimDeploy(client, sim, (spec) => ({ ...spec, supervise: superviseSettings }));
  const deployed = await within(handle.result());
  if (!deployed.supervision?.startsWith(`supervised by ${supervisorId}`)) {
    throw new Error(`the deploy did not start its supervisor: ${deployed.supervision ?? '(nothing said)'}`);
  }
  await superviseUntil(client, 'two passed rounds', (s) => s.status === 'serving' && s.rounds >= 2);
  const head = sim.hosts[0];
  if (!head) throw new Error('the cluster has no head');
  const launched = readFileSync(paths.launches(head.hostDir), 'utf8').trim().split('\n').at(-1);
  const { pid } = JSON.parse(launched ?? '{}') as { pid?: number };
  if (!pid) throw new Error(`no launch in ${paths.launches(head.hostDir)}`);
  process.kill(pid, 'SIGKILL');
  say(`  vLLM (pid ${pid}) SIGKILLed`);
  const back = await superviseUntil(
    client,
    'serving again after a relaunch',
    (s) => s.status === 'serving' && s.relaunches.at(-1)?.outcome === 'serving',
  );
  const relaunchedAt = back.relaunches.at(-1)?.endedAtMs ?? Date.now();
  await superviseUntil(client, 'a round after the relaunch', (s) => (s.lastProbe?.atMs ?? 0) > relaunchedAt);
  const supervisor = client.workflow.getHandle(supervisorId);
  const { runId } = await supervisor.describe();
  await supervisor.signal(stopSupervisionSignal, { reason: 'record-histories: recorded' });
  const ended = (await within(client.workflow.getHandle(supervisorId, runId).result())) as {
    state: SuperviseState;
  };
  say(`  relaunch #${back.relaunches.length} served; supervisor ${ended.state.status}`);
  const json = await exportHistory(server, runId, supervisorId);
  expectClosedAs(eventsOf(json), 'workflowExecutionCompletedEventAttributes', 'stopped supervisor');
  return recording(
    'supervise-relaunched.json',
    `a supervisor (interval ${superviseSettings.interval}, failureThreshold ${superviseSettings.failureThreshold}) whose vLLM is SIGKILLed: lost, failure bundle, relaunch deploy as its child, serving again, then stopped by signal`,
    runId,
    'succeeded',
    json,
    { workflowType: 'supervise', workflowId: supervisorId },
  );
}

function gitOutput(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

function writeAll(recordings: Recording[], sim: SimCluster, server: DevServer): void {
  mkdirSync(historiesDir, { recursive: true });
  for (const r of recordings) writeFileSync(join(historiesDir, r.file), r.json);
  const cliVersion = execFileSync(temporalCliPath(), ['--version'], { encoding: 'utf8' }).trim();
  const sdkVersion = (
    JSON.parse(readFileSync(join(projectRoot, 'node_modules/@temporalio/worker/package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  const manifest = {
    recordedAt: new Date().toISOString(),
    recordedBy: 'scripts/record-histories.ts',
    gitCommit: gitOutput(['rev-parse', 'HEAD']),
    // Uncommitted workflow code means the histories were made by code that the commit above does not hold.
    workflowCodeUncommitted: gitOutput(['status', '--porcelain', '--', 'src/workflows']).length > 0,
    temporalCli: cliVersion,
    temporalSdk: sdkVersion,
    namespace: server.namespace,
    cluster: {
      name: clusterName,
      simulated: { mode: sim.mode, hosts: sim.hosts.map((h) => h.name), jumpHostFor: { spark2: 'spark1' } },
      pace: { default: fastPace, resumed: resumePace },
    },
    histories: recordings.map((r) => ({
      file: r.file,
      description: r.description,
      workflowType: r.workflowType,
      workflowId: r.workflowId,
      runId: r.runId,
      outcome: r.outcome,
      events: r.events,
      workerIdentities: r.workerIdentities,
      ...(r.file === 'deploy-failed.json'
        ? {
            plantedSecret: {
              note: `ray.env.HF_TOKEN and serve.env.HF_TOKEN are { fromEnv: ${plantedSecret.env} }; the workers' environment held this fake value, which must appear nowhere in the history nor in anything shown from it`,
              env: plantedSecret.env,
              value: plantedSecret.value,
            },
          }
        : {}),
    })),
  };
  writeFileSync(join(historiesDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  say(`bringing up a 2-host simulated cluster in ${simStateDir} (netIndex ${netIndex})`);
  cleanups.push({ name: 'simulated cluster', run: () => downCluster(simStateDir) });
  const sim = await upCluster({
    hosts: 2,
    mode: 'netns',
    stateDir: simStateDir,
    netIndex,
    clusterOnly: ['spark2'],
    vllm: fastPace,
  });
  writeFileSync(
    workerPolicyFile,
    `${readFileSync(sim.workerPolicyPath, 'utf8')}fromEnv: [HF_TOKEN, HUGGING_FACE_HUB_TOKEN, VLLM_API_KEY, ${plantedSecret.env}]\n`,
  );

  rmSync(serverStateDir, { recursive: true, force: true });
  const server = await startDevServer({
    stateDir: serverStateDir,
    port: await freePort(),
    uiPort: await freePort(),
  });
  cleanups.push({ name: 'Temporal dev server', run: () => server.stop() });
  say(`Temporal dev server on ${server.address} (state in ${serverStateDir})`);

  const connection = await Connection.connect({ address: server.address });
  cleanups.push({ name: 'client connection', run: () => connection.close() });
  const client = new Client({ connection, namespace: server.namespace });

  const worker = await startWorker(server);
  say(`worker ${worker.identity} polling`);
  const recordings = [
    await recordSucceeded(client, server, sim),
    await recordFailed(client, server, sim),
    await recordResumed(client, server, sim, worker),
  ];
  recordings.push(await recordSupervised(client, server, sim));
  writeAll(recordings, sim, server);
  for (const r of recordings) {
    say(
      `wrote ${relative(projectRoot, join(historiesDir, r.file))}: ${r.events} events, ${r.json.length} bytes`,
    );
  }
  say(`done in ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
}

try {
  await main();
  await runCleanups();
  rmSync(serverStateDir, { recursive: true, force: true });
} catch (err) {
  say(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  say(`the dev server's log stays in ${serverStateDir}`);
  await runCleanups();
  process.exitCode = 1;
}
