// The Prometheus series liftoff's worker exports (issue 32), in one place: the workflows that record them, the
// dashboard and the alert rules that query them, and the tests that check one against the other. Pure: workflows
// import it. The Temporal SDK's own worker metrics (temporal_*) come from its Runtime and are not listed here.

/** Per cluster, recorded by its supervisor (and `down`): labels `cluster`, plus what each says. */
export const clusterMetrics = {
  /** 1 for the cluster's current state, 0 for the others; label `state` (clusterStates). */
  state: 'liftoff_cluster_state',
  /** The last probe round: 1 passed, 0 failed. */
  probeOk: 'liftoff_cluster_probe_ok',
  /** How long the last probe round took (its one-token completion included), in seconds. */
  probeLatency: 'liftoff_cluster_probe_latency_seconds',
  /** Probe rounds, by `verdict` (passed, failed, unknown). */
  probeRounds: 'liftoff_cluster_probe_rounds_total',
  /** Whole-cluster relaunches the supervisor started. */
  relaunches: 'liftoff_cluster_relaunches_total',
  /** Relaunches left in the supervise.window budget. */
  relaunchBudgetLeft: 'liftoff_cluster_relaunch_budget_left',
  /** The revision serving (its number). */
  revision: 'liftoff_cluster_revision',
  /** When the serving revision was recorded (unix seconds): its age is time() minus this. */
  revisionRecorded: 'liftoff_cluster_revision_recorded_timestamp_seconds',
  /** When the current launch started serving (unix seconds): uptime is time() minus this. */
  servingSince: 'liftoff_cluster_serving_since_timestamp_seconds',
  /** Per companion (labels `companion`, `host`): 1 serving, 0 not. */
  companionUp: 'liftoff_companion_up',
} as const;

/** Per deploy, recorded by the deploy workflow: label `cluster`, plus what each says. */
export const deployMetrics = {
  /** Each step's duration, by `step` (a histogram). */
  stepDuration: 'liftoff_deploy_step_duration_seconds',
  /** The load's progress, 0 to 1 (shards done over shards). */
  loadProgress: 'liftoff_deploy_load_progress_ratio',
  /** 1 for the load's current phase, 0 for the others; label `phase`. */
  loadPhase: 'liftoff_deploy_load_phase',
  /** The load's estimated time left, in seconds. */
  loadEta: 'liftoff_deploy_load_eta_seconds',
  /**
   * How far off the load's first ETA was, in seconds: label `direction`, `late` (it took longer than said) or
   * `early`, the other 0 (a gauge of the SDK's meter cannot go negative, so the sign is the label).
   */
  etaError: 'liftoff_deploy_eta_error_seconds',
  /** Deploys that ended, by `outcome` (succeeded, failed, cancelled, rolled_back) and `failure_type` ('' when none). */
  outcomes: 'liftoff_deploy_outcomes_total',
} as const;

/** The states `liftoff_cluster_state` takes. */
export const clusterStates = ['serving', 'loading', 'lost', 'relaunching', 'degraded', 'down'] as const;

/** vLLM's own series (its /metrics on each serving endpoint), as the dashboard queries them. */
export const vllmMetrics = {
  running: 'vllm:num_requests_running',
  waiting: 'vllm:num_requests_waiting',
  kvCacheUsage: 'vllm:kv_cache_usage_perc',
  timeToFirstToken: 'vllm:time_to_first_token_seconds',
  interTokenLatency: 'vllm:inter_token_latency_seconds',
  generationTokens: 'vllm:generation_tokens_total',
} as const;
