// The deploy's progress, step by step: each step's state and timings, kept in the workflow, served by the
// `progress` query and published as the workflow's current details for the Temporal UI.
import {
  ApplicationFailure,
  CancelledFailure,
  isCancellation,
  setCurrentDetails,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { HostDiagnostics } from '../activities/types.js';
import { formatDuration } from '../config/duration.js';
import { searchAttributes } from '../shared/constants.js';
import { FailureType } from '../shared/failures.js';
import { markdownHostText } from '../shared/host-markup.js';
import { messageOf, rootApplicationFailure } from './failures.js';
import { recordStepDuration } from './metrics.js';
import {
  companionLine,
  type CompanionProgress,
  type DeployProgress,
  type StepName,
  type StepState,
} from './steps.js';

export class StepTracker {
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
      recordStepDuration(this.progress.cluster, name, s.durationMs);
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

  /** The step that ended so, else the one that ran last. */
  private stepThat(status: 'cancelled' | 'failed'): StepName {
    return (
      this.progress.steps.find((s) => s.status === status)?.name ?? this.progress.currentStep ?? 'validate'
    );
  }

  /**
   * A cancelled deploy ends as cancelled. What teardown did goes into the progress, the memo (visible in the UI
   * and to `liftoff cancel` without a worker) and the history.
   */
  cancelled(err: unknown, teardown: string[]): CancelledFailure {
    const step = this.stepThat('cancelled');
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
    const step = this.stepThat('failed');
    const cause = rootApplicationFailure(err);
    return ApplicationFailure.create({
      type: cause?.type ?? FailureType.deployFailed,
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

export function publishDetails(p: DeployProgress): void {
  setCurrentDetails(detailsMarkdown(p, Date.now()));
}

/** The workflow's current details for the Temporal UI: each step's line, the companions under theirs, the load. */
export function detailsMarkdown(p: DeployProgress, nowMs: number): string {
  // Markdown as the Temporal UI renders it: blank lines around the list, and "n of N" (the UI typesets n/N
  // as a fraction).
  const lines = [`**${p.cluster}** — ${p.status}${p.currentStep ? `, step ${p.currentStep}` : ''}`, ''];
  for (const s of p.steps) {
    if (s.status === 'pending') continue;
    lines.push(
      `- ${s.status === 'done' ? '✓' : s.status === 'failed' ? '✗' : s.status === 'skipped' ? '–' : '…'} ${s.title}${s.durationMs !== undefined ? ` (${formatDuration(s.durationMs)})` : ''}`,
    );
    // Each companion under its step, a nested list item; its detail is host text, never markup.
    if (s.name === 'startCompanions')
      for (const c of p.companions ?? []) lines.push(`  - ${companionDetailsLine(c, nowMs)}`);
  }
  if (p.load && p.currentStep === 'waitHealthy') {
    const l = p.load;
    lines.push(
      '',
      `load: ${l.phase}${l.shardsTotal ? `, shard ${l.shardsDone} of ${l.shardsTotal}` : ''}${l.etaS !== undefined ? `, ETA ${formatDuration(l.etaS * 1000)}` : ''}`,
    );
  }
  return lines.join('\n');
}

/** A companion's line in the UI's markdown: its name, host and status, and its detail (host text) as a code span. */
function companionDetailsLine(c: CompanionProgress, nowMs: number): string {
  const { detail, ...rest } = c;
  const line = companionLine(rest, nowMs);
  const said = (detail ?? '').split('\n')[0]?.slice(0, 200) ?? '';
  return said ? `${line} — ${markdownHostText(said)}` : line;
}
