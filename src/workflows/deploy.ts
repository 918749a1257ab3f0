// The deploy: the launch sequence of docs/architecture.md as one durable workflow. Each step is an activity (or a fan-out
// of one per host) with its own timeouts and retry policy; progress is kept here and served by a query.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowFailure,
  defineQuery,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type * as activities from '../activities/index.js';
import type { CheckServeResult, HostDiagnostics, NamedHost, PreflightReport } from '../activities/types.js';
import { deploySpecSchema, type DeploySpec } from '../config/schema.js';
import { formatIssues } from '../config/errors.js';
import { parseDuration, formatDuration } from '../config/duration.js';
import { dirnameOf, modelPathFor } from '../config/derive.js';
import { resolveSshTarget } from '../config/targets.js';
import { FailureType } from '../shared/failures.js';
import { deployWorkflowId, searchAttributes } from '../shared/constants.js';
import { attemptsWithin } from './retry-budget.js';
import { vllmPhases, type VllmPhase } from '../parsers/vllm-log.js';
import {
  deploySteps,
  type DeployProgress,
  type LoadProgress,
  type DeployResult,
  type StepName,
  type StepState,
} from './steps.js';

export const progressQuery = defineQuery<DeployProgress>('progress');

export type DeployTrigger = 'cli' | 'ui' | 'schedule';

export interface DeployOptions {
  trigger?: DeployTrigger;
}

const hostKeyFailures = [FailureType.hostKeyUnknown, FailureType.hostKeyMismatch];

// Every activity heartbeats while it works (see activities/heartbeat.ts): a worker that dies mid-activity is
// noticed within this window and the activity is retried on another worker.
const heartbeatTimeout = '10s';

/** Short host commands: a few retries ride out an sshd restart or a dropped connection. */
const hostStep = proxyActivities<typeof activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout,
  retry: {
    initialInterval: '2s',
    backoffCoefficient: 2,
    maximumInterval: '20s',
    maximumAttempts: 4,
    nonRetryableErrorTypes: hostKeyFailures,
  },
});

/**
 * One poll of the loading server: short and retried once. A host that stays unreachable is counted against
 * serve.hostUnreachableTimeout by the workflow, not by retries.
 */
const pollStep = proxyActivities<typeof activities>({
  startToCloseTimeout: '45s',
  heartbeatTimeout,
  retry: {
    initialInterval: '1s',
    maximumAttempts: 2,
    nonRetryableErrorTypes: hostKeyFailures,
  },
});

export async function deploy(input: unknown, options: DeployOptions = {}): Promise<DeployResult> {
  const info = workflowInfo();
  const launchId = `${info.workflowId}:${info.runId}`;
  const scheduled = info.typedSearchAttributes.get(scheduledByIdKey) !== undefined;
  const trigger: DeployTrigger = options.trigger ?? (scheduled ? 'schedule' : 'ui');
  const clusterGuess = isRecord(input) && typeof input.cluster === 'string' ? input.cluster : '(unknown)';
  const progress: DeployProgress = {
    cluster: clusterGuess,
    launchId,
    trigger,
    status: 'running',
    startedAtMs: Date.now(),
    steps: deploySteps.map((s): StepState => ({ name: s.name, title: s.title, status: 'pending' })),
  };
  setHandler(progressQuery, () => progress);
  upsertSearchAttributes([{ key: searchAttributes.trigger, value: trigger }]);

  const tracker = new StepTracker(progress);

  let spec: DeploySpec;
  try {
    spec = await tracker.run('validate', () => Promise.resolve(validate(input)));
  } catch (err) {
    // A refused spec still belongs in the cluster's history, when it names a cluster at all.
    if (clusterGuess !== '(unknown)') {
      upsertSearchAttributes([{ key: searchAttributes.cluster, value: clusterGuess }]);
    }
    throw tracker.fail(err, undefined);
  }
  progress.cluster = spec.cluster;
  upsertSearchAttributes([{ key: searchAttributes.cluster, value: spec.cluster }]);

  const clusterWorkflowId = deployWorkflowId(spec.cluster);
  if (info.workflowId !== clusterWorkflowId) {
    return runUnderClusterId(input, trigger, clusterWorkflowId, progress);
  }

  const auth = {
    privateKeyPath: spec.ssh.privateKeyPath,
    useAgent: spec.ssh.useAgent,
    knownHostsPath: spec.ssh.knownHostsPath,
  };
  const hosts: (NamedHost & { role: 'head' | 'worker'; address: string })[] = spec.hosts.map((h) => ({
    name: h.name,
    role: h.role,
    address: h.address,
    clusterIp: h.clusterIp,
    ref: { target: resolveSshTarget(spec.hosts, spec.ssh, h.name), auth },
  }));
  const head = hosts.find((h) => h.role === 'head');
  if (!head) throw ApplicationFailure.nonRetryable('no head host', FailureType.invalidSpec);
  const workers = hosts.filter((h) => h !== head);
  const expectedGpus = hosts.length * spec.gpu.perHost;

  try {
    await tracker.run('preflight', () => preflight(spec, hosts, head));
    await tracker.run('stopServices', async () => {
      if (spec.cleanup.services.length === 0) return tracker.skip('stopServices', 'no services listed');
      const results = await Promise.all(
        hosts.map((h) =>
          hostStep.stopServices({
            host: h.ref,
            units: spec.cleanup.services,
            disable: spec.cleanup.disableServices,
          }),
        ),
      );
      tracker.detail(
        'stopServices',
        results
          .map((r) => `${r.host}: stopped ${r.stopped.length}, disabled ${r.disabled.length}`)
          .join('; '),
      );
    });
    await tracker.run('removeContainers', async () => {
      const names = [...new Set([...spec.cleanup.containers, spec.ray.container])];
      const results = await Promise.all(
        hosts.map((h) => hostStep.removeContainers({ host: h.ref, names, cluster: spec.cluster })),
      );
      tracker.detail(
        'removeContainers',
        results.map((r) => `${r.host}: removed ${r.removed.join(', ') || 'none'}`).join('; '),
      );
    });
    await tracker.run('verifyGpusClear', async () => {
      const budgetMs = parseDuration(spec.gpu.clearTimeout) ?? 120_000;
      const gpuCheck = proxyActivities<typeof activities>({
        startToCloseTimeout: '30s',
        heartbeatTimeout,
        retry: {
          initialInterval: '2s',
          backoffCoefficient: 1.5,
          maximumInterval: '10s',
          maximumAttempts: attemptsWithin(budgetMs, {
            initialIntervalMs: 2000,
            backoffCoefficient: 1.5,
            maximumIntervalMs: 10_000,
            attemptMs: 1000,
          }),
          nonRetryableErrorTypes: hostKeyFailures,
        },
      });
      await Promise.all(
        hosts.map((h) =>
          gpuCheck.verifyGpusClear({
            host: h.ref,
            maxUsedMiB: spec.gpu.maxUsedMiB,
            minAvailableMiB: spec.gpu.minAvailableMiB,
          }),
        ),
      );
    });
  } catch (err) {
    if (isCancellation(err)) {
      throw tracker.cancelled(err, ['nothing to tear down: no container of this launch had started']);
    }
    throw tracker.fail(err, undefined);
  }

  // From here on, containers run on the hosts: a failure carries diagnostics from every host.
  try {
    const rayBase = {
      cluster: spec.cluster,
      launchId,
      image: spec.ray.image,
      container: spec.ray.container,
      port: spec.ray.port,
      env: spec.ray.env,
      volumes: spec.ray.volumes,
      shmSize: spec.ray.shmSize,
      gpus: spec.gpu.perHost,
    };
    await tracker.run('startRayHead', () =>
      hostStep.startRayHead({ ...rayBase, host: head.ref, clusterIp: head.clusterIp }),
    );
    await tracker.run('startRayWorkers', async () => {
      if (workers.length === 0) return tracker.skip('startRayWorkers', 'single host');
      const headAddress = `${head.clusterIp}:${spec.ray.port}`;
      await Promise.all(
        workers.map((w) =>
          hostStep.startRayWorker({ ...rayBase, host: w.ref, clusterIp: w.clusterIp, headAddress }),
        ),
      );
    });
    await tracker.run('verifyRayCluster', async () => {
      const budgetMs = parseDuration(spec.ray.verifyTimeout) ?? 90_000;
      const rayCheck = proxyActivities<typeof activities>({
        startToCloseTimeout: '40s',
        heartbeatTimeout: '20s',
        retry: {
          initialInterval: '1s',
          backoffCoefficient: 1.5,
          maximumInterval: '5s',
          maximumAttempts: attemptsWithin(budgetMs, {
            initialIntervalMs: 1000,
            backoffCoefficient: 1.5,
            maximumIntervalMs: 5000,
            attemptMs: 10_000,
          }),
          nonRetryableErrorTypes: hostKeyFailures,
        },
      });
      const state = await rayCheck.verifyRayCluster({
        head,
        workers,
        container: spec.ray.container,
        expectedNodes: hosts.length,
        expectedGpus,
      });
      tracker.detail('verifyRayCluster', `${state.nodes} nodes, ${state.gpusTotal} GPUs`);
    });
    const launch = await tracker.run('launchServe', () =>
      proxyActivities<typeof activities>({
        startToCloseTimeout: '2 minutes',
        heartbeatTimeout,
        retry: {
          initialInterval: '2s',
          maximumAttempts: 4,
          nonRetryableErrorTypes: [
            ...hostKeyFailures,
            FailureType.serverExited,
            FailureType.serveLaunchFailed,
          ],
        },
      }).launchServe({
        head: head.ref,
        clusterIp: head.clusterIp,
        container: spec.ray.container,
        launchId,
        model: spec.serve.model,
        servedModelName: spec.serve.servedModelName,
        port: spec.serve.port,
        tensorParallelSize: spec.serve.tensorParallelSize,
        args: spec.serve.args,
        env: spec.serve.env,
        logPath: spec.serve.logPath,
        rayPort: spec.ray.port,
      }),
    );
    const loadStartedAtMs = Date.now();
    await tracker.run('waitHealthy', () => waitHealthy(spec, head, workers, launch.pid, progress));
    const loadSeconds = (Date.now() - loadStartedAtMs) / 1000;
    const modelId = spec.serve.servedModelName ?? spec.serve.model;
    const smoke = await tracker.run('smokeTest', () =>
      hostStep.smokeTest({
        head: head.ref,
        clusterIp: head.clusterIp,
        port: spec.serve.port,
        model: modelId,
        prompt: spec.smoke.prompt,
        maxTokens: spec.smoke.maxTokens,
        apiKey: spec.serve.env.VLLM_API_KEY,
      }),
    );
    const endpoint = `http://${head.address}:${spec.serve.port}/v1`;
    return await tracker.run('record', () => {
      progress.endpoint = endpoint;
      progress.status = 'succeeded';
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
          tokensPerSecond: smoke.tokensPerSecond,
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
        smoke: {
          text: smoke.text,
          completionTokens: smoke.completionTokens,
          tokensPerSecond: smoke.tokensPerSecond,
        },
      };
      return Promise.resolve(result);
    });
  } catch (err) {
    if (isCancellation(err)) {
      // A cancel asks for the cluster to be left clean, whatever onFailure says.
      const teardown = await CancellationScope.nonCancellable(() => tearDown(spec, hosts));
      throw tracker.cancelled(err, teardown);
    }
    const diagnostics = await CancellationScope.nonCancellable(() =>
      hostStep
        .collectDiagnostics({
          hosts,
          container: spec.ray.container,
          logPath: spec.serve.logPath,
          headName: head.name,
          secretEnv: [spec.ray.env, spec.serve.env],
        })
        .catch((e: unknown): HostDiagnostics[] => [
          { host: '(all)', reachable: false, errors: [messageOf(e)] },
        ]),
    );
    const teardown =
      spec.onFailure === 'teardown'
        ? await CancellationScope.nonCancellable(() => tearDown(spec, hosts))
        : ['left for inspection (onFailure: leave)'];
    throw tracker.fail(err, diagnostics, teardown);
  }
}

/**
 * Removes this launch's Ray container on every host. The server runs inside the head's container, so this
 * stops the server, Ray and every container the deploy started. One line per host says what happened.
 */
async function tearDown(spec: DeploySpec, hosts: NamedHost[]): Promise<string[]> {
  const results = await Promise.allSettled(
    hosts.map((h) =>
      hostStep.removeContainers({ host: h.ref, names: [spec.ray.container], cluster: spec.cluster }),
    ),
  );
  return results.map((r, i) =>
    r.status === 'fulfilled'
      ? `${r.value.host}: ${r.value.removed.length > 0 ? `removed ${r.value.removed.join(', ')} (Ray${i === 0 ? ' and the server' : ''} stopped)` : 'nothing to remove'}`
      : `${hosts[i]?.name ?? '?'}: teardown failed: ${messageOf(r.reason)}`,
  );
}

/**
 * A run started under another id (the Temporal UI, a schedule) holds only the trigger: the deploy itself runs
 * as a child under the cluster's id, so Temporal refuses it while another deploy of the cluster runs.
 */
async function runUnderClusterId(
  input: unknown,
  trigger: DeployTrigger,
  workflowId: string,
  progress: DeployProgress,
): Promise<DeployResult> {
  progress.deployWorkflowId = workflowId;
  // Lets `liftoff history` show the deploy once (the child), not once more for the run that only started it.
  upsertMemo({ deployWorkflowId: workflowId });
  publishDetails(progress);
  let child;
  try {
    child = await startChild(deploy, {
      workflowId,
      args: [input, { trigger }],
      parentClosePolicy: 'REQUEST_CANCEL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: searchAttributes.cluster, value: progress.cluster },
        { key: searchAttributes.trigger, value: trigger },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    progress.status = 'refused';
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'refused' }]);
    publishDetails(progress);
    throw ApplicationFailure.create({
      type: FailureType.deployAlreadyRunning,
      message: `a deploy of ${progress.cluster} is already running (workflow ${workflowId}); this ${trigger} run started nothing. Follow it with \`liftoff status ${progress.cluster}\` or cancel it first.`,
      nonRetryable: true,
    });
  }
  try {
    const result = await child.result();
    progress.status = 'succeeded';
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'succeeded' }]);
    return result;
  } catch (err) {
    const cancelled = err instanceof ChildWorkflowFailure && isCancellation(err.cause);
    progress.status = cancelled ? 'cancelled' : 'failed';
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: progress.status }]);
    publishDetails(progress);
    // This run was cancelled (from the UI), and the child with it: end as cancelled too.
    if (CancellationScope.current().consideredCancelled)
      throw new CancelledFailure(`${workflowId} was cancelled`);
    const cause = rootApplicationFailure(err);
    throw ApplicationFailure.create({
      type: cancelled ? FailureType.deployCancelled : (cause?.type ?? 'DeployFailed'),
      message: `${workflowId} ${cancelled ? 'was cancelled' : `failed: ${messageOf(err)}`}`,
      nonRetryable: true,
      details: cause?.details ?? [],
    });
  }
}

// ------------------------------------------------------------------------------------------------ steps

function validate(input: unknown): DeploySpec {
  const parsed = deploySpecSchema.safeParse(input);
  if (!parsed.success) {
    throw ApplicationFailure.create({
      type: FailureType.invalidSpec,
      message: `invalid spec:\n${formatIssues(parsed.error)}`,
      nonRetryable: true,
    });
  }
  return parsed.data;
}

async function preflight(
  spec: DeploySpec,
  hosts: (NamedHost & { role: string })[],
  head: NamedHost,
): Promise<void> {
  const modelPath = modelPathFor(spec) ?? '';
  const reports = await Promise.allSettled(
    hosts.map((h) =>
      hostStep.preflightHost({
        host: h.ref,
        clusterIp: h.clusterIp,
        iface: plainEnv(spec.ray.env, 'NCCL_SOCKET_IFNAME'),
        image: spec.ray.image,
        modelPath,
        volumes: spec.ray.volumes,
        logDir: h === head ? dirnameOf(spec.serve.logPath) : undefined,
        minFreeDiskGiB: spec.preflight.minFreeDiskGiB,
      }),
    ),
  );
  const problems: string[] = [];
  const byHost: Record<string, PreflightReport | { error: string }> = {};
  reports.forEach((r, i) => {
    const name = hosts[i]?.name ?? `host ${i}`;
    if (r.status === 'rejected') {
      problems.push(`${name}: ssh: ${messageOf(r.reason)}`);
      byHost[name] = { error: messageOf(r.reason) };
    } else {
      byHost[name] = r.value;
      for (const c of r.value.checks) if (!c.ok) problems.push(`${name}: ${c.name}: ${c.detail}`);
    }
  });
  if (problems.length > 0) {
    throw ApplicationFailure.create({
      type: FailureType.preflightFailed,
      message: `nothing was stopped or removed:\n  ${problems.join('\n  ')}`,
      nonRetryable: true,
      details: [byHost],
    });
  }
}

/** Watches the other hosts during the load: one try per poll; the workflow keeps the unreachable clock. */
const workerPoll = proxyActivities<typeof activities>({
  startToCloseTimeout: '30s',
  heartbeatTimeout,
  retry: { maximumAttempts: 1 },
});

type HostPoll<T> =
  { ok: true; value: T } | { ok: false; error: string; nonRetryable: boolean; cause: unknown };

function settle<T>(p: Promise<T>): Promise<HostPoll<T>> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => {
      // A cancelled deploy stops here, not after one more poll.
      if (isCancellation(err)) throw err;
      return {
        ok: false as const,
        error: messageOf(err),
        cause: err,
        nonRetryable: hostKeyFailures.some((t) => t === rootApplicationFailure(err)?.type),
      };
    },
  );
}

async function waitHealthy(
  spec: DeploySpec,
  head: NamedHost,
  workers: NamedHost[],
  pid: number,
  progress: DeployProgress,
): Promise<void> {
  const loadTimeoutMs = parseDuration(spec.serve.loadTimeout) ?? 25 * 60_000;
  const pollMs = parseDuration(spec.serve.pollInterval) ?? 10_000;
  const stallMs = parseDuration(spec.serve.stallTimeout) ?? 5 * 60_000;
  const unreachableMs = parseDuration(spec.serve.hostUnreachableTimeout) ?? 120_000;
  // The deadline is fixed here, once: retries of the poll cannot stretch it.
  const startedAt = Date.now();
  const deadline = startedAt + loadTimeoutMs;
  const load: LoadProgress = { phase: 'starting', elapsedS: 0, health: 'unknown', lastLogAtMs: startedAt };
  progress.load = load;
  let offset = 0;
  let tail: string[] = [];
  const unreachableSince: Record<string, number> = {};
  for (;;) {
    // A host that does not answer has been silent since this poll began, not since it gave up.
    const pollStartedAt = Date.now();
    const [headPoll, workerPolls] = await Promise.all([
      settle(
        pollStep.checkServeHealth({
          head: head.ref,
          clusterIp: head.clusterIp,
          container: spec.ray.container,
          pid,
          logPath: spec.serve.logPath,
          logOffset: offset,
          port: spec.serve.port,
          model: spec.serve.servedModelName ?? spec.serve.model,
          secretEnv: [spec.ray.env, spec.serve.env],
          apiKey: spec.serve.env.VLLM_API_KEY,
        }),
      ),
      Promise.all(
        workers.map((w) => settle(workerPoll.checkRayWorker({ host: w.ref, container: spec.ray.container }))),
      ),
    ]);
    const now = Date.now();
    const where = () =>
      `phase ${load.phase}${load.shardsTotal ? `, shard ${load.shardsDone}/${load.shardsTotal}` : ''}`;

    // Reachability first: a host that does not answer is given serve.hostUnreachableTimeout to come back.
    const polls: [NamedHost, HostPoll<unknown>][] = [
      [head, headPoll],
      ...workers.map((w, i): [NamedHost, HostPoll<unknown>] => [w, workerPolls[i] ?? headPoll]),
    ];
    for (const [host, poll] of polls) {
      if (poll.ok) {
        delete unreachableSince[host.name];
        continue;
      }
      if (poll.nonRetryable) throw poll.cause;
      unreachableSince[host.name] ??= pollStartedAt;
      const downMs = now - (unreachableSince[host.name] ?? now);
      if (downMs >= unreachableMs) {
        throw loadFailure(
          FailureType.hostUnreachable,
          `${host.name} has not answered for ${formatDuration(downMs)} (serve.hostUnreachableTimeout ${spec.serve.hostUnreachableTimeout}) at ${where()}: ${poll.error}`,
          tail,
          load,
        );
      }
    }
    load.unreachableSinceMs = { ...unreachableSince };
    for (const poll of workerPolls) {
      if (poll.ok && !poll.value.containerRunning) {
        throw loadFailure(
          FailureType.rayWorkerLost,
          `the Ray container ${spec.ray.container} on ${poll.value.host} is ${poll.value.containerStatus ?? 'gone'} at ${where()}: the server lost that node`,
          tail,
          load,
        );
      }
    }
    if (!headPoll.ok) {
      publishDetails(progress);
      await sleep(Math.max(0, Math.min(pollMs, deadline - now)));
      if (Date.now() < deadline) continue;
      throw loadFailure(
        FailureType.loadTimeout,
        `vllm was not healthy within serve.loadTimeout ${spec.serve.loadTimeout}; ${head.name} did not answer the last poll (${headPoll.error}); last ${where()}`,
        tail,
        load,
      );
    }
    const r: CheckServeResult = headPoll.value;
    offset = r.logOffset;
    tail = r.tail;
    Object.assign(load, {
      elapsedS: Math.round((now - startedAt) / 1000),
      health: r.health,
      lastLine: r.tail[r.tail.length - 1],
    });
    if (r.logGrew) load.lastLogAtMs = now;
    if (r.summary) {
      // Each poll summarises only the new lines: the phase only moves forward, and a failure keeps the
      // phase the load had reached (the failure itself is r.summary.fatal).
      const seen = r.summary.phase === 'failed' ? r.summary.reached : r.summary.phase;
      if (seen && vllmPhases.indexOf(seen) > vllmPhases.indexOf(load.phase as VllmPhase)) load.phase = seen;
      if (r.summary.shard) {
        Object.assign(load, {
          shardsDone: r.summary.shard.done,
          shardsTotal: r.summary.shard.total,
          percent: r.summary.shard.percent,
        });
      }
      if (r.summary.etaS !== undefined) Object.assign(load, { etaS: r.summary.etaS });
    }
    publishDetails(progress);

    if (r.summary?.fatal) {
      const hint =
        r.summary.fatal.kind === 'ray_oom' && spec.ray.env.RAY_memory_monitor_refresh_ms !== '0'
          ? '\nRAY_memory_monitor_refresh_ms was not set to "0" at `ray start`: Ray\'s memory monitor killed the worker. Set it in ray.env.'
          : '';
      throw loadFailure(
        FailureType.serverFatal,
        `vllm failed (${r.summary.fatal.kind}) at ${where()}: ${r.summary.fatal.line}${hint}`,
        tail,
        load,
      );
    }
    if (!r.processAlive || !r.containerRunning) {
      const what = !r.containerRunning
        ? `container ${spec.ray.container} is not running`
        : `vllm (pid ${pid}) exited`;
      throw loadFailure(FailureType.serverExited, `${what} at ${where()}`, tail, load);
    }
    // Ready means every host answers: a server that looks healthy while a worker is cut off is not done.
    if (r.health === 'ok' && r.modelListed && Object.keys(unreachableSince).length === 0) {
      load.phase = 'ready';
      return;
    }
    if (now - load.lastLogAtMs >= stallMs) {
      throw loadFailure(
        FailureType.serverHung,
        `vllm looks hung at ${where()}: its log has not moved for ${formatDuration(now - load.lastLogAtMs)} (serve.stallTimeout ${spec.serve.stallTimeout}) while the process is alive`,
        tail,
        load,
      );
    }
    if (now >= deadline) {
      throw loadFailure(
        FailureType.loadTimeout,
        `vllm was not healthy within serve.loadTimeout ${spec.serve.loadTimeout}; last ${where()}`,
        tail,
        load,
      );
    }
    await sleep(Math.min(pollMs, deadline - now));
  }
}

function loadFailure(type: string, message: string, tail: string[], load: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message: `${message}\n--- serve log tail ---\n${tail.slice(-20).join('\n')}`,
    nonRetryable: true,
    details: [{ load, logTail: tail }],
  });
}

// ------------------------------------------------------------------------------------------ bookkeeping

class StepTracker {
  constructor(private readonly progress: DeployProgress) {}

  private state(name: StepName): StepState {
    const s = this.progress.steps.find((x) => x.name === name);
    if (!s) throw new Error(`unknown step ${name}`);
    return s;
  }

  async run<T>(name: StepName, body: () => Promise<T>): Promise<T> {
    const s = this.state(name);
    s.status = 'running';
    s.startedAtMs = Date.now();
    this.progress.currentStep = name;
    publishDetails(this.progress);
    try {
      const value = await body();
      if (s.status === 'running') s.status = 'done';
      return value;
    } catch (err) {
      s.status = isCancellation(err) ? 'cancelled' : 'failed';
      s.error = messageOf(err);
      throw err;
    } finally {
      s.endedAtMs = Date.now();
      s.durationMs = s.endedAtMs - s.startedAtMs;
      publishDetails(this.progress);
    }
  }

  skip(name: StepName, why: string): void {
    const s = this.state(name);
    s.status = 'skipped';
    s.detail = why;
  }

  detail(name: StepName, text: string): void {
    this.state(name).detail = text;
  }

  durations(): Partial<Record<StepName, number>> {
    const out: Partial<Record<StepName, number>> = {};
    for (const s of this.progress.steps) if (s.durationMs !== undefined) out[s.name] = s.durationMs;
    return out;
  }

  /**
   * A cancelled deploy ends as cancelled. What teardown did goes into the progress, the memo (visible in the UI
   * and to `liftoff cancel` without a worker) and the history.
   */
  cancelled(err: unknown, teardown: string[]): CancelledFailure {
    const step =
      this.progress.steps.find((s) => s.status === 'cancelled')?.name ??
      this.progress.currentStep ??
      'validate';
    this.progress.status = 'cancelled';
    this.progress.teardown = teardown;
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'cancelled' }]);
    upsertMemo({ cancelled: { step, teardown } });
    publishDetails(this.progress);
    return err instanceof CancelledFailure ? err : new CancelledFailure(`deploy cancelled during ${step}`);
  }

  /** The workflow's failure: the step, the cause's type and message, and diagnostics when there are any. */
  fail(err: unknown, diagnostics: HostDiagnostics[] | undefined, teardown?: string[]): ApplicationFailure {
    this.progress.status = 'failed';
    if (teardown) this.progress.teardown = teardown;
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'failed' }]);
    publishDetails(this.progress);
    const step =
      this.progress.steps.find((s) => s.status === 'failed')?.name ?? this.progress.currentStep ?? 'validate';
    const cause = rootApplicationFailure(err);
    return ApplicationFailure.create({
      type: cause?.type ?? 'DeployFailed',
      message: `${step} failed: ${messageOf(err)}${teardown ? `\ncontainers: ${teardown.join('; ')}` : ''}`,
      nonRetryable: true,
      details: [
        {
          step,
          progress: this.progress,
          causeDetails: cause?.details ?? [],
          diagnostics: diagnostics ?? [],
          teardown,
        },
      ],
    });
  }
}

function publishDetails(p: DeployProgress): void {
  // Markdown as the Temporal UI renders it: blank lines around the list, and "n of N" (the UI typesets n/N
  // as a fraction).
  const lines = [`**${p.cluster}** — ${p.status}${p.currentStep ? `, step ${p.currentStep}` : ''}`, ''];
  for (const s of p.steps) {
    if (s.status === 'pending') continue;
    lines.push(
      `- ${s.status === 'done' ? '✓' : s.status === 'failed' ? '✗' : s.status === 'skipped' ? '–' : '…'} ${s.title}${s.durationMs !== undefined ? ` (${formatDuration(s.durationMs)})` : ''}`,
    );
  }
  if (p.load && p.currentStep === 'waitHealthy') {
    const l = p.load;
    lines.push(
      '',
      `load: ${l.phase}${l.shardsTotal ? `, shard ${l.shardsDone} of ${l.shardsTotal}` : ''}${l.etaS !== undefined ? `, ETA ${formatDuration(l.etaS * 1000)}` : ''}`,
    );
  }
  setCurrentDetails(lines.join('\n'));
}

function rootApplicationFailure(err: unknown): ApplicationFailure | undefined {
  let e: unknown = err;
  while (e instanceof ActivityFailure || e instanceof ChildWorkflowFailure) e = e.cause;
  return e instanceof ApplicationFailure ? e : undefined;
}

function messageOf(err: unknown): string {
  const app = rootApplicationFailure(err);
  if (app) return app.message;
  if ((err instanceof ActivityFailure || err instanceof ChildWorkflowFailure) && err.cause)
    return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** A plain (non-secret) env value of the spec; a secret reference is not something the workflow may read. */
function plainEnv(env: DeploySpec['ray']['env'], name: string): string | undefined {
  const value = env[name];
  return typeof value === 'string' ? value : undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

const scheduledByIdKey = { name: 'TemporalScheduledById', type: 'KEYWORD' } as const;
