// A failed upgrade and its rollback (issue 30) as the postmortem tells them. The failed run does not fail to
// Temporal: it records `rolledBackTo` and its failure in its memo and continues as the rollback's deploy under the
// same workflow id, so its close event is ContinuedAsNew and its failure is the memo's, not a failure event's.
// The rollback's run carries what it restores, from what and why in its start options. Pure.
import type { HostDiagnostics } from '../activities/types.js';
import { FailureType } from '../shared/failures.js';
import { diffRevisions, diffSpecs } from '../shared/revision-diff.js';
import type { Revision } from '../shared/revisions.js';
import { isRecord, payloadValues } from './events.js';
import { stepIndex, type RunRecord } from './fold.js';
import type { FailureReport, RollbackDiff, RollbackReport } from './model.js';
import { rolledBackToOf } from './outcome.js';
import { redactSpec } from './redact-spec.js';
import { dropUndefined, numberOr, stringOr } from './values.js';

/** What the report of a rollback can be given beyond its own history (online: fetched by the CLI). */
export interface RollbackEvidence {
  /** The bad revision and the restored one, as the cluster's workflow recorded them. */
  revisions?: { bad: Revision; restored: Revision };
  /** The failed run's spec: its start input, from its own history. */
  failedSpec?: unknown;
}

/** The revision a run that continued as its rollback restores (memo `rolledBackTo`); undefined for any other run. */
export function rolledBackToOfRecord(record: RunRecord): number | undefined {
  if (record.close?.kind !== 'workflowExecutionContinuedAsNew') return undefined;
  return rolledBackToOf('CONTINUED_AS_NEW', record.memo);
}

/**
 * The failure of a run that rolled back: the memo's `{ type, message }` (the deploy's own failure, whose message
 * starts with the step), the diagnostics its collectDiagnostics activity returned, and what happened to the
 * containers (the message's `containers:` line).
 */
export function rolledBackFailure(record: RunRecord): FailureReport | undefined {
  const to = rolledBackToOfRecord(record);
  if (to === undefined) return undefined;
  const saved = isRecord(record.memo.failure) ? record.memo.failure : {};
  const message = stringOr(saved.message) ?? `the deploy failed and rolled back to revision ${to}`;
  // The deploy's failure reads "<step> failed: …" (src/workflows/step-tracker.ts); only a known step counts.
  const said = /^([A-Za-z]{1,40}) failed: /.exec(message)?.[1];
  const containers = /\ncontainers: ([^\n]*)$/.exec(message)?.[1];
  return dropUndefined({
    type: stringOr(saved.type) ?? FailureType.deployFailed,
    message,
    step: said !== undefined && stepIndex.has(said) ? said : undefined,
    causes: [],
    diagnostics: record.activities
      .filter((t) => t.step === 'diagnostics')
      .flatMap((t) => (Array.isArray(t.result) ? (t.result as unknown[]) : [t.result]))
      .filter(isHostDiagnostics),
    teardown: containers !== undefined ? containers.split('; ') : undefined,
  });
}

function isHostDiagnostics(v: unknown): v is HostDiagnostics {
  return isRecord(v) && typeof v.host === 'string' && Array.isArray(v.errors);
}

/** The rollback a deploy's start options ask for (`options.rollback`), when they ask for one. */
export function rollbackOfOptions(options: unknown): RollbackReport['of'] {
  const rollback = isRecord(options) && isRecord(options.rollback) ? options.rollback : undefined;
  const to = numberOr(rollback?.to);
  if (!rollback || to === undefined) return undefined;
  return dropUndefined({
    to,
    from: numberOr(rollback.from),
    cause: stringOr(rollback.cause) ?? '',
    failedRun: stringOr(rollback.failedRun),
  });
}

/**
 * The rollback part of the report, for a run that rolled back or a rollback's run; undefined for any other.
 * `secrets` collects the secret values of every spec it read, for the report's redaction.
 */
export function rollbackReport(
  record: RunRecord,
  evidence: RollbackEvidence,
  secrets: string[],
): RollbackReport | undefined {
  const to = rolledBackToOfRecord(record);
  if (to !== undefined) return failedRunReport(record, to, secrets);
  const of = rollbackOfOptions(record.options);
  if (!of) return undefined;
  // A memo's rollbackOf names the failed run too (a supervisor's, for a bake-window rollback).
  const rollbackOf = stringOr(record.memo.rollbackOf);
  const failedRun = of.failedRun ?? rollbackOf;
  // A bake-window rollback's options name no failed run: its memo names the supervisor run that started it.
  const bySupervisor = of.failedRun === undefined && rollbackOf !== undefined ? (true as const) : undefined;
  const report: RollbackReport = { of: dropUndefined({ ...of, failedRun, bySupervisor }) };
  // A rollback asked for with no failure behind it has no bad revision to compare.
  if (of.from === undefined) return report;
  const fromLabel = `revision ${of.from} (failed)`;
  const toLabel = `revision ${of.to} (restored)`;
  const { revisions, failedSpec } = evidence;
  if (revisions) {
    const changes = diffRevisions(
      redactedRevision(revisions.bad, secrets),
      redactedRevision(revisions.restored, secrets),
    );
    report.diff = { basis: 'revisions', fromLabel, toLabel, changes };
  } else if (failedSpec !== undefined) {
    report.diff = specDiff(failedSpec, record.input, fromLabel, toLabel, secrets);
  } else {
    report.diffUnavailable = `revision ${of.from}'s spec is in the failed run's history${failedRun ? ` (${failedRun})` : ''}, not this one's: run the postmortem online to compare it with revision ${of.to}`;
  }
  return report;
}

/** The failed run's side: the run it continued as, and its own spec against the one the rollback restores. */
function failedRunReport(record: RunRecord, to: number, secrets: string[]): RollbackReport {
  const close = record.close?.attrs ?? {};
  const [restoredSpec] = payloadValues(close.input);
  // The rollback step's recordRevision returned the number this run's revision was recorded bad as.
  const bad = record.activities.find(
    (t) => t.step === 'rollback' && t.run.activityType === 'recordRevision',
  )?.result;
  const fromLabel = typeof bad === 'number' ? `revision ${bad} (this run, failed)` : 'this run (failed)';
  return dropUndefined({
    rolledBackTo: dropUndefined({ revision: to, runId: stringOr(close.newExecutionRunId) }),
    diff:
      restoredSpec !== undefined
        ? specDiff(record.input, restoredSpec, fromLabel, `revision ${to} (restored)`, secrets)
        : undefined,
  });
}

function specDiff(
  bad: unknown,
  restored: unknown,
  fromLabel: string,
  toLabel: string,
  secrets: string[],
): RollbackDiff {
  const changes = diffSpecs(redactedSpec(bad, secrets), redactedSpec(restored, secrets));
  return { basis: 'specs', fromLabel, toLabel, changes };
}

/** The spec as the report may show it (defaults applied, secrets out); its secrets join `secrets`. */
function redactedSpec(spec: unknown, secrets: string[]): unknown {
  const { report, secrets: found } = redactSpec(spec);
  secrets.push(...found);
  return report.effective;
}

function redactedRevision(revision: Revision, secrets: string[]): Revision {
  return { ...revision, spec: redactedSpec(revision.spec, secrets) };
}
