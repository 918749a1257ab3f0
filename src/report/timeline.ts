// The step timeline: the deploy's steps in order (src/workflows/steps.ts), each with the activities the run
// scheduled for it, then what ran after a failure, then anything unexpected. A run that only held the trigger
// and started the deploy as a child has two steps: validate, and the child.
import { aftermathSteps, deploySteps } from '../workflows/steps.js';
import { backendOfInput, multiprocSkipsRay, rayOnlySteps } from '../config/backend.js';
import { stepIndex, type ChildRun, type RunRecord } from './fold.js';
import type { ActivityRun, Outcome, StepOutcome, StepTimeline } from './model.js';
import { dropUndefined } from './values.js';
import { isRecord } from './events.js';

const aftermathTitles = new Map<string, string>(aftermathSteps.map((s) => [s.name, s.title]));

interface RunEnd {
  outcome: Outcome;
  /** The step the run failed or was cancelled in. */
  endedStep?: string;
  failureMessage?: string;
}

export function stepTimeline(record: RunRecord, end: RunEnd): StepTimeline[] {
  return record.child ? delegatedSteps(record, record.child, end.outcome) : deploySequence(record, end);
}

/**
 * The step a run that ended badly ended in: the one it said, else (an invalid spec fails before any step
 * bookkeeping) the last it reached.
 */
export function endedStepOf(
  record: RunRecord,
  outcome: Outcome,
  said: string | undefined,
): string | undefined {
  if (said !== undefined) return said;
  if (outcome !== 'failed' && outcome !== 'cancelled' && outcome !== 'terminated' && outcome !== 'timed out')
    return undefined;
  if (record.validatedAtMs === undefined) return 'validate';
  const reached = record.activities.filter((t) => stepIndex.has(t.step)).at(-1);
  return reached?.step ?? 'validate';
}

function deploySequence(record: RunRecord, end: RunEnd): StepTimeline[] {
  const byStep = new Map<string, ActivityRun[]>();
  for (const t of record.activities) byStep.set(t.step, [...(byStep.get(t.step) ?? []), t.run]);
  const lastReached = Math.max(-1, ...[...byStep.keys()].map((s) => stepIndex.get(s) ?? -1));
  const running = end.outcome === 'running';
  const endedAt = record.close?.timeMs;
  const endOutcome: StepOutcome = end.outcome === 'cancelled' ? 'cancelled' : 'failed';
  const error = end.failureMessage?.split('\n')[0];
  // A multiproc deploy never runs the Ray steps: they show skipped with the reason, however far the run got.
  const rayless = backendOfInput(record.input) === 'multiproc';
  const isRayStep = (name: string): boolean => (rayOnlySteps as readonly string[]).includes(name);

  const steps: StepTimeline[] = deploySteps.map((def, index): StepTimeline => {
    const runs = byStep.get(def.name) ?? [];
    const base = { name: def.name, title: def.title, activities: runs, aftermath: false };
    const failedHere = end.endedStep === def.name;
    const here = { failedHere, endOutcome, error: failedHere ? error : undefined };
    // Validation is the workflow's own (with the worker-policy check as its activity): done when it recorded the cluster.
    if (def.name === 'validate') {
      const otherwise = record.validatedAtMs !== undefined ? 'done' : running ? 'running' : 'not reached';
      const endMs = record.validatedAtMs ?? (failedHere ? endedAt : undefined);
      return ownStep(base, here, otherwise, record.start.timeMs, endMs);
    }
    // Recording is the workflow's own too: from the smoke test's end to the close.
    if (def.name === 'record') {
      const done = end.outcome === 'succeeded' && record.close?.kind === 'workflowExecutionCompleted';
      const startMs = byStep.get('smokeTest')?.at(-1)?.endedAtMs ?? record.outcomeRecordedAtMs;
      const shown = done || failedHere;
      return ownStep(
        base,
        here,
        done ? 'done' : 'not reached',
        shown ? startMs : undefined,
        shown ? endedAt : undefined,
      );
    }
    if (runs.length === 0 && rayless && isRayStep(def.name) && index < lastReached) {
      return { ...base, outcome: 'skipped', attempts: 0, retries: 0, detail: multiprocSkipsRay };
    }
    // A spec without companions skips their step (as the deploy's progress says), once the run got past it.
    const past = end.outcome === 'succeeded' || index < lastReached;
    if (runs.length === 0 && def.name === 'startCompanions' && !companionsIn(record.input) && past) {
      return { ...base, outcome: 'skipped', attempts: 0, retries: 0, detail: 'no companions' };
    }
    if (runs.length === 0) {
      return {
        ...base,
        // A run that succeeded passed every step: one with no activity had nothing to do (no companions).
        outcome: failedHere
          ? endOutcome
          : index < lastReached || end.outcome === 'succeeded'
            ? 'skipped'
            : 'not reached',
        attempts: 0,
        retries: 0,
        error: here.error,
      };
    }
    return activityStep(base, runs, {
      outcome: failedHere
        ? endOutcome
        : runs.some((r) => r.endedAtMs === undefined) && running
          ? 'running'
          : 'done',
      error: here.error,
      endFallback: failedHere ? endedAt : undefined,
    });
  });

  for (const [name, runs] of byStep) {
    if (stepIndex.has(name)) continue;
    steps.push(unexpectedStep(name, runs, running));
  }
  return steps;
}

type StepBase = Pick<StepTimeline, 'name' | 'title' | 'activities' | 'aftermath'>;

/** Whether the run ended in this step, and how that step shows it. */
interface EndedHere {
  failedHere: boolean;
  endOutcome: StepOutcome;
  error?: string;
}

/** A step of the workflow's own: one attempt once done or when the run ended in it, else `otherwise`. */
function ownStep(
  base: StepBase,
  here: EndedHere,
  otherwise: StepOutcome,
  start: number | undefined,
  end: number | undefined,
): StepTimeline {
  const attempts = here.failedHere || otherwise === 'done' ? 1 : 0;
  const outcome = here.failedHere ? here.endOutcome : otherwise;
  return withTimes({ ...base, outcome, attempts, retries: 0, error: here.error }, start, end);
}

// The aftermath of a failure (diagnostics, teardown), or activities of no step.
function unexpectedStep(name: string, runs: ActivityRun[], running: boolean): StepTimeline {
  const aftermath = aftermathTitles.has(name);
  return activityStep({ name, title: aftermathTitles.get(name) ?? name, activities: runs, aftermath }, runs, {
    outcome: runs.some((r) => r.endedAtMs === undefined)
      ? running
        ? 'running'
        : 'failed'
      : runs.every((r) => r.outcome === 'completed')
        ? 'done'
        : 'failed',
  });
}

function activityStep(
  base: StepBase,
  runs: ActivityRun[],
  how: { outcome: StepOutcome; error?: string; endFallback?: number },
): StepTimeline {
  const start = Math.min(...runs.map((r) => r.scheduledAtMs));
  const ends = runs.map((r) => r.endedAtMs);
  const allEnded = ends.every((e) => e !== undefined);
  const lastEnd = Math.max(...ends.filter((e): e is number => e !== undefined), start);
  const failedRun = [...runs].reverse().find((r) => r.error !== undefined);
  return withTimes(
    {
      ...base,
      outcome: how.outcome,
      attempts: Math.max(...runs.map((r) => r.attempt)),
      retries: runs.reduce((n, r) => n + r.attempt - 1, 0),
      error: how.error ?? (how.outcome === 'failed' ? failedRun?.error?.split('\n')[0] : undefined),
      detail:
        base.name === 'waitHealthy'
          ? `${runs.filter((r) => r.activityType === 'checkServeHealth').length} health polls`
          : undefined,
    },
    start,
    allEnded ? lastEnd : how.endFallback,
  );
}

const childOutcomes = new Map<string, StepOutcome>([
  ['completed', 'done'],
  ['canceled', 'cancelled'],
]);

function delegatedSteps(record: RunRecord, child: ChildRun, outcome: Outcome): StepTimeline[] {
  const validate = deploySteps[0];
  const held = { attempts: 1, retries: 0, activities: [], aftermath: false };
  return [
    withTimes(
      {
        name: validate.name,
        title: validate.title,
        outcome: record.validatedAtMs !== undefined ? 'done' : 'failed',
        ...held,
      },
      record.start.timeMs,
      record.validatedAtMs,
    ),
    withTimes(
      {
        name: 'childDeploy',
        title: `Run the deploy as ${child.workflowId}`,
        outcome: outcome === 'running' ? 'running' : (childOutcomes.get(child.outcome ?? '') ?? 'failed'),
        ...held,
        detail:
          child.outcome === 'refused' ? 'refused: a deploy of the cluster was already running' : undefined,
      },
      child.initiatedAtMs,
      child.endedAtMs ?? record.close?.timeMs,
    ),
  ];
}

function withTimes(
  step: Omit<StepTimeline, 'startedAtMs' | 'endedAtMs' | 'durationMs'>,
  start: number | undefined,
  end: number | undefined,
): StepTimeline {
  const durationMs = start !== undefined && end !== undefined ? Math.max(0, end - start) : undefined;
  return dropUndefined({ ...step, startedAtMs: start, endedAtMs: end, durationMs });
}

/** Whether the run's spec (the workflow's input, any JSON) lists companions. */
function companionsIn(input: unknown): boolean {
  return isRecord(input) && Array.isArray(input.companions) && input.companions.length > 0;
}
