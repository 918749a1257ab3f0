// Who or what started the run: the trigger the workflow was given or recorded, the schedule, the parent run
// that started it, or the child it started the deploy as.
import { isRecord } from './events.js';
import type { RunRecord } from './fold.js';
import type { TriggerReport } from './model.js';
import { dropUndefined, numberOr, stringOr } from './values.js';

export function triggerReport(record: RunRecord): TriggerReport {
  const { start, options, searchAttrs, child } = record;
  const scheduleId = searchAttrs.TemporalScheduledById;
  const parent = isRecord(start.attrs.parentWorkflowExecution)
    ? start.attrs.parentWorkflowExecution
    : undefined;
  return {
    kind:
      (isRecord(options) ? stringOr(options.trigger) : undefined) ??
      stringOr(searchAttrs.LiftoffTrigger) ??
      (scheduleId !== undefined ? 'schedule' : 'unknown'),
    startedBy: stringOr(start.attrs.identity) || undefined,
    scheduleId: stringOr(scheduleId),
    parent:
      parent && typeof parent.workflowId === 'string'
        ? { workflowId: parent.workflowId, runId: stringOr(parent.runId) }
        : undefined,
    child: child ? { workflowId: child.workflowId, runId: child.runId } : undefined,
    relaunch: relaunchOf(record.memo.relaunch),
  };
}

/** The memo a supervisor gives its relaunch deploy (src/workflows/supervise-relaunch.ts). */
function relaunchOf(memo: unknown): TriggerReport['relaunch'] {
  if (!isRecord(memo) || typeof memo.supervisorWorkflowId !== 'string') return undefined;
  return dropUndefined({
    supervisorWorkflowId: memo.supervisorWorkflowId,
    supervisorRunId: stringOr(memo.supervisorRunId),
    n: numberOr(memo.n),
    cause: stringOr(memo.cause),
  });
}
