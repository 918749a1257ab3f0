// Records the event histories that test/replay replays: a successful deploy, a deploy that fails after Ray
// started, a deploy whose worker is SIGKILLed mid-load and finished by a second worker, a supervisor that
// loses its cluster, relaunches it and is stopped, and an upgrade that fails and rolls back to the known-good
// (the failed run, the rollback's run, and the cluster's own workflow that recorded the revisions), and a supervised
// deploy with companions whose supervisor restarts one of them alone, and a supervisor whose healthy rounds run in
// watches (supervise.reportEvery). A script for engineers
// (`npx tsx scripts/record-histories.ts`), not part of `npm test`: it takes about three minutes.
// `--only rollback` records the rollback's three alone, on a cluster of their own, and leaves the other files as
// they are (their manifest entries too); `--only companions` does the same for the companions' two (a supervised
// deploy with companions, and its supervisor restarting one: scripts/lib/record-companions.ts); `--only watch`
// for the watched supervisor's one (scripts/lib/record-watched.ts).
//
// Everything is real except the hosts: a simulated 2-host cluster, the embedded Temporal dev server, and
// `liftoff worker` processes. The files are written the way a user exports a history:
// `temporal workflow show --workflow-id … --run-id … --output json`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Client,
  Connection,
  WorkflowFailedError,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { downCluster, setFaults, upCluster, type SimCluster } from '../sim/cluster.js';
import { paths, readJson, writeJson, type HostConfig } from '../sim/host-state.js';
import { simDeploySpec } from '../sim/spec.js';
import type { DeploySpec } from '../src/config/schema.js';
import { projectRoot, temporalCliPath } from '../src/temporal/cli-path.js';
import { startDevServer, type DevServer } from '../src/temporal/dev-server.js';
import { deployWorkflowId, superviseWorkflowId } from '../src/shared/constants.js';
import { clusterWorkflowId } from '../src/shared/cluster-api.js';
import { startDeploy } from '../src/temporal/start-deploy.js';
import { startWorkerProcess, type WorkerProcess } from './lib/worker-process.js';
import { decodedText } from './lib/history-export.js';
import {
  deployTimeoutMs,
  eventsOf,
  expectClosedAs,
  exportHistory,
  recording,
  say,
  killHeadVllmUntilRelaunched,
  superviseUntil,
  within,
  workerIdentities,
  type RecordedWorkflow,
  type Recording,
} from './lib/recording.js';
import { recordCompanions } from './lib/record-companions.js';
import { recordWatched } from './lib/record-watched.js';
import { deploy, progressQuery } from '../src/workflows/index.js';
import { stopSupervisionSignal } from '../src/workflows/supervise-api.js';
import type { SuperviseState } from '../src/workflows/supervise-state.js';
import { freeLoopbackPort } from './lib/free-port.js';

const simStateDir = '/tmp/liftoff-record-histories';
// Apart from the sim's state dir: bringing the cluster up wipes that one.
const serverStateDir = '/tmp/liftoff-record-histories.temporal';
const netIndex = 12;
const clusterName = 'replay';
const workflowId = deployWorkflowId(clusterName);
const supervisorId = superviseWorkflowId(clusterName);
const clusterRecordId = clusterWorkflowId(clusterName);
const deployRun: RecordedWorkflow = { workflowType: 'deploy', workflowId };
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
// The supervisor's settings: rounds every second, each reported (the watched recording sets its own reportEvery),
// lost after two failed rounds in a row.
const superviseSettings = {
  enabled: true,
  interval: '1s',
  reportEvery: '1s',
  failureThreshold: 2,
  backoff: '1s',
  maxRelaunches: 3,
  window: '1h',
};
// The workers' policy: the cluster's key and known_hosts, and the planted secret's variable besides the defaults.
const workerPolicyFile = join(simStateDir, 'worker-policy-recording.yaml');

/** What the script records: everything, or only the rolled-back upgrade or the companions (`--only …`). */
const onlyChoices = ['rollback', 'companions', 'watch'] as const;
type Only = (typeof onlyChoices)[number] | undefined;

function parseOnly(args: readonly string[]): Only {
  if (args.length === 0) return undefined;
  const choice = onlyChoices.find((c) => c === args[1]);
  if (args.length === 2 && args[0] === '--only' && choice) return choice;
  throw new Error(`usage: record-histories.ts [--only rollback|companions|watch] (got: ${args.join(' ')})`);
}

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
type DeploySpecInput = Omit<SimSpec, 'ray' | 'serve' | 'rollout'> & {
  ray: Omit<SimSpec['ray'], 'env'> & { env: EnvInput };
  serve: Omit<SimSpec['serve'], 'env'> & { env: EnvInput };
  rollout: { onFailure: DeploySpec['rollout']['onFailure'] };
};

/** Starts the deploy of the sim cluster's spec (adjusted), exactly as `liftoff deploy` does. */
function startSimDeploy(
  client: Client,
  sim: SimCluster,
  adjust: (spec: DeploySpecInput) => DeploySpecInput = (spec) => spec,
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof deploy>> {
  return startDeploy(client, adjust(simDeploySpec(sim, { cluster: clusterName })), 'cli');
}

async function recordSucceeded(client: Client, server: DevServer, sim: SimCluster): Promise<Recording> {
  say('1/7: a successful deploy');
  const handle = await startSimDeploy(client, sim);
  const result = await within(handle.result());
  say(`  served at ${result.endpoint}, load ${result.loadSeconds.toFixed(1)} s`);
  const json = await exportHistory(server, handle.firstExecutionRunId, workflowId);
  expectClosedAs(eventsOf(json), 'workflowExecutionCompletedEventAttributes', 'succeeded deploy');
  return recording(
    'deploy-succeeded.json',
    'a full successful deploy: every step, the load polled to healthy, smoke test, result recorded',
    handle.firstExecutionRunId,
    'succeeded',
    json,
    deployRun,
  );
}

async function recordFailed(client: Client, server: DevServer, sim: SimCluster): Promise<Recording> {
  say(`2/7: the server crashes at shard ${crashAtShard} (sim fault crashAtShard on the head)`);
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
  const json = await exportHistory(server, handle.firstExecutionRunId, workflowId);
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
    deployRun,
  );
}

async function recordResumed(
  client: Client,
  server: DevServer,
  sim: SimCluster,
  first: WorkerProcess,
): Promise<Recording> {
  say(`3/7: worker ${first.identity} is SIGKILLed at shard ${killAtShard}, a second worker finishes`);
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

  const json = await exportHistory(server, handle.firstExecutionRunId, workflowId);
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
    deployRun,
  );
}

async function recordSupervised(client: Client, server: DevServer, sim: SimCluster): Promise<Recording> {
  say('4/7: a supervised deploy, vLLM SIGKILLed, lost, relaunched, serving again, stopped');
  const handle = await startSimDeploy(client, sim, (spec) => ({ ...spec, supervise: superviseSettings }));
  const deployed = await within(handle.result());
  if (!deployed.supervision?.startsWith(`supervised by ${supervisorId}`)) {
    throw new Error(`the deploy did not start its supervisor: ${deployed.supervision ?? '(nothing said)'}`);
  }
  await superviseUntil(
    client,
    supervisorId,
    'two passed rounds',
    (s) => s.status === 'serving' && s.rounds >= 2,
  );
  const back = await killHeadVllmUntilRelaunched(client, sim, supervisorId);
  const relaunchedAt = back.relaunches.at(-1)?.endedAtMs ?? Date.now();
  await superviseUntil(
    client,
    supervisorId,
    'a round after the relaunch',
    (s) => (s.lastProbe?.atMs ?? 0) > relaunchedAt,
  );
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

// The upgrade that fails and rolls back: a spec that serves (the known-good revision), then an upgrade of it (other
// serve args) whose load crashes after the known-good was stopped. rollout.onFailure: rollback, so the failed run
// records its revision bad and continues as new (same workflow id) as the rollback's deploy of the known-good,
// pinned to its image ID. The upgrade's change: a shorter context, as an operator trying a setting would.
const upgradeArgs = ['--gpu-memory-utilization', '0.85', '--max-model-len', '16384'];

async function recordRolledBack(
  client: Client,
  server: DevServer,
  sim: SimCluster,
  step: string,
): Promise<Recording[]> {
  say(
    `${step}: a known-good deploy, then an upgrade whose load crashes at shard ${crashAtShard} and rolls back`,
  );
  const rollout = { onFailure: 'rollback' as const };
  const good = await startSimDeploy(client, sim, (spec) => ({ ...spec, rollout }));
  const served = await within(good.result());
  if (served.revision === undefined) throw new Error('the known-good deploy recorded no revision');
  say(`  known-good: revision ${served.revision}, served at ${served.endpoint}`);

  const head = sim.hosts[0];
  if (!head) throw new Error('the cluster has no head');
  setFaults(simStateDir, head.name, { crashAtShard });
  let upgrade: WorkflowHandleWithFirstExecutionRunId<typeof deploy>;
  let rollbackRunId: string;
  try {
    upgrade = await startSimDeploy(client, sim, (spec) => ({
      ...spec,
      rollout,
      serve: { ...spec.serve, args: upgradeArgs },
    }));
    // The rollback relaunches vLLM a few steps after the failed run continued as new: the fault goes as soon as
    // the run changes, so the rollback's load does not crash too.
    const deadline = Date.now() + deployTimeoutMs;
    for (;;) {
      const { runId, status } = await client.workflow.getHandle(workflowId).describe();
      if (runId !== upgrade.firstExecutionRunId) {
        rollbackRunId = runId;
        break;
      }
      if (status.name !== 'RUNNING')
        throw new Error(`the upgrade ended ${status.name} instead of continuing as the rollback`);
      if (Date.now() > deadline) throw new Error('the upgrade did not roll back in time');
      await sleep(100);
    }
  } finally {
    setFaults(simStateDir, head.name, {});
  }
  say(`  the upgrade failed and continued as new: rollback run ${rollbackRunId}`);
  // result() follows the chain of runs: the rollback's result.
  const restored = await within(upgrade.result());
  const rolledBack = restored.rolledBack;
  if (!rolledBack || rolledBack.from === undefined || restored.revision === undefined)
    throw new Error(`the upgrade's chain did not end as a rollback: ${JSON.stringify(restored)}`);
  if (rolledBack.to !== served.revision)
    throw new Error(`the rollback restored revision ${rolledBack.to}, not the known-good ${served.revision}`);
  const revisions = { knownGood: served.revision, bad: rolledBack.from, rollback: restored.revision };
  say(
    `  rolled back: revision ${revisions.bad} bad, revision ${revisions.rollback} restores ${revisions.knownGood}, served at ${restored.endpoint}`,
  );

  const failedJson = await exportHistory(server, upgrade.firstExecutionRunId, workflowId);
  const continued = expectClosedAs(
    eventsOf(failedJson),
    'workflowExecutionContinuedAsNewEventAttributes',
    'failed upgrade',
  );
  const next = continued.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  if (next !== rollbackRunId)
    throw new Error(`the failed upgrade continued as run ${next ?? '(none)'}, not ${rollbackRunId}`);
  const rollbackJson = await exportHistory(server, rollbackRunId, workflowId);
  const rollbackEvents = eventsOf(rollbackJson);
  expectClosedAs(rollbackEvents, 'workflowExecutionCompletedEventAttributes', 'rollback');
  const from = rollbackEvents[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
  if (from !== upgrade.firstExecutionRunId)
    throw new Error(
      `the rollback's run does not continue the failed upgrade (${from ?? 'no continued run'})`,
    );

  // The cluster's workflow runs on (it holds the hosts): its history so far, with every revision recorded.
  const clusterRun = await client.workflow.getHandle(clusterRecordId).describe();
  if (clusterRun.status.name !== 'RUNNING')
    throw new Error(`the cluster's workflow ${clusterRecordId} is ${clusterRun.status.name}, not running`);
  const clusterJson = await exportHistory(server, clusterRun.runId, clusterRecordId);
  const last = eventsOf(clusterJson).at(-1);
  if (
    last?.workflowExecutionCompletedEventAttributes ||
    last?.workflowExecutionFailedEventAttributes ||
    last?.workflowExecutionContinuedAsNewEventAttributes
  )
    throw new Error(`the cluster's workflow history ends closed (${last.eventType ?? '?'})`);

  const rollbackFile = 'deploy-rolled-back.json';
  return [
    recording(
      'deploy-rolled-back-failed.json',
      `an upgrade of the known-good (revision ${revisions.knownGood}; serve args changed) with rollout.onFailure: rollback whose server crashes at shard ${crashAtShard} of the load: diagnostics, its revision ${revisions.bad} recorded bad, the cluster told it failed, then continued as new (same workflow id) as the rollback of ${rollbackFile}`,
      upgrade.firstExecutionRunId,
      'continued-as-new',
      failedJson,
      deployRun,
      revisions,
    ),
    recording(
      rollbackFile,
      `the rollback's run (trigger rollback) that the failed upgrade continued as: the known-good revision ${revisions.knownGood} deployed again with its image pinned by ID, every step, recorded as revision ${revisions.rollback} that restores ${revisions.knownGood}`,
      rollbackRunId,
      'succeeded',
      rollbackJson,
      deployRun,
      revisions,
    ),
    recording(
      'cluster-held.json',
      `the cluster's own workflow (${clusterRecordId}), exported while it still runs: every deploy's hold (Update-with-Start), among the revisions it recorded ${revisions.knownGood} replaced, ${revisions.bad} bad, ${revisions.rollback} serving restores ${revisions.knownGood}, and each deploy's end`,
      clusterRun.runId,
      'running',
      clusterJson,
      { workflowType: 'cluster', workflowId: clusterRecordId },
      revisions,
    ),
  ];
}

function gitOutput(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

/** What the manifest says of one recording. */
function manifestEntry(r: Recording): Record<string, unknown> {
  return {
    file: r.file,
    description: r.description,
    workflowType: r.workflowType,
    workflowId: r.workflowId,
    runId: r.runId,
    outcome: r.outcome,
    events: r.events,
    workerIdentities: r.workerIdentities,
    ...(r.revisions ? { revisions: r.revisions } : {}),
    ...(r.file === 'deploy-failed.json'
      ? {
          plantedSecret: {
            note: `ray.env.HF_TOKEN and serve.env.HF_TOKEN are { fromEnv: ${plantedSecret.env} }; the workers' environment held this fake value, which must appear nowhere in the history nor in anything shown from it`,
            env: plantedSecret.env,
            value: plantedSecret.value,
          },
        }
      : {}),
  };
}

/** Where and with what the recordings were made. */
function recordedWith(server: DevServer): Record<string, unknown> {
  const cliVersion = execFileSync(temporalCliPath(), ['--version'], { encoding: 'utf8' }).trim();
  const sdkVersion = (
    JSON.parse(readFileSync(join(projectRoot, 'node_modules/@temporalio/worker/package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  return {
    recordedAt: new Date().toISOString(),
    recordedBy: 'scripts/record-histories.ts',
    gitCommit: gitOutput(['rev-parse', 'HEAD']),
    // Uncommitted workflow code means the histories were made by code that the commit above does not hold.
    workflowCodeUncommitted: gitOutput(['status', '--porcelain', '--', 'src/workflows']).length > 0,
    temporalCli: cliVersion,
    temporalSdk: sdkVersion,
    namespace: server.namespace,
  };
}

function writeAll(recordings: Recording[], sim: SimCluster, server: DevServer, only: Only): void {
  mkdirSync(historiesDir, { recursive: true });
  for (const r of recordings) writeFileSync(join(historiesDir, r.file), r.json);
  const manifestPath = join(historiesDir, 'manifest.json');
  if (only) {
    // The other recordings stay as they were, and so do their entries and the run that made them; the new
    // entries say when and with what they were recorded, on a cluster of their own.
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
      histories: Record<string, unknown>[];
    };
    const files = new Set(recordings.map((r) => r.file));
    const recordedApart = { only, cluster: clusterName, ...recordedWith(server) };
    manifest.histories = [
      ...manifest.histories.filter((h) => typeof h.file !== 'string' || !files.has(h.file)),
      ...recordings.map((r) => ({ ...manifestEntry(r), recordedApart })),
    ];
    writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    return;
  }
  const manifest = {
    ...recordedWith(server),
    cluster: {
      name: clusterName,
      simulated: { mode: sim.mode, hosts: sim.hosts.map((h) => h.name), jumpHostFor: { spark2: 'spark1' } },
      pace: { default: fastPace, resumed: resumePace },
    },
    histories: recordings.map(manifestEntry),
  };
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
}

async function main(): Promise<void> {
  const only = parseOnly(process.argv.slice(2));
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
    port: await freeLoopbackPort(),
    uiPort: await freeLoopbackPort(),
  });
  cleanups.push({ name: 'Temporal dev server', run: () => server.stop() });
  say(`Temporal dev server on ${server.address} (state in ${serverStateDir})`);

  const connection = await Connection.connect({ address: server.address });
  cleanups.push({ name: 'client connection', run: () => connection.close() });
  const client = new Client({ connection, namespace: server.namespace });

  const worker = await startWorker(server);
  say(`worker ${worker.identity} polling`);
  const recordings: Recording[] = [];
  const companions = (step: string) =>
    recordCompanions({ client, server, sim, cluster: clusterName, supervise: superviseSettings, step });
  const watched = (step: string) =>
    recordWatched({ client, server, sim, cluster: clusterName, supervise: superviseSettings, step });
  if (only === 'rollback') {
    recordings.push(...(await recordRolledBack(client, server, sim, '1/1')));
  } else if (only === 'companions') {
    recordings.push(...(await companions('1/1')));
  } else if (only === 'watch') {
    recordings.push(await watched('1/1'));
  } else {
    recordings.push(
      await recordSucceeded(client, server, sim),
      await recordFailed(client, server, sim),
      await recordResumed(client, server, sim, worker),
      await recordSupervised(client, server, sim),
      ...(await recordRolledBack(client, server, sim, '5/7')),
      ...(await companions('6/7')),
      await watched('7/7'),
    );
  }
  writeAll(recordings, sim, server, only);
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
