// Who or what started the run: the trigger the workflow was given or recorded, the schedule, the parent run
// that started it, or the child it started the deploy as.
import { isRecord } from './events.js';
import type { RunRecord } from './fold.js';
import type { TriggerReport } from './model.js';

export function triggerReport(record: RunRecord): TriggerReport {
  const { start, options, searchAttrs, child } = record;
  const scheduleId = searchAttrs.TemporalScheduledById;
  const parent = isRecord(start.attrs.parentWorkflowExecution)
    ? start.attrs.parentWorkflowExecution
    : undefined;
  return {
    kind:
      (isRecord(options) && typeof options.trigger === 'string' ? options.trigger : undefined) ??
      (typeof searchAttrs.LiftoffTrigger === 'string' ? searchAttrs.LiftoffTrigger : undefined) ??
      (scheduleId !== undefined ? 'schedule' : 'unknown'),
    startedBy:
      typeof start.attrs.identity === 'string' && start.attrs.identity !== ''
        ? start.attrs.identity
        : undefined,
    scheduleId: typeof scheduleId === 'string' ? scheduleId : undefined,
    parent:
      parent && typeof parent.workflowId === 'string'
        ? {
            workflowId: parent.workflowId,
            runId: typeof parent.runId === 'string' ? parent.runId : undefined,
          }
        : undefined,
    child: child ? { workflowId: child.workflowId, runId: child.runId } : undefined,
    relaunch: relaunchOf(record.memo.relaunch),
  };
}

/** The memo a supervisor gives its relaunch deploy (src/workflows/supervise-relaunch.ts). */
function relaunchOf(memo: unknown): TriggerReport['relaunch'] {
  if (!isRecord(memo) || typeof memo.supervisorWorkflowId !== 'string') return undefined;
  return {
    supervisorWorkflowId: memo.supervisorWorkflowId,
    ...(typeof memo.supervisorRunId === 'string' ? { supervisorRunId: memo.supervisorRunId } : {}),
    ...(typeof memo.n === 'number' ? { n: memo.n } : {}),
    ...(typeof memo.cause === 'string' ? { cause: memo.cause } : {}),
  };
}
