// The one map of the deploy: each step's name, title, and the activities it runs, each with the retry profile
// it runs under (activity-options.ts holds the profiles' numbers). Pure: the workflow, `--follow`, `status` and
// the postmortem all read it.
import { formatDuration } from '../config/duration.js';
import type { RollbackRequest } from '../shared/rollback.js';

export type RetryProfileName =
  'hostStep' | 'agreement' | 'gpuClear' | 'rayCheck' | 'launch' | 'poll' | 'workerPoll' | 'temporal';

export interface StepActivity {
  /** The activity type, as exported by src/activities/index.ts. */
  type: string;
  retry: RetryProfileName;
}

export interface StepDef {
  name: string;
  title: string;
  /** What this step schedules; none for the workflow's own step (record). */
  activities: readonly StepActivity[];
}

const host = (type: string): StepActivity => ({ type, retry: 'hostStep' });

export const deploySteps = [
  {
    name: 'validate',
    title: 'Validate the spec',
    activities: [{ type: 'checkWorkerPolicy', retry: 'hostStep' }],
  },
  {
    name: 'preflight',
    title: 'Preflight every host (read only)',
    activities: [
      host('preflightHost'),
      { type: 'checkHostsAgree', retry: 'agreement' },
      host('checkMasterPort'),
      { type: 'findHostOwners', retry: 'temporal' },
      { type: 'readRevisions', retry: 'temporal' },
    ],
  },
  {
    name: 'holdHosts',
    title: 'Hold the hosts for this cluster',
    activities: [
      { type: 'holdHosts', retry: 'temporal' },
      { type: 'handOverHosts', retry: 'temporal' },
    ],
  },
  { name: 'stopServices', title: 'Stop old services', activities: [host('stopServices')] },
  { name: 'removeContainers', title: 'Remove old containers', activities: [host('removeContainers')] },
  {
    name: 'verifyGpusClear',
    title: 'Verify GPUs are clear',
    activities: [{ type: 'verifyGpusClear', retry: 'gpuClear' }],
  },
  { name: 'startRayHead', title: 'Start the Ray head', activities: [host('startRayHead')] },
  { name: 'startRayWorkers', title: 'Start the Ray workers', activities: [host('startRayWorker')] },
  {
    name: 'verifyRayCluster',
    title: 'Verify the Ray cluster',
    activities: [{ type: 'verifyRayCluster', retry: 'rayCheck' }],
  },
  {
    name: 'checkServePort',
    title: 'Check serve.port is free on the head',
    activities: [host('checkServePort')],
  },
  // multiproc (serve.backend): every rank's container starts here, and the Ray steps above are skipped.
  {
    name: 'launchServe',
    title: 'Launch vllm serve',
    activities: [
      { type: 'launchServe', retry: 'launch' },
      { type: 'startRank', retry: 'launch' },
    ],
  },
  {
    name: 'waitHealthy',
    title: 'Wait until the server is healthy',
    activities: [
      { type: 'checkServeHealth', retry: 'poll' },
      { type: 'checkRayWorker', retry: 'workerPoll' },
      { type: 'checkRank', retry: 'workerPoll' },
    ],
  },
  { name: 'smokeTest', title: 'Smoke test: one chat completion', activities: [host('smokeTest')] },
  {
    name: 'startCompanions',
    title: 'Start the companion services',
    activities: [host('startCompanion'), { type: 'probeCompanion', retry: 'poll' }],
  },
  {
    name: 'record',
    title: 'Record the result and the revision',
    activities: [{ type: 'recordRevision', retry: 'temporal' }],
  },
] as const satisfies readonly StepDef[];

/** What runs after a failed or cancelled deploy: not steps of the sequence, but shown beside them. */
export const aftermathSteps = [
  {
    name: 'diagnostics',
    title: 'Collect diagnostics from every host',
    activities: [host('collectDiagnostics')],
  },
  {
    name: 'teardown',
    title: 'Tear down (remove this launch’s containers)',
    activities: [host('removeContainers')],
  },
  {
    name: 'rollback',
    title: 'Roll back to the last known-good revision',
    activities: [
      { type: 'recordRevision', retry: 'temporal' },
      { type: 'markRevisionBad', retry: 'temporal' },
    ],
  },
] as const satisfies readonly StepDef[];

const allSteps: readonly StepDef[] = [...deploySteps, ...aftermathSteps];

/**
 * The deploy step an activity type belongs to; activities of no step keep their own name. removeContainers is both
 * a step and teardown: the step wins here, and the postmortem tells teardown apart by when it ran.
 */
export function stepOfActivity(activityType: string): string {
  return allSteps.find((s) => s.activities.some((a) => a.type === activityType))?.name ?? activityType;
}

/** The retry profile a step runs an activity under; without `activityType`, the step's first activity. */
export function retryProfileOf(step: string, activityType?: string): RetryProfileName {
  const activities = allSteps.find((s) => s.name === step)?.activities ?? [];
  const def = activityType ? activities.find((a) => a.type === activityType) : activities[0];
  if (!def) throw new Error(`step ${step} does not run ${activityType ?? 'any activity'}`);
  return def.retry;
}

export type StepName = (typeof deploySteps)[number]['name'];

export type StepStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped' | 'cancelled';

export interface StepState {
  name: StepName;
  title: string;
  status: StepStatus;
  startedAtMs?: number;
  endedAtMs?: number;
  durationMs?: number;
  detail?: string;
  error?: string;
}

export interface LoadProgress {
  phase: string;
  shardsDone?: number;
  shardsTotal?: number;
  percent?: number;
  etaS?: number;
  elapsedS: number;
  health: 'refused' | 'ok' | 'error' | 'unknown';
  lastLogAtMs: number;
  lastLine?: string;
  /** Hosts that did not answer the last poll, with when they stopped answering. */
  unreachableSinceMs?: Record<string, number>;
}

export interface DeployProgress {
  cluster: string;
  launchId: string;
  trigger: string;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled' | 'refused';
  startedAtMs: number;
  currentStep?: StepName;
  steps: StepState[];
  load?: LoadProgress;
  endpoint?: string;
  /** Set when this run only holds the trigger (UI, schedule) and the deploy runs as a child under this id. */
  deployWorkflowId?: string;
  /** What teardown did, after a cancel or a failure with onFailure: teardown. */
  teardown?: string[];
  /** A rollback's deploy: what it restores, from what, and why. */
  rollback?: RollbackRequest;
  /** This run failed and rolled back: the rollback runs next under the same workflow id (continue-as-new). */
  rolledBackTo?: number;
  /** The revision this deploy recorded. */
  revision?: number;
  /** The companions (spec.companions), in the order startCompanions brings them up. */
  companions?: CompanionProgress[];
}

export interface CompanionProgress {
  name: string;
  host: string;
  status: 'pending' | 'starting' | 'ready' | 'failed';
  startedAtMs?: number;
  /** From the start of its container to its first passing probe. */
  durationMs?: number;
  /** What its last probe found (the work it did, or why it failed). */
  detail?: string;
}

/** How long a companion has taken: to its first passing probe (or its failure), else so far at `nowMs`. */
export function companionDuration(c: CompanionProgress, nowMs?: number): number | undefined {
  if (c.durationMs !== undefined) return c.durationMs;
  return c.startedAtMs !== undefined && nowMs !== undefined ? Math.max(0, nowMs - c.startedAtMs) : undefined;
}

/**
 * One companion as `--follow`, `status` and the Temporal UI show it: `embeddings on spark1: ready in 3.1s — an
 * embedding of 1024 dimensions`. The detail is host text (a probe's answer): its first line, at most 200
 * characters; the caller escapes it for where it goes.
 */
export function companionLine(c: CompanionProgress, nowMs?: number): string {
  const ms = companionDuration(c, nowMs);
  const took =
    ms === undefined
      ? ''
      : ` ${c.status === 'ready' ? 'in' : c.status === 'failed' ? 'after' : 'for'} ${formatDuration(ms)}`;
  const detail = (c.detail ?? '').split('\n')[0]?.slice(0, 200) ?? '';
  return `${c.name} on ${c.host}: ${c.status}${took}${detail ? ` — ${detail}` : ''}`;
}

export interface DeployResult {
  cluster: string;
  launchId: string;
  endpoint: string;
  model: string;
  stepDurationsMs: Partial<Record<StepName, number>>;
  totalSeconds: number;
  loadSeconds: number;
  smoke: { text: string; completionTokens: number; tokensPerSecond: number };
  /** Whether a supervisor watches the cluster now, and which (src/workflows/supervise.ts). */
  supervision?: string;
  /** The cluster's revision this deploy recorded (absent where the cluster's workflow does not run). */
  revision?: number;
  /** Set when this result is a rollback's: the deploy that was asked for failed, and this restored the known-good. */
  rolledBack?: { from?: number; to: number; cause: string; failedRun?: string };
}
