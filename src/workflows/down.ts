// `liftoff down CLUSTER` (or the workflow `down` started from the Temporal UI with {"cluster": NAME}): the cluster
// stops serving and lets its hosts go. Its supervisor ends, a running deploy is cancelled, every host loses the
// cluster's containers (the spec's names and whatever carries its label), the GPUs are checked clear as a deploy
// checks them, and the cluster's workflow ends as down. Each step is safe to repeat, so a worker that dies midway
// leaves a run that resumes; a cluster already down says so.
import {
  ApplicationFailure,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  defineQuery,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import type { ClusterLook } from '../activities/cluster-look.js';
import type { ClusterRecord } from '../shared/cluster-api.js';
import { hostNamePattern } from '../config/schema.js';
import { FailureType } from '../shared/failures.js';
import { searchAttributes } from '../shared/constants.js';
import { stepActivities, temporalCalls } from './activity-options.js';
import { clusterOf, validate } from './cluster-run.js';
import { messageOf } from './failures.js';
import { tearDown } from './teardown.js';
import { recordClusterState } from './metrics.js';

export interface DownInput {
  cluster: string;
}

export interface DownHost {
  host: string;
  /** What the teardown said on the host: what it removed, or why it could not. */
  removed: string;
  gpus: string;
}

export interface DownResult {
  cluster: string;
  /** Nothing held the hosts and nothing of the cluster ran: there was nothing to do. */
  alreadyDown: boolean;
  /** false: this namespace never deployed a cluster of the name. */
  known: boolean;
  /** The supervisor stopped, the deploy cancelled. */
  ended: string[];
  hosts: DownHost[];
  /** The cluster's record as its workflow ended, when one held the hosts. */
  record?: ClusterRecord;
}

export interface DownProgress {
  cluster: string;
  step: 'look' | 'end runs' | 'tear down' | 'check GPUs' | 'release' | 'done';
  hosts: DownHost[];
}

export const downProgressQuery = defineQuery<DownProgress>('downProgress');

const temporal = proxyActivities<typeof activities>(temporalCalls);

export async function down(input: DownInput): Promise<DownResult> {
  const cluster = typeof input?.cluster === 'string' ? input.cluster : '';
  if (!hostNamePattern.test(cluster))
    throw ApplicationFailure.create({
      type: FailureType.invalidSpec,
      message: `down: cluster must be a cluster name (letters, digits, '-', '.'), got ${JSON.stringify(cluster).slice(0, 80)}: start it as {"cluster": "NAME"}`,
      nonRetryable: true,
    });
  upsertSearchAttributes([
    { key: searchAttributes.cluster, value: cluster },
    { key: searchAttributes.trigger, value: 'down' },
  ]);
  const progress: DownProgress = { cluster, step: 'look', hosts: [] };
  setHandler(downProgressQuery, () => progress);
  const by = `${workflowInfo().workflowId} (liftoff down)`;

  const look = await temporal.lookAtCluster({ cluster });
  const todo = whatToDo(look);
  if (todo.kind === 'nothing') {
    const { lastRecord } = look;
    return finish({
      cluster,
      alreadyDown: true,
      known: todo.known,
      ended: [],
      hosts: [],
      ...(lastRecord ? { record: lastRecord } : {}),
    });
  }
  const spec = todo.spec;

  progress.step = 'end runs';
  const runs = look.deployRunning || look.superviseRunning;
  const ended = runs ? await temporal.endClusterRuns({ cluster, reason: `taken down by ${by}` }) : [];

  const parsed = validate(spec);
  const acts = stepActivities(parsed);
  const run = { ...clusterOf(parsed), spec: parsed, acts };
  progress.step = 'tear down';
  const removed = await tearDown(run);
  progress.step = 'check GPUs';
  const { verifyGpusClear } = acts('verifyGpusClear');
  const { maxUsedMiB, minAvailableMiB } = parsed.gpu;
  const gpus = await Promise.allSettled(
    run.hosts.map((h) => verifyGpusClear({ host: h.ref, maxUsedMiB, minAvailableMiB })),
  );
  const hosts = run.hosts.map((h, i): DownHost => {
    const g = gpus[i];
    return {
      host: h.name,
      removed: removed[i] ?? '',
      gpus: g?.status === 'fulfilled' ? 'clear' : `not clear: ${messageOf(g?.reason)}`,
    };
  });
  progress.hosts = hosts;

  progress.step = 'release';
  const record = await temporal.releaseHosts({ cluster, by });
  // Down, whether or not the GPUs are clear (that failure says so on its own).
  recordClusterState(cluster, 'down');
  const result: DownResult = {
    cluster,
    alreadyDown: false,
    known: true,
    ended,
    hosts,
    ...(record ? { record } : {}),
  };
  const unclear = hosts.filter((h) => h.gpus !== 'clear');
  if (unclear.length > 0) {
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'failed' }]);
    throw ApplicationFailure.create({
      type: FailureType.gpuNotClear,
      message: `${cluster} is down, but the GPUs are not clear on ${unclear.map((h) => `${h.host} (${h.gpus})`).join('; ')}`,
      nonRetryable: true,
      details: [result],
    });
  }
  return finish(result);

  function finish(r: DownResult): DownResult {
    progress.step = 'done';
    if (r.known) recordClusterState(cluster, 'down');
    upsertSearchAttributes([
      { key: searchAttributes.outcome, value: r.alreadyDown ? 'already down' : 'down' },
    ]);
    return r;
  }
}

/**
 * Down when something of the cluster holds the hosts or runs, or when its last deploy came after its last down
 * (a cluster deployed before clusters held hosts has no record). Nothing to do when its record ended (down, handed
 * over) after its last deploy, when a down followed that deploy, or when it was never deployed.
 */
export function whatToDo(
  look: ClusterLook,
): { kind: 'down'; spec: unknown } | { kind: 'nothing'; known: boolean } {
  const spec = look.held?.spec ?? look.lastDeploy?.spec;
  const known = look.held !== undefined || look.lastRecord !== undefined || look.lastDeploy !== undefined;
  if (spec === undefined) return { kind: 'nothing', known };
  if (look.held || look.deployRunning || look.superviseRunning) return { kind: 'down', spec };
  const deployedAtMs = look.lastDeploy?.startedAtMs ?? 0;
  const endedAtMs = Math.max(look.lastRecord?.endedAtMs ?? 0, look.lastDownAtMs ?? 0);
  return endedAtMs >= deployedAtMs ? { kind: 'nothing', known } : { kind: 'down', spec };
}
