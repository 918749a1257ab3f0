// Inputs and results of the deploy's activities: plain data that crosses the workflow/activity boundary.
// Credentials appear only as references (paths); activities resolve them.
import type { EnvSpec, EnvValue } from '../config/schema.js';
import type { HostRef } from '../config/targets.js';
import type { HeadPollCommandInput } from '../host-commands/polls.js';
import type { GpuClearLimits } from '../parsers/nvidia-smi.js';
import type { VllmLogSummary } from '../parsers/vllm-log.js';
import type { HeadLook } from '../host-commands/launch.js';
import type { ContainerLists } from '../steps/remove-containers.js';

export type { ContainerLists };

export interface NamedHost {
  name: string;
  ref: HostRef;
  clusterIp: string;
}

// Declared with the checks they carry (src/steps/preflight-checks.ts).
export type { PreflightCheck, PreflightReport } from '../steps/preflight-checks.js';
export type { PreflightInput } from '../steps/preflight-input.js';

export interface StopServicesInput {
  host: HostRef;
  units: string[];
  disable: boolean;
  /**
   * Read the container lists removeContainers starts from (all, and those labelled for this cluster) in the
   * trip that stops the units, after the stop, and return them (patch container-lists-with-stop).
   */
  containerListsFor?: { cluster: string };
}
export interface StopServicesResult {
  host: string;
  stopped: string[];
  disabled: string[];
  notLoaded: string[];
  /** Read after the stop when asked for, for the workflow to pass to removeContainers. */
  containerLists?: ContainerLists;
}

export interface RemoveContainersInput {
  host: HostRef;
  /** Containers named in the spec (cleanup.containers and ray.container). */
  names: string[];
  /** Also remove containers labelled liftoff.cluster=<cluster> by earlier runs. */
  cluster: string;
  /** stopServices' lists after its stop on this host; absent, the host is read (so is it on a retry). */
  containerLists?: ContainerLists;
}
export interface RemoveContainersResult {
  host: string;
  removed: string[];
}

export interface VerifyGpusClearInput extends GpuClearLimits {
  host: HostRef;
}

export interface RayContainerResult {
  host: string;
  containerId: string;
  /** True when a retried activity found the container of this launch already running. */
  reused: boolean;
}

export interface VerifyRayClusterInput {
  head: NamedHost;
  workers: NamedHost[];
  container: string;
  expectedNodes: number;
  expectedGpus: number;
  /**
   * The launch's marker on the head (serve.logPath + .liftoff.json): read with Ray's state on each poll; the last
   * look is returned (RayClusterState.headLook) for the workflow to pass to launchServe. steps/verify-ray.ts's
   * HeadPollInput has these fields; not imported, since that step imports this module's types.
   */
  launchMarkerPath?: string;
}
export interface RayClusterState {
  nodes: number;
  gpusTotal: number;
  gpusUsed: number;
  /** With launchMarkerPath: the head's last look, for launchServe's input (steps/launch-serve.ts). */
  headLook?: HeadLook;
}

export interface LaunchServeResult {
  pid: number;
  logPath: string;
  launchedAtMs: number;
  /** True when the marker showed this launch already running (a retried activity). */
  reused: boolean;
}

/** The head's server, as the smoke test reaches it. */
type ServerTarget = Omit<SmokeTestInput, 'prompt' | 'maxTokens'>;

/** logOffset: the bytes of the log already read. */
export interface CheckServeInput extends Omit<HeadPollCommandInput, 'url'>, ServerTarget {
  /** The spec's ray.env and serve.env: the secrets among them are redacted from the log tail. */
  secretEnv?: EnvSpec[];
}
export interface CheckServeResult {
  processAlive: boolean;
  containerRunning: boolean;
  logOffset: number;
  logGrew: boolean;
  /** Summary of the lines read this time (undefined when none). */
  summary?: VllmLogSummary;
  /** Last lines of the whole log, secrets redacted. */
  tail: string[];
  health: 'refused' | 'ok' | 'error';
  modelListed: boolean;
  /**
   * Reads of this poll that could not be made or read (docker failed, the output was cut or malformed), one
   * line each: each read is judged on its own, so one that fails leaves the others' answers standing.
   */
  readProblems?: string[];
}

export interface CheckRayWorkerResult {
  host: string;
  containerRunning: boolean;
  containerStatus?: string;
  /** The container's main process, as the host's kernel sees it; absent when it could not be read. */
  mainProcessAlive?: boolean;
}

export interface SmokeTestInput {
  head: HostRef;
  clusterIp: string;
  port: number;
  model: string;
  prompt: string;
  maxTokens: number;
  /** serve.env.VLLM_API_KEY: the server then wants it on /v1 routes. */
  apiKey?: EnvValue;
}

export interface DiagnosticsInput {
  hosts: NamedHost[];
  container: string;
  logPath: string;
  headName: string;
  /** The spec's ray.env and serve.env: the secrets among them are redacted from what is collected. */
  secretEnv?: EnvSpec[];
}
export interface HostDiagnostics {
  host: string;
  reachable: boolean;
  containerLogTail?: string;
  rayStatus?: string;
  nvidiaSmi?: string;
  serveLogTail?: string;
  errors: string[];
}

// ------------------------------------------------------------------------------------------ supervision

/** One probe of a serving cluster: `/health`, a one-token completion, `ray status`, a Ray container. */
export type ProbeName = 'health' | 'completion' | 'rayStatus' | 'container';
export interface ProbeCheck {
  name: ProbeName;
  host: string;
  ok: boolean;
  latencyMs?: number;
  /** Why it failed, as the host or the server said it (secrets redacted). */
  error?: string;
  detail?: string;
}

/** The smoke test's target, asked a one-token completion. */
export interface ProbeServingInput extends ServerTarget {
  container: string;
  /**
   * The spec's ray.env and serve.env: the secrets among them are redacted from everything the probe reports, as
   * the load poll's (a server's error body may quote its settings).
   */
  secretEnv?: EnvSpec[];
  completionTimeoutS: number;
  /** What the launch verified: `ray status` must still show as many nodes and GPUs. */
  expectedNodes: number;
  expectedGpus: number;
  /** serve.backend multiproc: no Ray on the head, so no `ray status`; the container is rank 0's. */
  backend?: 'multiproc';
}

/** What a host showed when the cluster was declared lost, before anything was removed. */
export interface HostBundle extends Omit<HostDiagnostics, 'nvidiaSmi'> {
  container?: { exists: boolean; running: boolean; status?: string; exitCode?: number };
  /** Head only, beside the serve log's tail: the exception that caused the failure (not vLLM's wrapper). */
  rootException?: string;
  /** `nvidia-smi --query-compute-apps`: who holds the GPUs. */
  gpuApps?: string;
  /** OOM-killer and out-of-memory lines of the kernel log, where the login may read it. */
  kernelOom?: string;
}
export interface FailureBundle {
  collectedAtMs: number;
  hosts: HostBundle[];
}

/** One webhook POST: the URL as the spec gives it (text or a secret reference, resolved in the activity). */
export interface WebhookInput {
  url: EnvValue;
  event: string;
  cluster: string;
  /** One line for people; sent as Slack's `text` when `slack` is set. */
  text: string;
  slack: boolean;
  /** The event's facts, sent as they are. */
  details: Record<string, unknown>;
}
