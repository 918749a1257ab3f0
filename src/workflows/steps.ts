// The deploy's steps as data: name, title, and which progress record they own. Pure: imported by the
// workflow and by the CLI renderer.
export const deploySteps = [
  { name: 'validate', title: 'Validate the spec' },
  { name: 'preflight', title: 'Preflight every host (read only)' },
  { name: 'stopServices', title: 'Stop old services' },
  { name: 'removeContainers', title: 'Remove old containers' },
  { name: 'verifyGpusClear', title: 'Verify GPUs are clear' },
  { name: 'startRayHead', title: 'Start the Ray head' },
  { name: 'startRayWorkers', title: 'Start the Ray workers' },
  { name: 'verifyRayCluster', title: 'Verify the Ray cluster' },
  { name: 'launchServe', title: 'Launch vllm serve' },
  { name: 'waitHealthy', title: 'Wait until the server is healthy' },
  { name: 'smokeTest', title: 'Smoke test: one chat completion' },
  { name: 'record', title: 'Record the result' },
] as const;

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
