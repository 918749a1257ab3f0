// Every failure type liftoff raises, from activities, workflows and the SSH layer, and the one message for a
// refused second deploy. Plain strings: workflows import this file.
export const FailureType = {
  invalidSpec: 'InvalidSpec',
  preflightFailed: 'PreflightFailed',
  serviceStillActive: 'ServiceStillActive',
  serviceStillEnabled: 'ServiceStillEnabled',
  sudoNotPermitted: 'SudoNotPermitted',
  containerStillPresent: 'ContainerStillPresent',
  gpuNotClear: 'GpuNotClear',
  rayContainerFailed: 'RayContainerFailed',
  rayClusterIncomplete: 'RayClusterIncomplete',
  /** serve.port is taken on the head once the old services and containers are gone. */
  servePortInUse: 'ServePortInUse',
  serveLaunchFailed: 'ServeLaunchFailed',
  serverExited: 'ServerExited',
  serverFatal: 'ServerFatal',
  serverHung: 'ServerHung',
  rayWorkerLost: 'RayWorkerLost',
  hostUnreachable: 'HostUnreachable',
  /** multiproc: a rank's container did not start, or stopped during the load. */
  rankExited: 'RankExited',
  /** multiproc: a rank's log has a fatal line. */
  rankFailed: 'RankFailed',
  /** multiproc: a rank timed out connecting to rank 0's store (the master address or port cannot be reached). */
  masterUnreachable: 'MasterUnreachable',
  /** multiproc: serve.masterPort is taken on the head. */
  masterPortInUse: 'MasterPortInUse',
  deployCancelled: 'DeployCancelled',
  loadTimeout: 'LoadTimeout',
  smokeTestFailed: 'SmokeTestFailed',
  /** A companion's container did not start, or stopped, or its port is taken on its host. */
  companionFailed: 'CompanionFailed',
  /** A companion's probe did not pass within its readyTimeout. */
  companionNotReady: 'CompanionNotReady',
  /** Preflight: the main model's share of a host's memory and its companions' budgets do not fit it. */
  companionsDoNotFit: 'CompanionsDoNotFit',
  /** Preflight: a companion's port is taken on its host by something the deploy does not stop. */
  companionPortInUse: 'CompanionPortInUse',
  /** A host printed what no real tool prints (a negative or infinite figure): final, the check cannot judge it. */
  hostOutputInvalid: 'HostOutputInvalid',
  deployAlreadyRunning: 'DeployAlreadyRunning',
  /** Another cluster holds a host of the spec, and the deploy does not take it over. */
  hostsHeld: 'HostsHeld',
  /** The supervisor spent its relaunch budget: the cluster is left degraded. */
  clusterDegraded: 'ClusterDegraded',
  /** A webhook POST failed: not reached, an HTTP error, or a redirect (never followed). */
  webhookFailed: 'WebhookFailed',
  /** The worker's policy refuses a webhook's URL: plain http or an inside address, its origin not listed. */
  webhookRefused: 'WebhookRefused',
  /** `liftoff rollback --to N`: the cluster has no such revision (kept: the last 20). */
  revisionMissing: 'RevisionMissing',
  /** A schedule would deploy a spec recorded as a bad revision: refused until a person says so. */
  badRevision: 'BadRevision',
  /** A rollback's recorded image or weights are gone from a host: refused in preflight. */
  rollbackRefused: 'RollbackRefused',
  /** An automatic rollback failed too: the cluster is left degraded, with both failures. */
  rollbackFailed: 'RollbackFailed',
  /** A deploy failed with no typed cause (the workflow's own fallback). */
  deployFailed: 'DeployFailed',
  // The SSH layer's errors keep their class names as types (src/ssh/errors.ts).
  hostKeyUnknown: 'HostKeyUnknownError',
  hostKeyMismatch: 'HostKeyMismatchError',
  sshConnect: 'SshConnectError',
  remoteCommand: 'RemoteCommandError',
  remoteTimeout: 'RemoteTimeoutError',
} as const;

export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];

/**
 * Who started a deploy: the CLI, the Temporal UI's form, a schedule, the supervisor's relaunch, or a rollback
 * (`liftoff rollback`, or automatic after a failed upgrade).
 */
export type DeployTriggerName = 'cli' | 'ui' | 'schedule' | 'supervise' | 'rollback';

/** The one message for a deploy refused because another deploy of the cluster runs. */
export function deployAlreadyRunningMessage(
  cluster: string,
  workflowId: string,
  trigger: DeployTriggerName,
): string {
  return `a deploy of ${cluster} is already running (workflow ${workflowId}); this ${trigger} run started nothing. Follow it with \`liftoff status ${cluster}\` or cancel it first.`;
}
