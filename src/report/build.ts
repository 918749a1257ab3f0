// Event history → postmortem model. Reads only the events: the workflow's input (the spec), the activities it
// scheduled and how each ended, the health polls' results (the load curve), search attributes and memo upserts
// (trigger, outcome, load time), and the close event (result or failure with its diagnostics). fold.ts reads
// the events once; the other modules each make one part of the report from what it read.
import { attemptErrors } from './attempts.js';
import { companionReports } from './companions.js';
import { isRecord, readHistoryEvents } from './events.js';
import { failureReport } from './failure.js';
import { foldHistory, type RunRecord } from './fold.js';
import { loadReport } from './load.js';
import type {
  BaselineReport,
  Outcome,
  Postmortem,
  ReportNote,
  RollbackReport,
  TriggerReport,
} from './model.js';
import { outcomeOfClose } from './outcome.js';
import { redactSpec } from './redact-spec.js';
import { redactDeep } from '../shared/secrets.js';
import { resultReport } from './result.js';
import { rollbackReport, rolledBackFailure, type RollbackEvidence } from './rollback.js';
import { endedStepOf, stepTimeline } from './timeline.js';
import { triggerReport } from './trigger.js';
import { nameOf, stringArray, stringOr } from './values.js';

export interface BuildOptions {
  /** The cluster's earlier successful runs (online only); offline the report says it is unavailable. */
  baseline?: BaselineReport;
  /** Used when the export does not name the workflow (older servers leave workflowId out). */
  workflowId?: string;
  runId?: string;
  /** A rollback's run: the bad revision's data, which is in another run's history (online only). */
  rollbackEvidence?: RollbackEvidence;
}

export function buildPostmortem(history: unknown, opts: BuildOptions = {}): Postmortem {
  const record = foldHistory(readHistoryEvents(history));
  const { start, input, searchAttrs, close } = record;
  const { report: spec, secrets } = redactSpec(input);

  // A run that rolled back continued as new: its failure is the one it kept in its memo.
  const failure =
    close?.kind === 'workflowExecutionFailed'
      ? failureReport(close.attrs.failure)
      : rolledBackFailure(record);
  const outcome = outcomeOfClose(close?.kind, failure, searchAttrs, record.memo);
  const cancelled = cancelledReport(outcome, record.memo);
  const endedStep = endedStepOf(record, outcome, failure?.step ?? cancelled?.step);
  const steps = stepTimeline(record, { outcome, endedStep, failureMessage: failure?.message });

  const result = resultReport(close, record.memo);
  const load = loadReport(record.activities, searchAttrs, result);
  const loadSeconds = load?.loadSeconds;
  const baseline = baselineComparison(opts.baseline, loadSeconds);
  const trigger = triggerReport(record);
  const rollback = rollbackReport(record, opts.rollbackEvidence ?? {}, secrets);
  const companions = companionReports(record, outcome, failure?.message);

  const model: Postmortem = {
    format: 'liftoff-postmortem/1',
    workflowId: stringOr(start.attrs.workflowId) ?? opts.workflowId ?? '(unknown)',
    runId: opts.runId ?? stringOr(start.attrs.originalExecutionRunId),
    workflowType: nameOf(start.attrs.workflowType) ?? '(unknown)',
    cluster: stringOr(searchAttrs.LiftoffCluster) ?? (isRecord(input) ? stringOr(input.cluster) : undefined),
    outcome,
    startedAtMs: start.timeMs,
    endedAtMs: close?.timeMs,
    durationMs: close ? close.timeMs - start.timeMs : undefined,
    trigger,
    steps,
    attemptErrors: attemptErrors(record.activities),
    load,
    failure,
    cancelled,
    spec: input === undefined ? undefined : spec,
    result,
    loadVsBaseline: { loadSeconds, baseline },
    workers: record.workers,
    workflowTaskProblems: record.workflowTaskProblems,
    ...(companions ? { companions } : {}),
    ...(rollback ? { rollback } : {}),
    notes: [...notes(record, trigger, spec?.valid === false), ...rollbackNotes(rollback, start.attrs)],
  };
  return redactDeep(model, secrets);
}

/** What a cancelled run was doing and what its teardown did, as the workflow kept it in its memo. */
function cancelledReport(outcome: Outcome, memo: Record<string, unknown>): Postmortem['cancelled'] {
  if (outcome !== 'cancelled') return undefined;
  const cancelledMemo = isRecord(memo.cancelled) ? memo.cancelled : undefined;
  return {
    step: stringOr(cancelledMemo?.step),
    teardown: stringArray(cancelledMemo?.teardown),
  };
}

function baselineComparison(
  given: BaselineReport | undefined,
  loadSeconds: number | undefined,
): BaselineReport {
  const baseline: BaselineReport = given ?? {
    available: false,
    reason: 'offline (--history): the cluster’s earlier runs are not in this file; run online to compare',
  };
  if (baseline.available && loadSeconds !== undefined) {
    baseline.deltaSeconds = loadSeconds - baseline.medianSeconds;
    baseline.ratio = baseline.medianSeconds > 0 ? loadSeconds / baseline.medianSeconds : undefined;
  }
  return baseline;
}

/** Where the other half of a failed upgrade and its rollback is: the command that reports on it. */
function rollbackNotes(
  rollback: RollbackReport | undefined,
  startAttrs: Record<string, unknown>,
): ReportNote[] {
  const workflowId = stringOr(startAttrs.workflowId);
  const back = rollback?.rolledBackTo;
  if (back?.runId && workflowId)
    return [
      {
        text: `This run failed after the known-good was stopped, recorded its revision bad and went on as the deploy of revision ${back.revision} under the same workflow id. That run’s postmortem:`,
        hostText: `liftoff postmortem ${workflowId} --run ${back.runId}`,
      },
    ];
  const failedRun = rollback?.of?.failedRun;
  const at = failedRun?.lastIndexOf(':') ?? -1;
  if (!failedRun || at <= 0) return [];
  const [id, run] = [failedRun.slice(0, at), failedRun.slice(at + 1)];
  return rollback?.of?.bySupervisor
    ? [
        {
          text: 'The supervisor lost the revision within its bake window and started this rollback; its history holds what it saw:',
          hostText: `temporal workflow show --workflow-id ${id} --run-id ${run}`,
        },
      ]
    : [
        {
          text: 'The postmortem of the run it rolls back:',
          hostText: `liftoff postmortem ${id} --run ${run}`,
        },
      ];
}

function notes(record: RunRecord, trigger: TriggerReport, invalidSpec: boolean): ReportNote[] {
  const out: ReportNote[] = [];
  // More attempts than the history keeps errors of.
  if (record.activities.some((t) => t.run.attempt > 2)) {
    out.push({
      text: 'Temporal keeps only the last two attempts’ errors of a retried activity (the last one, and the one before it with the last start); earlier attempts are counted, not quoted.',
    });
  }
  if (invalidSpec) out.push({ text: 'The input is not a valid spec: shown as given, without defaults.' });
  const { child } = record;
  if (child) {
    out.push({
      text: `This run only held the ${trigger.kind} trigger: the deploy ran as the child ${child.workflowId}${child.runId ? ` (run ${child.runId})` : ''}. Its postmortem has the steps.`,
    });
  }
  const { relaunch } = trigger;
  if (relaunch) {
    const run = relaunch.supervisorRunId ? ` --run-id ${relaunch.supervisorRunId}` : '';
    out.push({
      text: `The supervisor relaunched the cluster after declaring it lost. The failure bundle it kept first (every host's serve log and exception, ray status, GPU processes, container state, kernel OOM lines) is the collectFailureBundle result in its history: temporal workflow show --workflow-id ${relaunch.supervisorWorkflowId}${run}`,
    });
    if (relaunch.cause) out.push({ text: 'What the supervisor saw:', hostText: relaunch.cause });
  }
  return out;
}
