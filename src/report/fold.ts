// One pass over a run's history events into a plain record of what happened: the activities it scheduled with
// their last attempt and result, the workers that ran its tasks, the search attributes and memo as they ended
// up, a child it started, and the event that closed it. The projections (timeline, load, result…) read this.
import { deploySteps, stepOfActivity } from '../workflows/steps.js';
import { failureText, enumText } from './failure.js';
import { fieldValues, isRecord, payloadValues, type HistoryEventView } from './events.js';
import type { ActivityRun, Postmortem, WorkerReport } from './model.js';
import { closeEventKinds } from './outcome.js';
import { idText, nameOf } from './values.js';

/** An activity the workflow scheduled, the deploy step it belongs to, and what its last attempt returned. */
export interface ActivityTrack {
  run: ActivityRun;
  step: string;
  result?: unknown;
  /** startCompanion, probeCompanion: the companion (spec.companions[].name) it is for. */
  companion?: string;
}

/** The deploy a UI or schedule run started as its child. */
export interface ChildRun {
  workflowId: string;
  runId?: string;
  initiatedAtMs: number;
  endedAtMs?: number;
  /** completed / failed / canceled / terminated / timedout, or refused when it could not start. */
  outcome?: string;
}

export interface RunRecord {
  start: HistoryEventView;
  /** The workflow's arguments: the spec and the start options. */
  input: unknown;
  options: unknown;
  /** The start's search attributes with every upsert applied. */
  searchAttrs: Record<string, unknown>;
  /** The start's memo with every upsert applied. */
  memo: Record<string, unknown>;
  /** In the order they were scheduled. */
  activities: ActivityTrack[];
  workers: WorkerReport[];
  workflowTaskProblems: Postmortem['workflowTaskProblems'];
  /** When the workflow recorded the cluster (it does so once the spec is valid). */
  validatedAtMs?: number;
  /** When the workflow last recorded its outcome. */
  outcomeRecordedAtMs?: number;
  child?: ChildRun;
  close?: HistoryEventView;
}

export const stepIndex = new Map<string, number>(deploySteps.map((s, i) => [s.name, i]));

interface Fold {
  record: RunRecord;
  byScheduledEventId: Map<string, ActivityTrack>;
  workers: Map<string, WorkerReport>;
  /** The index in deploySteps of the furthest step an activity was scheduled for. */
  reached: number;
  /** Diagnostics were collected: the deploy failed, and what it schedules now is the failure's aftermath. */
  failing: boolean;
}

type EventHandler = (fold: Fold, event: HistoryEventView) => void;

export function foldHistory(events: readonly HistoryEventView[]): RunRecord {
  const start = events.find((e) => e.kind === 'workflowExecutionStarted');
  if (!start) throw new Error('the history has no WorkflowExecutionStarted event');
  const [input, options] = payloadValues(start.attrs.input);
  const fold: Fold = {
    record: {
      start,
      input,
      options,
      searchAttrs: fieldValues(start.attrs.searchAttributes, 'indexedFields'),
      memo: fieldValues(start.attrs.memo, 'fields'),
      activities: [],
      workers: [],
      workflowTaskProblems: [],
    },
    byScheduledEventId: new Map(),
    workers: new Map(),
    reached: -1,
    failing: false,
  };
  for (const event of events) handlers.get(event.kind)?.(fold, event);
  fold.record.workers = [...fold.workers.values()];
  return fold.record;
}

function trackOf(fold: Fold, event: HistoryEventView): ActivityTrack | undefined {
  return fold.byScheduledEventId.get(idText(event.attrs.scheduledEventId));
}

function seeWorker(fold: Fold, identity: unknown, atMs: number): void {
  if (typeof identity !== 'string' || identity === '') return;
  const w = fold.workers.get(identity) ?? { identity, tasks: 0, firstSeenMs: atMs, lastSeenMs: atMs };
  w.tasks += 1;
  w.lastSeenMs = atMs;
  fold.workers.set(identity, w);
}

const activityScheduled: EventHandler = (fold, event) => {
  const a = event.attrs;
  const type = nameOf(a.activityType) ?? '(activity)';
  let step = stepOfActivity(type);
  // The same activity removes old containers before the launch and this launch's after a failure.
  if (step === 'removeContainers' && fold.reached > (stepIndex.get('removeContainers') ?? 0))
    step = 'teardown';
  // The record step's recordRevision also records a failed revision bad before the rollback (issue 30).
  if (type === 'recordRevision' && fold.failing) step = 'rollback';
  if (step === 'diagnostics') fold.failing = true;
  fold.reached = Math.max(fold.reached, stepIndex.get(step) ?? -1);
  const [activityInput] = payloadValues(a.input);
  const track: ActivityTrack = {
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
  const companion = companionOf(activityInput);
  if (companion !== undefined) track.companion = companion;
  fold.byScheduledEventId.set(String(event.eventId), track);
  fold.record.activities.push(track);
};

const activityStarted: EventHandler = (fold, event) => {
  const a = event.attrs;
  const track = trackOf(fold, event);
  if (track) {
    track.run.startedAtMs = event.timeMs;
    track.run.attempt = Number(a.attempt ?? 1);
    track.run.outcome = 'running';
    if (typeof a.identity === 'string') track.run.worker = a.identity;
    if (a.lastFailure) track.run.previousAttemptError = failureText(a.lastFailure);
  }
  seeWorker(fold, a.identity, event.timeMs);
};

const activityEnded: EventHandler = (fold, event) => {
  const track = trackOf(fold, event);
  if (!track) return;
  track.run.endedAtMs = event.timeMs;
  if (event.kind === 'activityTaskCompleted') {
    track.run.outcome = 'completed';
    track.result = payloadValues(event.attrs.result)[0];
    track.run.host ??= hostOf(track.result);
  } else if (event.kind === 'activityTaskCanceled') {
    track.run.outcome = 'cancelled';
  } else {
    track.run.outcome = event.kind === 'activityTaskFailed' ? 'failed' : 'timed out';
    track.run.error = failureText(event.attrs.failure);
  }
};

const workflowTaskStarted: EventHandler = (fold, event) =>
  seeWorker(fold, event.attrs.identity, event.timeMs);

const workflowTaskFailed: EventHandler = (fold, event) => {
  const a = event.attrs;
  fold.record.workflowTaskProblems.push({
    atMs: event.timeMs,
    kind: 'failed',
    detail: `${enumText(a.cause) ?? 'workflow task failed'}${a.failure ? `: ${failureText(a.failure)}` : ''}${typeof a.identity === 'string' ? ` (worker ${a.identity})` : ''}`,
  });
};

const workflowTaskTimedOut: EventHandler = (fold, event) => {
  const timeout = enumText(event.attrs.timeoutType);
  fold.record.workflowTaskProblems.push({
    atMs: event.timeMs,
    kind: 'timed out',
    detail: `workflow task ${timeout ? `${timeout} ` : ''}timeout: no worker finished it in time (a worker died, or the sticky worker was gone)`,
  });
};

const searchAttributesUpserted: EventHandler = (fold, event) => {
  const upserted = fieldValues(event.attrs.searchAttributes, 'indexedFields');
  if ('LiftoffCluster' in upserted) fold.record.validatedAtMs ??= event.timeMs;
  if ('LiftoffOutcome' in upserted) fold.record.outcomeRecordedAtMs = event.timeMs;
  Object.assign(fold.record.searchAttrs, upserted);
};

const memoUpserted: EventHandler = (fold, event) => {
  Object.assign(fold.record.memo, fieldValues(event.attrs.upsertedMemo, 'fields'));
};

// Only a child deploy is "the child": a deploy itself starts children too (its supervisor, its notifications),
// and the postmortem of a deploy is about the deploy, not about them.
const childInitiated: EventHandler = (fold, event) => {
  if (nameOf(event.attrs.workflowType) !== 'deploy') return;
  fold.record.child = { workflowId: idText(event.attrs.workflowId), initiatedAtMs: event.timeMs };
};

/** An event about the recorded child after its initiation: its run id once it started, or how it ended. */
const childEvent: EventHandler = (fold, event) => {
  const execution = isRecord(event.attrs.workflowExecution) ? event.attrs.workflowExecution : undefined;
  const child = fold.record.child;
  if (child?.workflowId !== idText(execution ? execution.workflowId : event.attrs.workflowId)) return;
  if (event.kind === 'childWorkflowExecutionStarted') {
    if (typeof execution?.runId === 'string') child.runId = execution.runId;
    return;
  }
  child.endedAtMs = event.timeMs;
  child.outcome =
    event.kind === 'startChildWorkflowExecutionFailed'
      ? 'refused'
      : event.kind.slice('childWorkflowExecution'.length).toLowerCase();
};

const closed: EventHandler = (fold, event) => {
  fold.record.close = event;
};

const handlers = new Map<string, EventHandler>([
  ['activityTaskScheduled', activityScheduled],
  ['activityTaskStarted', activityStarted],
  ['activityTaskCompleted', activityEnded],
  ['activityTaskFailed', activityEnded],
  ['activityTaskTimedOut', activityEnded],
  ['activityTaskCanceled', activityEnded],
  ['workflowTaskStarted', workflowTaskStarted],
  ['workflowTaskFailed', workflowTaskFailed],
  ['workflowTaskTimedOut', workflowTaskTimedOut],
  ['upsertWorkflowSearchAttributes', searchAttributesUpserted],
  ['workflowPropertiesModified', memoUpserted],
  ['startChildWorkflowExecutionInitiated', childInitiated],
  ['childWorkflowExecutionStarted', childEvent],
  ['startChildWorkflowExecutionFailed', childEvent],
  ['childWorkflowExecutionCompleted', childEvent],
  ['childWorkflowExecutionFailed', childEvent],
  ['childWorkflowExecutionCanceled', childEvent],
  ['childWorkflowExecutionTerminated', childEvent],
  ['childWorkflowExecutionTimedOut', childEvent],
  // Which of them closed the run is its outcome (outcome.ts).
  ...closeEventKinds.map((kind): [string, EventHandler] => [kind, closed]),
]);

/** The host an activity ran on, from its input ({ host } or a host/head ref) or, failing that, its result. */
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

/** The companion a startCompanion or probeCompanion input is for (its `companion.name`). */
function companionOf(value: unknown): string | undefined {
  const companion = isRecord(value) ? value.companion : undefined;
  return isRecord(companion) && typeof companion.name === 'string' ? companion.name : undefined;
}
