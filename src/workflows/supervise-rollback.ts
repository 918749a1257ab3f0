// The bake window (rollout.bakeTime): a revision that served but is lost soon after has failed as surely as one
// that never loaded. Within the window the supervisor does not relaunch it: it keeps the evidence, marks the
// revision bad and starts the rollback's deploy of the known-good (abandoned: it outlives this supervisor, and
// starts the next one when it serves).
import type { DeploySpec } from '../config/schema.js';
import { stepActivities } from './activity-options.js';
import { messageOf } from './failures.js';
import type { BakeWindow } from './supervise-api.js';
import { startDeployChild } from './under-cluster-id.js';

export function withinBake(bake: BakeWindow | undefined, nowMs: number): bake is BakeWindow {
  return bake !== undefined && nowMs < bake.untilMs;
}

/** Says what happened, for the supervisor's end: the rollback started, or why it could not. */
export async function rollBackLostRevision(
  spec: DeploySpec,
  bake: BakeWindow,
  cause: string,
  supervisor: { workflowId: string; runId: string },
): Promise<string> {
  const reason = `lost within its bake window (${spec.rollout.bakeTime}): ${cause}`;
  await stepActivities(spec)('rollback', 'markRevisionBad').markRevisionBad({
    cluster: spec.cluster,
    number: bake.revision,
    reason,
  });
  try {
    const child = await startDeployChild(
      spec.cluster,
      bake.spec,
      'rollback',
      { rollbackOf: `${supervisor.workflowId}:${supervisor.runId}` },
      { options: { rollback: { ...bake.rollback, from: bake.revision, cause: reason } }, abandon: true },
    );
    if (!child)
      return `revision ${bake.revision} is bad (${reason}); its rollback was refused: another deploy of ${spec.cluster} runs`;
    return `revision ${bake.revision} is bad (${reason}): rolling back to revision ${bake.rollback.to}`;
  } catch (err) {
    return `revision ${bake.revision} is bad (${reason}); its rollback could not start: ${messageOf(err)}`;
  }
}
