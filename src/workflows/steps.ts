// The one map of the deploy: each step's name, title, the activities it runs and the retry profile they run
// under (see activity-options.ts). Pure: the workflow, `--follow`, `status` and the postmortem all read it.
export type RetryProfileName = 'none' | 'hostStep' | 'gpuClear' | 'rayCheck' | 'launch' | 'poll';

export interface StepDef {
  name: string;
  title: string;
  /** Activity types this step schedules (none for the workflow's own steps). */
  activities: readonly string[];
  retry: RetryProfileName;
}

export const deploySteps = [
  { name: 'validate', title: 'Validate the spec', activities: [], retry: 'none' },
  {
    name: 'preflight',
    title: 'Preflight every host (read only)',
    activities: ['preflightHost'],
    retry: 'hostStep',
  },
  { name: 'stopServices', title: 'Stop old services', activities: ['stopServices'], retry: 'hostStep' },
  {
    name: 'removeContainers',
    title: 'Remove old containers',
    activities: ['removeContainers'],
    retry: 'hostStep',
  },
  {
    name: 'verifyGpusClear',
    title: 'Verify GPUs are clear',
    activities: ['verifyGpusClear'],
    retry: 'gpuClear',
  },
  { name: 'startRayHead', title: 'Start the Ray head', activities: ['startRayHead'], retry: 'hostStep' },
  {
    name: 'startRayWorkers',
    title: 'Start the Ray workers',
    activities: ['startRayWorker'],
    retry: 'hostStep',
  },
  {
    name: 'verifyRayCluster',
    title: 'Verify the Ray cluster',
    activities: ['verifyRayCluster'],
    retry: 'rayCheck',
  },
  { name: 'launchServe', title: 'Launch vllm serve', activities: ['launchServe'], retry: 'launch' },
  {
    name: 'waitHealthy',
    title: 'Wait until the server is healthy',
    activities: ['checkServeHealth', 'checkRayWorker'],
    retry: 'poll',
  },
  {
    name: 'smokeTest',
    title: 'Smoke test: one chat completion',
    activities: ['smokeTest'],
    retry: 'hostStep',
  },
  { name: 'record', title: 'Record the result', activities: [], retry: 'none' },
] as const satisfies readonly StepDef[];

/** What runs after a failed or cancelled deploy: not steps of the sequence, but shown beside them. */
export const aftermathSteps = [
  {
    name: 'diagnostics',
    title: 'Collect diagnostics from every host',
    activities: ['collectDiagnostics'],
    retry: 'hostStep',
  },
  {
    name: 'teardown',
    title: 'Tear down (remove this launch’s containers)',
    activities: ['removeContainers'],
    retry: 'hostStep',
  },
] as const satisfies readonly StepDef[];

const stepByActivity = new Map<string, string>(
  [...deploySteps, ...aftermathSteps.slice(0, 1)].flatMap((s) =>
    s.activities.map((a): [string, string] => [a, s.name]),
  ),
);

/**
 * The deploy step an activity type belongs to; activities of no step keep their own name. A
 * removeContainers after the load is teardown, which the caller tells apart by when it ran.
 */
export function stepOfActivity(activityType: string): string {
  return stepByActivity.get(activityType) ?? activityType;
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
}
