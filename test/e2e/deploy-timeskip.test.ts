// The load deadline under the time-skipping test server: a 14-minute load succeeds with loadTimeout 25m, and a
// load that never finishes fails at the deadline naming the last phase reached. Host activities are replaced by
// a scripted cluster here (this is a test of the workflow's clock logic, not of SSH); the real activities run
// against real sshd in deploy.test.ts. The script follows the server's (skipped) clock, read from each poll's
// scheduled time, and the assertions are on workflow time from the history: real time that the activities
// take (more under load) moves the skipped clock too, so a count of polls would be a timed assert.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { useTimeSkippingServer } from '../helpers/temporal.js';
import { deploy } from '../../src/workflows/index.js';
import type * as activities from '../../src/activities/index.js';
import { checkWorkerPolicy } from '../../src/activities/worker-policy.js';
import type { CheckServeInput, CheckServeResult } from '../../src/activities/types.js';
import { loadSpecFile } from '../../src/config/load.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { deployWorkflowId } from '../../src/shared/constants.js';

// The example spec's shape, never its hosts: every activity here is scripted. No supervisor: this worker has
// none of its probes, and its rounds would keep the time-skipping server from skipping.
const exampleSpec = loadSpecFile(deploySpecSchema, 'examples/spark-qwen35.yaml');
// Without its companions: they start after the load, which is what this file times (test/e2e/companions.test.ts has them).
const spec = { ...exampleSpec, companions: [], supervise: { ...exampleSpec.supervise, enabled: false } };
const shards = 39;

/** A scripted load: shard progress follows the (skipped) clock; ready at `readyAfterMs`, or never. */
function scriptedCluster(readyAfterMs: number | undefined) {
  let polls = 0;
  let firstPollAt: number | undefined;
  const ok =
    <T>(v: T) =>
    () =>
      Promise.resolve(v);
  const impl: Partial<typeof activities> = {
    // The real check (it reads no host): the example's ~/.ssh paths are what the default policy allows.
    checkWorkerPolicy,
    preflightHost: (i) => Promise.resolve({ host: i.host.target.name, ok: true, checks: [] }),
    // The scripted hosts agree: this file is about the load's deadline, not about preflight.
    checkHostsAgree: () =>
      Promise.resolve({ ok: true, problems: [], warnings: [], unread: [], machineIds: {}, identities: [] }),
    // No host reports a machine id here, so nothing is held by anyone.
    findHostOwners: () => Promise.resolve({ owners: [] }),
    holdHosts: () => Promise.resolve(true),
    // A cluster with no revision yet: nothing to fall back on, and the one this deploy records is the first.
    readRevisions: () => Promise.resolve({ revisions: [] }),
    recordRevision: () => Promise.resolve(1),
    stopServices: (i) =>
      Promise.resolve({ host: i.host.target.name, stopped: i.units, disabled: [], notLoaded: [] }),
    removeContainers: (i) => Promise.resolve({ host: i.host.target.name, removed: [] }),
    verifyGpusClear: (i) =>
      Promise.resolve({
        host: i.host.target.name,
        gpus: [],
        processes: [],
        unifiedMemory: true,
        memAvailableMiB: 100_000,
      }),
    startRayHead: (i) => Promise.resolve({ host: i.host.target.name, containerId: 'c1', reused: false }),
    startRayWorker: (i) => Promise.resolve({ host: i.host.target.name, containerId: 'c2', reused: false }),
    verifyRayCluster: ok({ nodes: 2, gpusTotal: 2, gpusUsed: 0 }),
    checkRayWorker: (i) => Promise.resolve({ host: i.host.target.name, containerRunning: true }),
    launchServe: (i) =>
      Promise.resolve({ pid: 4242, logPath: i.logPath, launchedAtMs: Date.now(), reused: false }),
    smokeTest: ok({ text: 'ready', completionTokens: 2, seconds: 0.1, tokensPerSecond: 20 }),
    collectDiagnostics: (i) =>
      Promise.resolve(i.hosts.map((h) => ({ host: h.name, reachable: true, errors: [] }))),
    checkServeHealth: (input: CheckServeInput): Promise<CheckServeResult> => {
      // The server's clock is the skipped one: a poll's scheduled time is workflow time.
      polls += 1;
      const scheduledAt = Context.current().info.currentAttemptScheduledTimestampMs;
      firstPollAt ??= scheduledAt;
      const elapsedMs = scheduledAt - firstPollAt;
      const ready = readyAfterMs !== undefined && elapsedMs >= readyAfterMs;
      const done = Math.min(shards, Math.floor((elapsedMs / (12 * 60_000)) * shards));
      const stuckAt = readyAfterMs === undefined ? Math.min(done, 20) : done;
      return Promise.resolve({
        processAlive: true,
        containerRunning: true,
        logOffset: input.logOffset + 100,
        logGrew: true,
        summary: ready
          ? { phase: 'ready' }
          : {
              phase: 'loading_weights',
              shard: { done: stuckAt, total: shards, percent: Math.round((stuckAt / shards) * 100) },
            },
        tail: [`Loading safetensors checkpoint shards: ${stuckAt}/${shards}`],
        health: ready ? 'ok' : 'refused',
        modelListed: ready,
      });
    },
  };
  // Host steps run as activities of the step's name (activities/host-step.ts).
  const checkServePort = () => Promise.resolve('head: port 8000 free');
  return { impl: { ...impl, checkServePort }, polls: () => polls };
}

describe('deploy load deadline (time-skipping server)', () => {
  const server = useTimeSkippingServer();

  async function runWith(readyAfterMs: number | undefined, workflowId: string) {
    const cluster = scriptedCluster(readyAfterMs);
    const worker = await server.worker(workflowId, cluster.impl);
    const outcome = await worker.runUntil(
      server.env.client.workflow
        .execute(deploy, {
          taskQueue: workflowId,
          workflowId: deployWorkflowId(spec.cluster),
          args: [spec, { trigger: 'cli' }],
        })
        .then(
          (result) => ({ result, error: undefined }),
          (error: unknown) => ({ result: undefined, error }),
        ),
    );
    // Workflow time from start to close, as the server recorded it.
    const history = await server.env.client.workflow.getHandle(deployWorkflowId(spec.cluster)).fetchHistory();
    const eventMs = (i: number) => {
      const t = history.events?.at(i)?.eventTime;
      return Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
    };
    return { ...outcome, polls: cluster.polls(), workflowSeconds: (eventMs(-1) - eventMs(0)) / 1000 };
  }

  it('a 14-minute load succeeds under loadTimeout 25m', async () => {
    const { result, error, polls, workflowSeconds } = await runWith(14 * 60_000, 'timeskip-ok');
    assert.equal(error, undefined, String(error));
    assert.ok(result);
    assert.ok(
      result.loadSeconds >= 14 * 60 && result.loadSeconds < 15 * 60,
      `load took ${result.loadSeconds}s of workflow time`,
    );
    // One poll per 10 s interval at most: the workflow sleeps the interval less the poll's own time.
    assert.ok(polls >= 2 && polls <= 14 * 6 + 1, `${polls} polls`);
    process.stdout.write(
      `# 14-minute load: ${result.loadSeconds}s load, ${workflowSeconds}s workflow time, ${polls} polls\n`,
    );
  });

  it('a load that never finishes fails at the 25-minute deadline, naming the phase reached', async () => {
    const { error, polls, workflowSeconds } = await runWith(undefined, 'timeskip-never');
    assert.ok(error instanceof WorkflowFailedError, String(error));
    const cause = error.cause;
    assert.ok(cause instanceof ApplicationFailure);
    assert.equal(cause.type, 'LoadTimeout');
    assert.match(cause.message, /serve\.loadTimeout 25m; last phase loading_weights, shard 20\/39/);
    // The deadline is the workflow clock, not a count of retries: it fires after 25 minutes of workflow time
    // (plus the steps before the load and one last poll), however many polls fitted in.
    assert.ok(
      workflowSeconds >= 25 * 60 && workflowSeconds < 26 * 60,
      `${workflowSeconds}s of workflow time`,
    );
    assert.ok(polls >= 2 && polls <= 25 * 6 + 1, `${polls} polls`);
    process.stdout.write(
      `# never-ready load: failed after ${workflowSeconds}s workflow time, ${polls} polls\n`,
    );
  });
});
