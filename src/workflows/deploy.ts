// The deploy: the launch sequence as one durable workflow (docs/architecture.md has the map from each step to
// its activity, remote commands, parser and test). Each step is an activity, or a fan-out of one per host,
// under the retry profile steps.ts gives it; progress is kept here and served by the `progress` query.
import {
  ApplicationFailure,
  CancellationScope,
  defineQuery,
  deprecatePatch,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { hostNamePattern, type DeploySpec } from '../config/schema.js';
import type { DeployTriggerName } from '../shared/failures.js';
import { deployWorkflowId, searchAttributes } from '../shared/constants.js';
import { retryProfiles, stepActivities } from './activity-options.js';
import { preflight } from './preflight.js';
import { StepTracker } from './step-tracker.js';
import { collectDiagnostics, tearDown } from './teardown.js';
import { notifyText, sendNotification } from './notify.js';
import { isSupervisorRelaunch, startSupervision, takeOverSupervision } from './supervise-handoff.js';
import { checkHostOwners, holdDetail, holdHosts, holdsHosts, recordDeployEnd } from './cluster-hold.js';
import { runUnderClusterId } from './under-cluster-id.js';
import { removeOldContainers, stopServices } from './clear-hosts.js';
import { startCompanions } from './companions.js';
import type { DeployOptions } from './supervise-api.js';
import type { HostIdentity } from '../shared/revisions.js';
import {
  bakeWindowOf,
  checkRevisions,
  recordServingRevision,
  rollBack,
  rollbackFailure,
  type Fallback,
} from './revisions.js';
import { clusterOf, validate, type DeployRun } from './cluster-run.js';
import { rayWorkers, waitHealthy } from './wait-healthy.js';
import { checkMasterPortFree, isRankFailure, launchRanks, rankFollowers } from './deploy-multiproc.js';
import {
  deploySteps,
  retryProfileOf,
  type DeployProgress,
  type DeployResult,
  type StepName,
} from './steps.js';
import { patches } from './patches.js';
import { countedFailure, recordClusterState, recordDeployOutcome } from './metrics.js';
import { revisionOf } from './supervise-state.js';
import { hostStepNamed, type HostStepInput } from '../steps/host-steps.js';
import { runsOn } from '../steps/host-step.js';
import { headAddressOf, launchServeInput, rayContainerInput } from '../host-commands/step-inputs.js';
import { markerPathFor, type HeadLook } from '../host-commands/launch.js';

export const progressQuery = defineQuery<DeployProgress>('progress');

export type DeployTrigger = DeployTriggerName;
export type { DeployOptions };

export async function deploy(input: unknown, options: DeployOptions = {}): Promise<DeployResult> {
  const info = workflowInfo();
  const launchId = `${info.workflowId}:${info.runId}`;
  const scheduled = info.typedSearchAttributes.get(scheduledByIdKey) !== undefined;
  const trigger: DeployTrigger = options.trigger ?? (scheduled ? 'schedule' : 'ui');
  // Only a name the schema would accept: a refused spec's cluster still goes into a search attribute.
  const named = typeof input === 'object' && input !== null && 'cluster' in input ? input.cluster : undefined;
  const clusterGuess = typeof named === 'string' && hostNamePattern.test(named) ? named : '(unknown)';
  const progress: DeployProgress = {
    cluster: clusterGuess,
    launchId,
    trigger,
    status: 'running',
    startedAtMs: Date.now(),
    steps: deploySteps.map((s) => ({ name: s.name, title: s.title, status: 'pending' })),
  };
  setHandler(progressQuery, () => progress);
  upsertSearchAttributes([{ key: searchAttributes.trigger, value: trigger }]);
  const tracker = new StepTracker(progress);

  // 0. validate: the same check as the CLI's, for a spec pasted into the Temporal UI too. Then the worker's
  // policy: which known_hosts, keys and secret sources a spec may name is the worker's to say, so an activity
  // checks it there before anything connects.
  let spec: DeploySpec;
  try {
    spec = await tracker.run('validate', async () => {
      const parsed = validate(input);
      deprecatePatch(patches.workerPolicy);
      await stepActivities(parsed)('validate').checkWorkerPolicy({ spec: parsed });
      return parsed;
    });
  } catch (err) {
    // A refused spec still belongs in the cluster's history, when it names a cluster at all.
    if (clusterGuess !== '(unknown)') {
      upsertSearchAttributes([{ key: searchAttributes.cluster, value: clusterGuess }]);
    }
    throw countedFailure(clusterGuess, tracker.fail(err, undefined), false);
  }
  progress.cluster = spec.cluster;
  upsertSearchAttributes([{ key: searchAttributes.cluster, value: spec.cluster }]);

  const clusterWorkflowId = deployWorkflowId(spec.cluster);
  if (info.workflowId !== clusterWorkflowId) {
    return runUnderClusterId(input, trigger, clusterWorkflowId, progress, options);
  }

  const acts = stepActivities(spec);
  const run: DeployRun = { ...clusterOf(spec), spec, launchId, acts, tracker, progress };
  const { hosts, head } = run;

  const holding = holdsHosts();
  if (options.rollback) progress.rollback = options.rollback;
  const failed = async (failed: ApplicationFailure): Promise<ApplicationFailure> => {
    // A rollback that fails too carries both failures, so the record and the notification tell the whole story.
    const failure = options.rollback ? rollbackFailure(failed, options.rollback) : failed;
    countedFailure(spec.cluster, failure, tookOver);
    if (holding) await recordDeployEnd(spec.cluster, { outcome: 'failed', error: failure.message });
    const text = notifyText.deployFailed(spec.cluster, failure.message);
    await sendNotification(spec, 'deployFailed', text, { launchId, trigger });
    return failure;
  };
  const multiproc = spec.serve.backend === 'multiproc';
  if (multiproc) deprecatePatch(patches.multiprocBackend);
  // What the hosts said about themselves in preflight (image IDs, kernels, weights): the revision records it.
  let identities: HostIdentity[] = [];
  // The known-good a failure after the stop rolls back to (rollout.onFailure: rollback).
  let fallback: Fallback | undefined;
  let recording = false;
  /** Whether this deploy took the cluster over (its old supervisor and services stopped): the metrics' state. */
  let tookOver = false;
  // 1–4: read, stop, remove, check. Nothing of this launch runs yet, so a failure leaves nothing to tear down.
  try {
    const checked = await tracker.run('preflight', async () => {
      const passed = await preflight(run, options.rollback);
      identities = passed.identities;
      if (multiproc) await checkMasterPortFree(run);
      // A supervisor's relaunch never takes hosts over, whatever its spec says.
      const takeOver = !isSupervisorRelaunch(spec.cluster, trigger) && (options.takeOver ?? spec.takeOver);
      const found = holding
        ? await checkHostOwners(spec, hosts, passed.machineIds, takeOver)
        : { owners: [] };
      const fallback = holding ? await checkRevisions(run, options, trigger) : undefined;
      const warnings = [...passed.warnings, ...(found.unchecked ? [found.unchecked] : [])];
      if (warnings.length > 0) tracker.detail('preflight', `warning: ${warnings.join('; ')}`);
      return { machineIds: passed.machineIds, owners: found.owners, fallback };
    });
    const { machineIds, owners } = checked;
    fallback = checked.fallback;
    // Every host passed: from here the hosts are this cluster's, even if the deploy fails.
    const taken = await tracker.run('holdHosts', async () => {
      if (!holding) return tracker.skip('holdHosts', 'a run recorded before clusters held hosts');
      const { taken, held } = await holdHosts(spec, hosts, machineIds, owners, trigger, options.rollback);
      tracker.detail(
        'holdHosts',
        held
          ? holdDetail(hosts, machineIds, owners)
          : 'not held: this Temporal server cannot start the cluster’s workflow (Update-with-Start)',
      );
      // Revisions live in the cluster's workflow: none is recorded where it could not start.
      recording = held;
      return taken;
    });
    // The old supervisor must not relaunch what this deploy removes.
    deprecatePatch(patches.supervision);
    await takeOverSupervision(spec.cluster, trigger);
    // From here the cluster is this deploy's to bring up: its state is loading until it serves or fails.
    tookOver = true;
    recordClusterState(spec.cluster, 'loading');
    const lists = await tracker.run('stopServices', () => stopServices(run));
    await tracker.run('removeContainers', () => removeOldContainers(run, lists, taken ?? new Map()));
    await tracker.run('verifyGpusClear', async () => {
      const { verifyGpusClear } = acts('verifyGpusClear');
      const { maxUsedMiB, minAvailableMiB } = spec.gpu;
      await Promise.all(hosts.map((h) => verifyGpusClear({ host: h.ref, maxUsedMiB, minAvailableMiB })));
    });
  } catch (err) {
    if (isCancellation(err)) {
      if (holding) await recordDeployEnd(spec.cluster, { outcome: 'cancelled' });
      recordDeployOutcome(spec.cluster, 'cancelled', { tookOver });
      throw tracker.cancelled(err, ['nothing to tear down: no container of this launch had started']);
    }
    throw await failed(tracker.fail(err, undefined));
  }

  // 5–11. From here on, containers run on the hosts: a failure carries diagnostics from every host.
  try {
    const headLook = multiproc ? undefined : await startRayCluster(run);
    await runHostStep(run, 'checkServePort');
    const pid = multiproc
      ? await launchRanks(run)
      : (
          await tracker.run('launchServe', () =>
            acts('launchServe').launchServe({
              ...launchServeInput(spec, launchId, head),
              ...(headLook ? { headLook } : {}),
            }),
          )
        ).pid;
    const loadStartedAtMs = Date.now();
    await tracker.run('waitHealthy', () =>
      multiproc ? waitHealthy(run, pid, rankFollowers(run)) : waitHealthy(run, pid, rayWorkers(run)),
    );
    const loadSeconds = (Date.now() - loadStartedAtMs) / 1000;
    const modelId = spec.serve.servedModelName ?? spec.serve.model;
    const { text, completionTokens, tokensPerSecond } = await tracker.run('smokeTest', () =>
      acts('smokeTest').smokeTest({
        head: head.ref,
        clusterIp: head.clusterIp,
        port: spec.serve.port,
        model: modelId,
        prompt: spec.smoke.prompt,
        maxTokens: spec.smoke.maxTokens,
        apiKey: spec.serve.env.VLLM_API_KEY,
      }),
    );
    await startCompanions(run);
    const endpoint = `http://${head.address}:${spec.serve.port}/v1`;
    return await tracker.run('record', async () => {
      progress.endpoint = endpoint;
      progress.status = 'succeeded';
      recordDeployOutcome(spec.cluster, 'succeeded', { tookOver });
      upsertSearchAttributes([
        { key: searchAttributes.outcome, value: 'succeeded' },
        { key: searchAttributes.loadSeconds, value: loadSeconds },
      ]);
      // Listing deploys (`liftoff history`) reads these without fetching each result.
      upsertMemo({
        summary: {
          endpoint,
          model: modelId,
          loadSeconds,
          totalSeconds: (Date.now() - progress.startedAtMs) / 1000,
          tokensPerSecond,
        },
      });
      const result: DeployResult = {
        cluster: spec.cluster,
        launchId,
        endpoint,
        model: modelId,
        stepDurationsMs: tracker.durations(),
        totalSeconds: (Date.now() - progress.startedAtMs) / 1000,
        loadSeconds,
        smoke: { text, completionTokens, tokensPerSecond },
      };
      const { rollback } = options;
      const revision = recording
        ? await recordServingRevision(
            run,
            trigger,
            identities,
            { loadSeconds, tokensPerSecond },
            rollback?.to,
          )
        : undefined;
      if (revision !== undefined) progress.revision = result.revision = revision;
      if (rollback) {
        result.rolledBack = {
          to: rollback.to,
          cause: rollback.cause,
          ...(rollback.from !== undefined ? { from: rollback.from } : {}),
          ...(rollback.failedRun !== undefined ? { failedRun: rollback.failedRun } : {}),
        };
      }
      if (multiproc) deprecatePatch(patches.multiprocSupervision);
      result.supervision = await startSupervision(
        spec.cluster,
        spec,
        { launchId, servingSinceMs: Date.now(), endpoint, ...revisionOf(revision, Date.now()) },
        { spec: spec.supervise.enabled, option: options.supervise !== false },
        trigger,
        bakeWindowOf(spec, revision, fallback),
      );
      tracker.detail(
        'record',
        [...(revision !== undefined ? [`revision ${revision}`] : []), result.supervision].join('; '),
      );
      if (holding) await recordDeployEnd(spec.cluster, { outcome: 'succeeded', endpoint });
      if (rollback) {
        const text = notifyText.rolledBack(spec.cluster, rollback.from, rollback.to, rollback.cause);
        await sendNotification(spec, 'rolledBack', text, { ...result.rolledBack, revision, endpoint });
      } else {
        const served = notifyText.deploySucceeded(spec.cluster, modelId, endpoint);
        await sendNotification(spec, 'deploySucceeded', served, { launchId, endpoint, trigger, loadSeconds });
      }
      return result;
    });
  } catch (err) {
    if (isCancellation(err)) {
      // A cancel asks for the cluster to be left clean, whatever onFailure says.
      const teardown = await CancellationScope.nonCancellable(() => tearDown(run));
      if (holding) await recordDeployEnd(spec.cluster, { outcome: 'cancelled' });
      recordDeployOutcome(spec.cluster, 'cancelled', { tookOver });
      throw tracker.cancelled(err, teardown);
    }
    const diagnostics = await CancellationScope.nonCancellable(() => collectDiagnostics(run));
    if (fallback && recording) {
      // The known-good was stopped for this launch: it comes back, and this revision is recorded bad.
      const failure = tracker.fail(err, diagnostics, ['replaced by the rollback']);
      return rollBack(run, trigger, identities, fallback, failure, options);
    }
    // A failed rank leaves the other ranks waiting for it (and holding their GPUs), whatever onFailure says;
    // their logs stay in serve.logPath on each host.
    const teardown =
      spec.onFailure === 'teardown' || (multiproc && isRankFailure(err))
        ? await CancellationScope.nonCancellable(() => tearDown(run))
        : ['left for inspection (onFailure: leave)'];
    throw await failed(tracker.fail(err, diagnostics, teardown));
  }
}

/** Steps 5–7 of the Ray backend: the head, the workers, the cluster's check, whose last look at the head it returns. */
async function startRayCluster(run: DeployRun): Promise<HeadLook | undefined> {
  const { spec, head, workers, launchId, acts, tracker } = run;
  const hostCount = run.hosts.length;
  await tracker.run('startRayHead', () =>
    acts('startRayHead').startRayHead(rayContainerInput(spec, launchId, head)),
  );
  await tracker.run('startRayWorkers', async () => {
    if (workers.length === 0) return tracker.skip('startRayWorkers', 'single host');
    const headAddress = headAddressOf(spec, head);
    const { startRayWorker } = acts('startRayWorkers');
    await Promise.all(workers.map((w) => startRayWorker(rayContainerInput(spec, launchId, w, headAddress))));
  });
  return tracker.run('verifyRayCluster', async () => {
    deprecatePatch(patches.launchReadsWithVerify);
    const state = await acts('verifyRayCluster').verifyRayCluster({
      head,
      workers,
      container: spec.ray.container,
      expectedNodes: hostCount,
      expectedGpus: hostCount * spec.gpu.perHost,
      // Its last look at the head (Ray's count, the marker) is returned, and serves as the launch's pre-read.
      launchMarkerPath: markerPathFor(spec.serve.logPath),
    });
    tracker.detail('verifyRayCluster', `${state.nodes} nodes, ${state.gpusTotal} GPUs`);
    return state.headLook;
  });
}

const scheduledByIdKey = { name: 'TemporalScheduledById', type: 'KEYWORD' } as const;

type HostStepActivities = Record<string, (input: HostStepInput) => Promise<string>>;

/**
 * A host step (src/steps/host-step.ts): skipped where the spec does not run it or the run predates it (its patch),
 * else its activity on each of its hosts at once, their details joined.
 */
async function runHostStep({ spec, hosts, tracker }: DeployRun, name: StepName): Promise<void> {
  const step = hostStepNamed(name);
  const skipped = step.skippedFor(spec);
  if (skipped !== undefined) return tracker.skip(name, skipped);
  if (!patched(step.patch)) return tracker.skip(name, 'not a step of the version this deploy started on');
  await tracker.run(name, async () => {
    const activity = proxyActivities<HostStepActivities>(retryProfiles(spec)[retryProfileOf(name)])[name];
    if (!activity) throw new Error(`no activity for host step ${name}`);
    const on = hosts.filter((h) => runsOn(step, h.role));
    const details = await Promise.all(
      on.map((h) =>
        activity({ spec, host: { name: h.name, role: h.role, clusterIp: h.clusterIp, ref: h.ref } }),
      ),
    );
    tracker.detail(name, details.join('; '));
  });
}
