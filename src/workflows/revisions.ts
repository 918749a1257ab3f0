// The deploy's side of revisions and rollback (issue 30; docs/architecture.md, "Revisions and rollback"): read the
// cluster's revisions in preflight, refuse what cannot succeed before the first stop, record the revision that
// served, and, when the new one fails after the stop, deploy the last known-good again in this same workflow id
// (continue-as-new): one deploy per cluster still holds, and `liftoff deploy` follows the rollback to its end.
import {
  ApplicationFailure,
  makeContinueAsNewFunc,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { DeploySpec } from '../config/schema.js';
import { parseDuration } from '../config/duration.js';
import { deployStartAttributes, searchAttributes } from '../shared/constants.js';
import { FailureType, type DeployTriggerName } from '../shared/failures.js';
import type { RevisionToRecord } from '../shared/cluster-api.js';
import type { HostIdentity } from '../shared/revisions.js';
import {
  badRevisionWithSpec,
  knownGoodOf,
  pinnedSpec,
  rollbackRequest,
  type RollbackRequest,
} from '../shared/rollback.js';
import { launchServeInput } from '../host-commands/step-inputs.js';
import { serveArgv } from '../host-commands/launch.js';
import type { DeployRun } from './cluster-run.js';
import { recordDeployEnd } from './cluster-hold.js';
import { publishDetails } from './step-tracker.js';
import {
  deployWorkflowType,
  type BakeWindow,
  type DeployOptions,
  type DeployWorkflow,
} from './supervise-api.js';
import { recordDeployOutcome } from './metrics.js';

/**
 * Preflight's check of the revisions, read only: a schedule does not redeploy a bad revision unasked (a rollback
 * whose image or weights are gone is refused by preflight itself). Returns what a failure of this deploy falls
 * back on: the known-good, when rollout.onFailure says rollback and this is neither a rollback nor a relaunch.
 */
export async function checkRevisions(
  run: DeployRun,
  options: DeployOptions,
  trigger: DeployTriggerName,
): Promise<Fallback | undefined> {
  const { spec, acts } = run;
  const { revisions } = await acts('preflight', 'readRevisions').readRevisions({ cluster: spec.cluster });
  if (trigger === 'schedule' && options.allowBadRevision !== true) {
    const bad = badRevisionWithSpec(revisions, spec);
    if (bad)
      throw ApplicationFailure.create({
        type: FailureType.badRevision,
        message: `nothing was stopped or removed: this spec is revision ${bad.number} of ${spec.cluster}, marked bad (${(bad.badReason ?? 'failed').split('\n')[0] ?? ''}). A schedule does not deploy it again: fix the spec, deploy it by hand (liftoff deploy), or recreate the schedule with --allow-bad`,
        nonRetryable: true,
      });
  }
  // A rollback's own check (what it restores is still on the hosts) is preflight's; it has no fallback of its own.
  if (options.rollback) return undefined;
  if (trigger === 'supervise' || spec.rollout.onFailure !== 'rollback') return undefined;
  const good = knownGoodOf(revisions);
  return good ? { request: rollbackRequest(good, ''), spec: pinnedSpec(good) } : undefined;
}

/** What a failed deploy falls back on: the known-good's request and its pinned spec. */
export interface Fallback {
  request: RollbackRequest;
  spec: unknown;
}

/** What the deploy ran, as the cluster records it: the spec, each host's identity, the argv and env names. */
export function revisionOf(
  run: DeployRun,
  trigger: DeployTriggerName,
  identities: readonly HostIdentity[],
): RevisionToRecord {
  const { spec, head, launchId } = run;
  return {
    atMs: Date.now(),
    launchId,
    trigger,
    spec,
    model: spec.serve.servedModelName ?? spec.serve.model,
    image: spec.ray.image,
    hosts: run.hosts.map((h) => identities.find((i) => i.host === h.name) ?? { host: h.name }),
    argv: serveArgv(launchServeInput(spec, launchId, head)),
    envNames: [...new Set([...Object.keys(spec.ray.env), ...Object.keys(spec.serve.env)])].sort(),
  };
}

/** The record step's revision: a supervisor's relaunch deploys the revision that serves already, and records none. */
export async function recordServingRevision(
  run: DeployRun,
  trigger: DeployTriggerName,
  identities: readonly HostIdentity[],
  evidence: { loadSeconds: number; tokensPerSecond: number },
  restores: number | undefined,
): Promise<number | undefined> {
  if (trigger === 'supervise') return undefined;
  const { recordRevision } = run.acts('record', 'recordRevision');
  return recordRevision({
    cluster: run.spec.cluster,
    revision: {
      ...revisionOf(run, trigger, identities),
      evidence,
      ...(restores !== undefined ? { restores } : {}),
    },
  });
}

/** The bake window a new revision's supervisor watches, when it has a known-good to fall back on. */
export function bakeWindowOf(
  spec: DeploySpec,
  revision: number | undefined,
  fallback: Fallback | undefined,
): BakeWindow | undefined {
  if (revision === undefined || !fallback) return undefined;
  const bakeMs = parseDuration(spec.rollout.bakeTime) ?? 0;
  return { untilMs: Date.now() + bakeMs, revision, rollback: fallback.request, spec: fallback.spec };
}

/**
 * The new revision failed after the known-good was stopped: record it bad, tell the cluster how this run ended,
 * and go on as the rollback's deploy of the known-good, pinned to its image ID, under this workflow id.
 */
export async function rollBack(
  run: DeployRun,
  trigger: DeployTriggerName,
  identities: readonly HostIdentity[],
  fallback: Fallback,
  failure: ApplicationFailure,
  options: DeployOptions,
): Promise<never> {
  const { spec, progress, launchId, acts } = run;
  const bad = await acts('rollback', 'recordRevision').recordRevision({
    cluster: spec.cluster,
    revision: { ...revisionOf(run, trigger, identities), bad: failure.message },
  });
  await recordDeployEnd(spec.cluster, { outcome: 'failed', error: failure.message });
  const to = fallback.request.to;
  recordDeployOutcome(spec.cluster, 'rolled_back', { failureType: failure.type ?? '', tookOver: true });
  progress.rolledBackTo = to;
  publishDetails(progress);
  upsertSearchAttributes([{ key: searchAttributes.outcome, value: 'failed' }]);
  upsertMemo({ rolledBackTo: to, failure: { type: failure.type, message: failure.message } });
  const request: RollbackRequest = {
    ...fallback.request,
    cause: failure.message,
    from: bad,
    failedRun: launchId,
  };
  const next = makeContinueAsNewFunc<DeployWorkflow>({
    workflowType: deployWorkflowType,
    memo: { rollbackOf: launchId },
    typedSearchAttributes: deployStartAttributes(spec.cluster, 'rollback'),
  });
  return next(fallback.spec, {
    trigger: 'rollback',
    rollback: request,
    ...(options.supervise !== undefined ? { supervise: options.supervise } : {}),
  });
}

/** A rollback that failed too: both failures, so the record and the notification tell the whole story. */
export function rollbackFailure(failure: ApplicationFailure, rollback: RollbackRequest): ApplicationFailure {
  if (rollback.from === undefined) return failure;
  return ApplicationFailure.create({
    type: FailureType.rollbackFailed,
    message: `rollback to revision ${rollback.to} failed too: ${failure.message}\nrevision ${rollback.from} had failed: ${rollback.cause}`,
    nonRetryable: true,
    details: failure.details ?? [],
  });
}
