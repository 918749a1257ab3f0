// The postmortem of one deploy run, built from its event history alone. Every renderer (md, html, json) reads
// this and nothing else; `--format json` prints it as it is.
import type { HostDiagnostics } from '../activities/types.js';
import type { FieldChange } from '../shared/revision-diff.js';

export type Outcome =
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'refused'
  | 'terminated'
  | 'timed out'
  | 'continued as new'
  | 'running';

export type StepOutcome = 'done' | 'failed' | 'cancelled' | 'skipped' | 'running' | 'not reached';

/** One activity the workflow scheduled, with the retries Temporal made of it. */
export interface ActivityRun {
  activityId: string;
  activityType: string;
  host?: string;
  scheduledAtMs: number;
  /** When the last attempt started. */
  startedAtMs?: number;
  endedAtMs?: number;
  /** The attempt that ended it (1 = no retry). */
  attempt: number;
  outcome: 'completed' | 'failed' | 'timed out' | 'cancelled' | 'running' | 'scheduled';
  /** The worker (identity) that ran the last attempt. */
  worker?: string;
  /** The last attempt's error, when it failed or timed out. */
  error?: string;
  /** The error of the attempt before the last one, which the history keeps with the last start. */
  previousAttemptError?: string;
}

/** A deploy step (or the aftermath of a failure: diagnostics, teardown) on the run's timeline. */
export interface StepTimeline {
  name: string;
  title: string;
  outcome: StepOutcome;
  /** Milliseconds since the epoch. */
  startedAtMs?: number;
  endedAtMs?: number;
  durationMs?: number;
  /** Most attempts any one of its activities needed (1 = no retry; inline steps count 1). */
  attempts: number;
  /** Failed attempts across its activities (attempts beyond the first). */
  retries: number;
  activities: ActivityRun[];
  /** True for what the deploy did after a failure or a cancel (diagnostics, teardown). */
  aftermath: boolean;
  detail?: string;
  error?: string;
}

/** An error one attempt of an activity ended with. */
export interface AttemptError {
  step: string;
  activityType: string;
  host?: string;
  attempt: number;
  /** Attempt number known exactly, or "before N" when only the last two attempts' errors are in the history. */
  error: string;
  atMs?: number;
  final: boolean;
}

export interface LoadSample {
  /** Seconds since the load started (the first health poll). */
  atS: number;
  phase: string;
  shardsDone?: number;
  shardsTotal?: number;
  percent?: number;
  health?: string;
}

export interface LoadReport {
  startedAtMs: number;
  endedAtMs?: number;
  /** From the workflow's own record when it finished the load, else the span of the polls. */
  loadSeconds?: number;
  polls: number;
  samples: LoadSample[];
  last?: LoadSample;
}

export interface FailureReport {
  type: string;
  message: string;
  /** The step the workflow said failed. */
  step?: string;
  nonRetryable?: boolean;
  /** Messages of the failure's causes, outermost first. */
  causes: string[];
  diagnostics: HostDiagnostics[];
  teardown?: string[];
  /** The failure's own details when they are not the deploy's usual `{ step, progress, … }`. */
  details?: unknown;
}

export interface TriggerReport {
  /** cli / ui / schedule, as the workflow recorded it. */
  kind: string;
  /** The identity of whoever started the run (a CLI is `pid@host`). */
  startedBy?: string;
  scheduleId?: string;
  /** The UI or schedule run that started this deploy as its child. */
  parent?: { workflowId: string; runId?: string };
  /** This run only held the trigger: the deploy ran as this child. */
  child?: { workflowId: string; runId?: string };
  /** A relaunch by the cluster's supervisor: which one, why, and the run whose history holds the bundle. */
  relaunch?: { supervisorWorkflowId: string; supervisorRunId?: string; n?: number; cause?: string };
}

export type BaselineReport =
  | { available: false; reason: string }
  | {
      available: true;
      medianSeconds: number;
      runs: number;
      /** This run's load time minus the median (positive = slower). */
      deltaSeconds?: number;
      ratio?: number;
    };

export interface SpecReport {
  /** The spec with the schema's defaults applied, secrets replaced by the redaction marker. */
  effective: unknown;
  valid: boolean;
  /** Dotted paths of the fields that were redacted. */
  redactedFields: string[];
}

export interface ResultReport {
  endpoint?: string;
  model?: string;
  loadSeconds?: number;
  totalSeconds?: number;
  tokensPerSecond?: number;
  smokeText?: string;
}

export interface WorkerReport {
  identity: string;
  /** Workflow tasks and activity attempts this worker ran. */
  tasks: number;
  firstSeenMs: number;
  lastSeenMs: number;
}

export interface Postmortem {
  format: 'liftoff-postmortem/1';
  workflowId: string;
  runId?: string;
  workflowType: string;
  cluster?: string;
  outcome: Outcome;
  startedAtMs: number;
  endedAtMs?: number;
  durationMs?: number;
  trigger: TriggerReport;
  steps: StepTimeline[];
  attemptErrors: AttemptError[];
  load?: LoadReport;
  failure?: FailureReport;
  cancelled?: { step?: string; teardown: string[] };
  spec?: SpecReport;
  result?: ResultReport;
  loadVsBaseline: { loadSeconds?: number; baseline: BaselineReport };
  workers: WorkerReport[];
  /** Workflow tasks that failed or timed out (a worker died or crashed mid-task). */
  workflowTaskProblems: { atMs: number; kind: 'failed' | 'timed out'; detail: string }[];
  /** The spec's companions (issue 31): each one's start and readiness; absent when the spec has none. */
  companions?: CompanionReport[];
  /** A failed upgrade that rolled back, or the rollback's own deploy (issue 30). */
  rollback?: RollbackReport;
  notes: ReportNote[];
}

/** One companion (spec.companions[]) as the deploy's startCompanions step brought it up. */
export interface CompanionReport {
  name: string;
  host: string;
  /** starting: the run is still probing it; not started: the deploy ended before its turn. */
  outcome: 'ready' | 'failed' | 'starting' | 'not started';
  /** When its start was scheduled (ms since the epoch). */
  startedAtMs?: number;
  /** From its start to its first passing probe, or to its last answer when it failed. */
  durationMs?: number;
  /** Readiness probes sent. */
  probes: number;
  /** The passing probe's request time. */
  latencyMs?: number;
  /** Host text: what its passing probe did, or what its last probe found. */
  detail?: string;
  /** Host text: why it failed (its own error). */
  error?: string;
}

/**
 * How a failed upgrade and its rollback link: the failed run continued as the rollback's deploy under the same
 * workflow id (or a supervisor started it after a bake window), and what differs between the two.
 */
export interface RollbackReport {
  /** This run failed after the stop and went on as the rollback to this revision, in the run named. */
  rolledBackTo?: { revision: number; runId?: string };
  /** This run is a rollback's deploy: the revision it restores, the one that failed, and why. */
  of?: {
    to: number;
    from?: number;
    /** The failure that caused it: host text (an error message quoting a server). */
    cause: string;
    /** The run that failed, `workflowId:runId`; for a bake-window rollback, the supervisor's run. */
    failedRun?: string;
    /** A bake-window rollback: `failedRun` is the supervisor run that lost the revision and started this one. */
    bySupervisor?: true;
  };
  diff?: RollbackDiff;
  /** Why there is no diff (the bad revision's data is in neither this history nor what was fetched). */
  diffUnavailable?: string;
}

/** The bad revision against the one restored, field by field. */
export interface RollbackDiff {
  /** `revisions`: as the cluster recorded both (spec, host identities, argv); `specs`: the two runs' specs only. */
  basis: 'revisions' | 'specs';
  /** What the columns are, e.g. "revision 4 (failed)" and "revision 3 (restored)". */
  fromLabel: string;
  toLabel: string;
  changes: FieldChange[];
}

/** A note under the report: liftoff's own words, and host text (a loss's cause) kept apart so it is never markup. */
export interface ReportNote {
  text: string;
  hostText?: string;
}
