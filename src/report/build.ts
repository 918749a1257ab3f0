// Event history → postmortem model. Reads only the events: the workflow's input (the spec), the activities it
// scheduled and how each ended, the health polls' results (the load curve), search attributes and memo upserts
// (trigger, outcome, load time), and the close event (result or failure with its diagnostics).
import type { HostDiagnostics } from '../activities/types.js';
import { aftermathSteps, deploySteps, stepOfActivity } from '../workflows/steps.js';
import {
  isRecord,
  memoValues,
  payloadValues,
  readHistoryEvents,
  searchAttributeValues,
  type HistoryEventView,
} from './events.js';
import type {
  ActivityRun,
  AttemptError,
  BaselineReport,
  FailureReport,
  LoadReport,
  LoadSample,
  Outcome,
  Postmortem,
  ResultReport,
  StepOutcome,
  StepTimeline,
  TriggerReport,
  WorkerReport,
} from './model.js';
import { redactSpec } from './redact-spec.js';
import { redactDeep } from '../shared/secrets.js';

export interface BuildOptions {
  /** The cluster's earlier successful runs (online only); offline the report says it is unavailable. */
  baseline?: BaselineReport;
  /** Used when the export does not name the workflow (older servers leave workflowId out). */
  workflowId?: string;
  runId?: string;
}

const aftermathTitles = new Map<string, string>(aftermathSteps.map((s) => [s.name, s.title]));

const stepIndex = new Map<string, number>(deploySteps.map((s, i) => [s.name, i]));

interface ActivityTrack {
  run: ActivityRun;
  step: string;
  result?: unknown;
}

export function buildPostmortem(history: unknown, opts: BuildOptions = {}): Postmortem {
  const events = readHistoryEvents(history);
  const startEvent = events.find((e) => e.kind === 'workflowExecutionStarted');
  if (!startEvent) throw new Error('the history has no WorkflowExecutionStarted event');
  const start = startEvent.attrs;
  const [input, options] = payloadValues(start.input);
  const { report: spec, secrets } = redactSpec(input);

  const searchAttrs: Record<string, unknown> = searchAttributeValues(start.searchAttributes);
  const memo: Record<string, unknown> = memoValues(start.memo);
  const activities = new Map<string, ActivityTrack>();
  const order: ActivityTrack[] = [];
  const workers = new Map<string, WorkerReport>();
  const problems: Postmortem['workflowTaskProblems'] = [];
  let reached = -1;
  let validatedAtMs: number | undefined;
  let outcomeRecordedAtMs: number | undefined;
  let close: HistoryEventView | undefined;
  let child:
    | { workflowId: string; runId?: string; initiatedAtMs: number; endedAtMs?: number; outcome?: string }
    | undefined;

  const seeWorker = (identity: unknown, atMs: number) => {
    if (typeof identity !== 'string' || identity === '') return;
    const w = workers.get(identity) ?? { identity, tasks: 0, firstSeenMs: atMs, lastSeenMs: atMs };
    w.tasks += 1;
    w.lastSeenMs = atMs;
    workers.set(identity, w);
  };

  for (const event of events) {
    const a = event.attrs;
    const track = activities.get(idText(a.scheduledEventId));
    switch (event.kind) {
      case 'activityTaskScheduled': {
        const type = nameOf(a.activityType) ?? '(activity)';
        let step = stepOfActivity(type);
        // The same activity removes old containers before the launch and this launch's after a failure.
        if (step === 'removeContainers' && reached > (stepIndex.get('removeContainers') ?? 0))
          step = 'teardown';
        reached = Math.max(reached, stepIndex.get(step) ?? -1);
        const [activityInput] = payloadValues(a.input);
        const t: ActivityTrack = {
          step,
          run: {
            activityId: idText(a.activityId),
            activityType: type,
            host: hostOf(activityInput),
            scheduledAtMs: event.timeMs,
            attempt: 1,
            outcome: 'scheduled',
          },
        };
        activities.set(String(event.eventId), t);
        order.push(t);
        break;
      }
      case 'activityTaskStarted':
        if (track) {
          track.run.startedAtMs = event.timeMs;
          track.run.attempt = Number(a.attempt ?? 1);
          track.run.outcome = 'running';
          if (typeof a.identity === 'string') track.run.worker = a.identity;
          if (a.lastFailure) track.run.previousAttemptError = failureText(a.lastFailure);
        }
        seeWorker(a.identity, event.timeMs);
        break;
      case 'activityTaskCompleted':
        if (track) {
          track.run.endedAtMs = event.timeMs;
          track.run.outcome = 'completed';
          track.result = payloadValues(a.result)[0];
          track.run.host ??= hostOf(track.result);
        }
        break;
      case 'activityTaskFailed':
      case 'activityTaskTimedOut':
        if (track) {
          track.run.endedAtMs = event.timeMs;
          track.run.outcome = event.kind === 'activityTaskFailed' ? 'failed' : 'timed out';
          track.run.error = failureText(a.failure);
        }
        break;
      case 'activityTaskCanceled':
        if (track) {
          track.run.endedAtMs = event.timeMs;
          track.run.outcome = 'cancelled';
        }
        break;
      case 'workflowTaskStarted':
        seeWorker(a.identity, event.timeMs);
        break;
      case 'workflowTaskFailed':
        problems.push({
          atMs: event.timeMs,
          kind: 'failed',
          detail: `${enumText(a.cause) ?? 'workflow task failed'}${a.failure ? `: ${failureText(a.failure)}` : ''}${typeof a.identity === 'string' ? ` (worker ${a.identity})` : ''}`,
        });
        break;
      case 'workflowTaskTimedOut':
        problems.push({
          atMs: event.timeMs,
          kind: 'timed out',
          detail:
            `workflow task ${enumText(a.timeoutType) ?? ''} timeout: no worker finished it in time (a worker died, or the sticky worker was gone)`.replace(
              '  ',
              ' ',
            ),
        });
        break;
      case 'upsertWorkflowSearchAttributes': {
        const upserted = searchAttributeValues(a.searchAttributes);
        if ('LiftoffCluster' in upserted) validatedAtMs ??= event.timeMs;
        if ('LiftoffOutcome' in upserted) outcomeRecordedAtMs = event.timeMs;
        Object.assign(searchAttrs, upserted);
        break;
      }
      case 'workflowPropertiesModified':
        Object.assign(memo, memoValues(a.upsertedMemo));
        break;
      case 'startChildWorkflowExecutionInitiated':
        child = { workflowId: idText(a.workflowId), initiatedAtMs: event.timeMs };
        break;
      case 'childWorkflowExecutionStarted':
        if (child && isRecord(a.workflowExecution) && typeof a.workflowExecution.runId === 'string')
          child.runId = a.workflowExecution.runId;
        break;
      case 'startChildWorkflowExecutionFailed':
        if (child) Object.assign(child, { endedAtMs: event.timeMs, outcome: 'refused' });
        break;
      case 'childWorkflowExecutionCompleted':
      case 'childWorkflowExecutionFailed':
      case 'childWorkflowExecutionCanceled':
      case 'childWorkflowExecutionTerminated':
      case 'childWorkflowExecutionTimedOut':
        if (child)
          Object.assign(child, {
            endedAtMs: event.timeMs,
            outcome: event.kind.slice('childWorkflowExecution'.length).toLowerCase(),
          });
        break;
      case 'workflowExecutionCompleted':
      case 'workflowExecutionFailed':
      case 'workflowExecutionCanceled':
      case 'workflowExecutionTerminated':
      case 'workflowExecutionTimedOut':
      case 'workflowExecutionContinuedAsNew':
        close = event;
        break;
    }
  }

  const startedAtMs = startEvent.timeMs;
  const failure = close?.kind === 'workflowExecutionFailed' ? failureReport(close.attrs.failure) : undefined;
  const outcome = outcomeOf(close, failure, searchAttrs);
  const cancelledMemo = isRecord(memo.cancelled) ? memo.cancelled : undefined;
  const cancelled =
    outcome === 'cancelled'
      ? {
          step: typeof cancelledMemo?.step === 'string' ? cancelledMemo.step : undefined,
          teardown: stringArray(cancelledMemo?.teardown),
        }
      : undefined;
  // A failure the workflow did not attribute (an invalid spec fails before any step bookkeeping) ended in the
  // step it had reached.
  const endedStep =
    failure?.step ??
    cancelled?.step ??
    (outcome === 'failed' || outcome === 'cancelled' || outcome === 'terminated' || outcome === 'timed out'
      ? lastReachedStep(order, validatedAtMs)
      : undefined);

  const steps = child
    ? delegatedSteps(startedAtMs, validatedAtMs, child, outcome, close?.timeMs)
    : deploySteps_(order, {
        startedAtMs,
        validatedAtMs,
        outcomeRecordedAtMs,
        close,
        outcome,
        endedStep,
        failureMessage: failure?.message,
      });

  const result = resultReport(close, memo);
  const load = loadReport(order, searchAttrs, result);
  const loadSeconds = load?.loadSeconds;
  const baseline: BaselineReport = opts.baseline ?? {
    available: false,
    reason: 'offline (--history): the cluster’s earlier runs are not in this file; run online to compare',
  };
  if (baseline.available && loadSeconds !== undefined) {
    baseline.deltaSeconds = loadSeconds - baseline.medianSeconds;
    baseline.ratio = baseline.medianSeconds > 0 ? loadSeconds / baseline.medianSeconds : undefined;
  }

  const scheduleId = searchAttrs.TemporalScheduledById;
  const parent = isRecord(start.parentWorkflowExecution) ? start.parentWorkflowExecution : undefined;
  const trigger: TriggerReport = {
    kind:
      (isRecord(options) && typeof options.trigger === 'string' ? options.trigger : undefined) ??
      (typeof searchAttrs.LiftoffTrigger === 'string' ? searchAttrs.LiftoffTrigger : undefined) ??
      (scheduleId !== undefined ? 'schedule' : 'unknown'),
    startedBy: typeof start.identity === 'string' && start.identity !== '' ? start.identity : undefined,
    scheduleId: typeof scheduleId === 'string' ? scheduleId : undefined,
    parent:
      parent && typeof parent.workflowId === 'string'
        ? {
            workflowId: parent.workflowId,
            runId: typeof parent.runId === 'string' ? parent.runId : undefined,
          }
        : undefined,
    child: child ? { workflowId: child.workflowId, runId: child.runId } : undefined,
  };

  const notes: string[] = [];
  if (order.some((t) => t.run.attempt > 2)) {
    notes.push(
      'Temporal keeps only the last two attempts’ errors of a retried activity (the last one, and the one before it with the last start); earlier attempts are counted, not quoted.',
    );
  }
  if (spec && !spec.valid) notes.push('The input is not a valid spec: shown as given, without defaults.');
  if (child) {
    notes.push(
      `This run only held the ${trigger.kind} trigger: the deploy ran as the child ${child.workflowId}${child.runId ? ` (run ${child.runId})` : ''}. Its postmortem has the steps.`,
    );
  }

  const model: Postmortem = {
    format: 'liftoff-postmortem/1',
    workflowId: typeof start.workflowId === 'string' ? start.workflowId : (opts.workflowId ?? '(unknown)'),
    runId:
      opts.runId ??
      (typeof start.originalExecutionRunId === 'string' ? start.originalExecutionRunId : undefined),
    workflowType: nameOf(start.workflowType) ?? '(unknown)',
    cluster:
      typeof searchAttrs.LiftoffCluster === 'string'
        ? searchAttrs.LiftoffCluster
        : isRecord(input) && typeof input.cluster === 'string'
          ? input.cluster
          : undefined,
    outcome,
    startedAtMs,
    endedAtMs: close?.timeMs,
    durationMs: close ? close.timeMs - startedAtMs : undefined,
    trigger,
    steps,
    attemptErrors: attemptErrors(order),
    load,
    failure,
    cancelled,
    spec: input === undefined ? undefined : spec,
    result,
    loadVsBaseline: { loadSeconds, baseline },
    workers: [...workers.values()],
    workflowTaskProblems: problems,
    notes,
  };
  return redactDeep(model, secrets);
}

interface StepContext {
  startedAtMs: number;
  validatedAtMs?: number;
  outcomeRecordedAtMs?: number;
  close?: HistoryEventView;
  outcome: Outcome;
  endedStep?: string;
  failureMessage?: string;
}

// The twelve deploy steps in order, then what ran after a failure, then anything unexpected.
function deploySteps_(order: ActivityTrack[], ctx: StepContext): StepTimeline[] {
  const byStep = new Map<string, ActivityRun[]>();
  for (const t of order) byStep.set(t.step, [...(byStep.get(t.step) ?? []), t.run]);
  const lastReached = Math.max(-1, ...[...byStep.keys()].map((s) => stepIndex.get(s) ?? -1));
  const running = ctx.outcome === 'running';
  const endedAt = ctx.close?.timeMs;
  const firstLine = (text: string | undefined) => text?.split('\n')[0];

  const steps: StepTimeline[] = deploySteps.map((def, index): StepTimeline => {
    const runs = byStep.get(def.name) ?? [];
    const base = { name: def.name, title: def.title, activities: runs, aftermath: false };
    const failedHere = ctx.endedStep === def.name;
    const endOutcome: StepOutcome = ctx.outcome === 'cancelled' ? 'cancelled' : 'failed';
    if (def.name === 'validate') {
      const end = ctx.validatedAtMs ?? (failedHere ? endedAt : undefined);
      return withTimes(
        {
          ...base,
          outcome: failedHere
            ? endOutcome
            : ctx.validatedAtMs !== undefined
              ? 'done'
              : running
                ? 'running'
                : 'not reached',
          attempts: failedHere || ctx.validatedAtMs !== undefined ? 1 : 0,
          retries: 0,
          error: failedHere ? firstLine(ctx.failureMessage) : undefined,
        },
        ctx.startedAtMs,
        end,
      );
    }
    if (def.name === 'record') {
      const smokeEnd = byStep.get('smokeTest')?.at(-1)?.endedAtMs;
      const done = ctx.outcome === 'succeeded' && ctx.close?.kind === 'workflowExecutionCompleted';
      return withTimes(
        {
          ...base,
          outcome: failedHere ? endOutcome : done ? 'done' : 'not reached',
          attempts: done || failedHere ? 1 : 0,
          retries: 0,
          error: failedHere ? firstLine(ctx.failureMessage) : undefined,
        },
        done || failedHere ? (smokeEnd ?? ctx.outcomeRecordedAtMs) : undefined,
        done || failedHere ? endedAt : undefined,
      );
    }
    if (runs.length === 0) {
      return {
        ...base,
        outcome: failedHere ? endOutcome : index < lastReached ? 'skipped' : 'not reached',
        attempts: 0,
        retries: 0,
        error: failedHere ? firstLine(ctx.failureMessage) : undefined,
      };
    }
    return activityStep(base, runs, {
      outcome: failedHere
        ? endOutcome
        : runs.some((r) => r.endedAtMs === undefined) && running
          ? 'running'
          : 'done',
      error: failedHere ? firstLine(ctx.failureMessage) : undefined,
      endFallback: failedHere ? endedAt : undefined,
    });
  });

  for (const [name, runs] of byStep) {
    if (stepIndex.has(name)) continue;
    const aftermath = aftermathTitles.has(name);
    steps.push(
      activityStep({ name, title: aftermathTitles.get(name) ?? name, activities: runs, aftermath }, runs, {
        outcome: runs.some((r) => r.endedAtMs === undefined)
          ? running
            ? 'running'
            : 'failed'
          : runs.every((r) => r.outcome === 'completed')
            ? 'done'
            : 'failed',
      }),
    );
  }
  return steps;
}

function activityStep(
  base: Pick<StepTimeline, 'name' | 'title' | 'activities' | 'aftermath'>,
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

function withTimes(
  step: Omit<StepTimeline, 'startedAtMs' | 'endedAtMs' | 'durationMs'>,
  start: number | undefined,
  end: number | undefined,
): StepTimeline {
  const out: StepTimeline = { ...step };
  if (start !== undefined) out.startedAtMs = start;
  if (end !== undefined) out.endedAtMs = end;
  if (start !== undefined && end !== undefined) out.durationMs = Math.max(0, end - start);
  if (out.detail === undefined) delete out.detail;
  if (out.error === undefined) delete out.error;
  return out;
}

function delegatedSteps(
  startedAtMs: number,
  validatedAtMs: number | undefined,
  child: { workflowId: string; runId?: string; initiatedAtMs: number; endedAtMs?: number; outcome?: string },
  outcome: Outcome,
  closedAtMs: number | undefined,
): StepTimeline[] {
  const validate = deploySteps[0];
  return [
    withTimes(
      {
        name: validate.name,
        title: validate.title,
        outcome: validatedAtMs !== undefined ? 'done' : 'failed',
        attempts: 1,
        retries: 0,
        activities: [],
        aftermath: false,
      },
      startedAtMs,
      validatedAtMs,
    ),
    withTimes(
      {
        name: 'childDeploy',
        title: `Run the deploy as ${child.workflowId}`,
        outcome:
          outcome === 'running'
            ? 'running'
            : child.outcome === 'completed'
              ? 'done'
              : child.outcome === 'canceled'
                ? 'cancelled'
                : 'failed',
        attempts: 1,
        retries: 0,
        activities: [],
        aftermath: false,
        detail:
          child.outcome === 'refused' ? 'refused: a deploy of the cluster was already running' : undefined,
      },
      child.initiatedAtMs,
      child.endedAtMs ?? closedAtMs,
    ),
  ];
}

function lastReachedStep(order: ActivityTrack[], validatedAtMs: number | undefined): string {
  if (validatedAtMs === undefined) return 'validate';
  const reached = order.filter((t) => stepIndex.has(t.step)).at(-1);
  return reached?.step ?? 'validate';
}

function attemptErrors(order: ActivityTrack[]): AttemptError[] {
  const out: AttemptError[] = [];
  for (const { run, step } of order) {
    const common = { step, activityType: run.activityType, host: run.host };
    if (run.previousAttemptError !== undefined) {
      out.push({
        ...common,
        attempt: run.attempt - 1,
        error: run.previousAttemptError,
        atMs: run.startedAtMs,
        final: false,
      });
    }
    if (run.error !== undefined) {
      out.push({ ...common, attempt: run.attempt, error: run.error, atMs: run.endedAtMs, final: true });
    }
  }
  return out;
}

function loadReport(
  order: ActivityTrack[],
  searchAttrs: Record<string, unknown>,
  result: ResultReport | undefined,
): LoadReport | undefined {
  const polls = order.filter((t) => t.run.activityType === 'checkServeHealth');
  const first = polls[0];
  if (!first) return undefined;
  const startedAtMs = first.run.scheduledAtMs;
  const samples: LoadSample[] = [];
  let phase = 'starting';
  let shard: { done?: number; total?: number; percent?: number } = {};
  for (const poll of polls) {
    if (poll.run.endedAtMs === undefined || !isRecord(poll.result)) continue;
    const r = poll.result;
    const summary = isRecord(r.summary) ? r.summary : undefined;
    if (summary && typeof summary.phase === 'string') phase = summary.phase;
    if (summary && isRecord(summary.shard)) {
      shard = {
        done: numberOr(summary.shard.done),
        total: numberOr(summary.shard.total),
        percent: numberOr(summary.shard.percent),
      };
    }
    const ready = r.health === 'ok' && r.modelListed === true;
    samples.push(
      dropUndefined({
        atS: round1((poll.run.endedAtMs - startedAtMs) / 1000),
        phase: ready ? 'ready' : phase,
        shardsDone: shard.done,
        shardsTotal: shard.total,
        percent: shard.percent,
        health: typeof r.health === 'string' ? r.health : undefined,
      }),
    );
  }
  const endedAtMs = polls.at(-1)?.run.endedAtMs;
  const recorded = numberOr(searchAttrs.LiftoffLoadSeconds) ?? result?.loadSeconds;
  return dropUndefined({
    startedAtMs,
    endedAtMs,
    loadSeconds: recorded ?? (endedAtMs !== undefined ? round1((endedAtMs - startedAtMs) / 1000) : undefined),
    polls: polls.length,
    samples,
    last: samples.at(-1),
  });
}

function resultReport(
  close: HistoryEventView | undefined,
  memo: Record<string, unknown>,
): ResultReport | undefined {
  const summary = isRecord(memo.summary) ? memo.summary : {};
  const value =
    close?.kind === 'workflowExecutionCompleted' ? payloadValues(close.attrs.result)[0] : undefined;
  const r = isRecord(value) ? value : {};
  const smoke = isRecord(r.smoke) ? r.smoke : {};
  const out = dropUndefined({
    endpoint: stringOr(r.endpoint) ?? stringOr(summary.endpoint),
    model: stringOr(r.model) ?? stringOr(summary.model),
    loadSeconds: numberOr(r.loadSeconds) ?? numberOr(summary.loadSeconds),
    totalSeconds: numberOr(r.totalSeconds) ?? numberOr(summary.totalSeconds),
    tokensPerSecond: numberOr(smoke.tokensPerSecond) ?? numberOr(summary.tokensPerSecond),
    smokeText: stringOr(smoke.text),
  });
  return Object.keys(out).length > 0 ? out : undefined;
}

function outcomeOf(
  close: HistoryEventView | undefined,
  failure: FailureReport | undefined,
  searchAttrs: Record<string, unknown>,
): Outcome {
  switch (close?.kind) {
    case undefined:
      return 'running';
    case 'workflowExecutionCompleted':
      return 'succeeded';
    case 'workflowExecutionFailed':
      return failure?.type === 'DeployAlreadyRunning' || searchAttrs.LiftoffOutcome === 'refused'
        ? 'refused'
        : 'failed';
    case 'workflowExecutionCanceled':
      return 'cancelled';
    case 'workflowExecutionTerminated':
      return 'terminated';
    case 'workflowExecutionTimedOut':
      return 'timed out';
    default:
      return 'continued as new';
  }
}

/** The workflow's failure; the deploy's details[0] ({ step, causeDetails, diagnostics, teardown }) unpacked. */
function failureReport(failure: unknown): FailureReport {
  const f = isRecord(failure) ? failure : {};
  const info = isRecord(f.applicationFailureInfo) ? f.applicationFailureInfo : {};
  const [details] = payloadValues(info.details);
  const causes: string[] = [];
  for (let c = f.cause; isRecord(c); c = c.cause) causes.push(failureText(c, false));
  const deployDetails =
    isRecord(details) && ('diagnostics' in details || 'step' in details) ? details : undefined;
  return dropUndefined({
    type: stringOr(info.type) ?? failureKind(f),
    message: stringOr(f.message) ?? '',
    step: stringOr(deployDetails?.step),
    nonRetryable: typeof info.nonRetryable === 'boolean' ? info.nonRetryable : undefined,
    causes,
    diagnostics: Array.isArray(deployDetails?.diagnostics)
      ? (deployDetails.diagnostics as HostDiagnostics[])
      : [],
    teardown:
      deployDetails && Array.isArray(deployDetails.teardown)
        ? stringArray(deployDetails.teardown)
        : undefined,
    details: deployDetails ? undefined : details,
  });
}

/** One line per failure: "Type: message" and its causes, e.g. a heartbeat timeout and what came before it. */
function failureText(failure: unknown, withCauses = true): string {
  if (!isRecord(failure)) return String(failure);
  const info = isRecord(failure.applicationFailureInfo) ? failure.applicationFailureInfo : undefined;
  const type = stringOr(info?.type) ?? failureKind(failure);
  let text = `${type}: ${stringOr(failure.message) ?? ''}`;
  if (withCauses && isRecord(failure.cause)) text += ` (cause: ${failureText(failure.cause)})`;
  return text;
}

function failureKind(f: Record<string, unknown>): string {
  if (isRecord(f.timeoutFailureInfo)) return `Timeout(${enumText(f.timeoutFailureInfo.timeoutType) ?? '?'})`;
  if (isRecord(f.canceledFailureInfo)) return 'Cancelled';
  if (isRecord(f.terminatedFailureInfo)) return 'Terminated';
  if (isRecord(f.activityFailureInfo)) return 'ActivityFailure';
  if (isRecord(f.childWorkflowExecutionFailureInfo)) return 'ChildWorkflowFailure';
  if (isRecord(f.serverFailureInfo)) return 'ServerFailure';
  return 'Error';
}

/** "TIMEOUT_TYPE_HEARTBEAT" / "Heartbeat" → "heartbeat". */
function enumText(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const parts = value.split('_');
  const known = ['TIMEOUT_TYPE', 'WORKFLOW_TASK_FAILED_CAUSE', 'RETRY_STATE'];
  const prefix = known.find((p) => value.startsWith(`${p}_`));
  return (prefix ? value.slice(prefix.length + 1) : parts.join('_')).toLowerCase().replaceAll('_', ' ');
}

function hostOf(value: unknown): string | undefined {
  if (!isRecord(value)) return undefined;
  if (typeof value.host === 'string') return value.host;
  for (const key of ['host', 'head']) {
    const ref = value[key];
    if (isRecord(ref)) {
      if (isRecord(ref.target) && typeof ref.target.name === 'string') return ref.target.name;
      if (typeof ref.name === 'string') return ref.name;
    }
  }
  return undefined;
}

/** Ids are strings in proto JSON and after toObject (longs as strings); numbers are accepted too. */
function idText(v: unknown): string {
  return typeof v === 'string' || typeof v === 'number' ? String(v) : '';
}

function nameOf(v: unknown): string | undefined {
  return isRecord(v) && typeof v.name === 'string' ? v.name : undefined;
}

function stringOr(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function numberOr(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function stringArray(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

function dropUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}
