// Failure types that activities raise and workflows react to. Plain strings: workflows import this file.
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
  serveLaunchFailed: 'ServeLaunchFailed',
  serverExited: 'ServerExited',
  serverFatal: 'ServerFatal',
  serverHung: 'ServerHung',
  rayWorkerLost: 'RayWorkerLost',
  hostUnreachable: 'HostUnreachable',
  deployCancelled: 'DeployCancelled',
  loadTimeout: 'LoadTimeout',
  smokeTestFailed: 'SmokeTestFailed',
  deployAlreadyRunning: 'DeployAlreadyRunning',
  hostKeyUnknown: 'HostKeyUnknownError',
  hostKeyMismatch: 'HostKeyMismatchError',
} as const;

export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];
