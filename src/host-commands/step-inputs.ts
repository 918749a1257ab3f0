// The inputs of the launch's activities, built from the spec in one place: the deploy schedules them and
// `liftoff plan` renders the commands they lead to, so the two cannot disagree on a flag. Pure.
import type { HostRef } from '../activities/ssh-context.js';
import type { LaunchServeInput, RayContainerInput } from '../activities/types.js';
import type { DeploySpec } from '../config/schema.js';

export interface InputHost {
  ref: HostRef;
  clusterIp: string;
}

/** The Ray node on `host`: the head without `headAddress`, a worker with it. */
export function rayContainerInput(
  spec: DeploySpec,
  launchId: string,
  host: InputHost,
  headAddress?: string,
): RayContainerInput {
  return {
    cluster: spec.cluster,
    launchId,
    image: spec.ray.image,
    container: spec.ray.container,
    port: spec.ray.port,
    env: spec.ray.env,
    volumes: spec.ray.volumes,
    shmSize: spec.ray.shmSize,
    gpus: spec.gpu.perHost,
    host: host.ref,
    clusterIp: host.clusterIp,
    ...(headAddress === undefined ? {} : { headAddress }),
  };
}

export function headAddressOf(spec: DeploySpec, head: InputHost): string {
  return `${head.clusterIp}:${spec.ray.port}`;
}

export function launchServeInput(spec: DeploySpec, launchId: string, head: InputHost): LaunchServeInput {
  return {
    head: head.ref,
    clusterIp: head.clusterIp,
    container: spec.ray.container,
    launchId,
    model: spec.serve.model,
    servedModelName: spec.serve.servedModelName,
    port: spec.serve.port,
    tensorParallelSize: spec.serve.tensorParallelSize,
    args: spec.serve.args,
    env: spec.serve.env,
    logPath: spec.serve.logPath,
    rayPort: spec.ray.port,
  };
}
