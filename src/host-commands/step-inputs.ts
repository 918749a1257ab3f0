// The inputs of the launch's activities, built from the spec in one place: the deploy schedules them and
// `liftoff plan` renders the commands they lead to, so the two cannot disagree on a flag. Pure.
import type { LaunchServeInput, RayContainerInput } from './launch.js';
import type { CompanionInput } from './companions.js';
import { companionContainer, type CompanionSpec } from '../config/companions.js';
import type { StartRankInput } from './multiproc.js';
import { defaultDistributedTimeout } from '../config/backend.js';
import { parseDuration } from '../config/duration.js';
import type { DeploySpec } from '../config/schema.js';
import type { HostRef } from '../config/targets.js';

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

/**
 * The rank on `host` of a multiproc launch (serve.backend: multiproc): rank 0 is the head, the other hosts take
 * ranks 1.. in the spec's order. Every rank gets the same parallel sizes, master and model.
 */
export function rankInput(
  spec: DeploySpec,
  launchId: string,
  host: InputHost,
  rank: number,
  head: InputHost,
): StartRankInput {
  const timeoutMs = parseDuration(spec.serve.distributedTimeout ?? defaultDistributedTimeout) ?? 120_000;
  return {
    host: host.ref,
    cluster: spec.cluster,
    launchId,
    image: spec.ray.image,
    container: spec.ray.container,
    clusterIp: host.clusterIp,
    // A rank's container runs vllm itself, so it gets both env blocks.
    env: [spec.ray.env, spec.serve.env],
    volumes: spec.ray.volumes,
    logPath: spec.serve.logPath,
    model: spec.serve.model,
    servedModelName: spec.serve.servedModelName,
    rank,
    nnodes: spec.hosts.length,
    tensorParallelSize: spec.serve.tensorParallelSize,
    masterAddr: head.clusterIp,
    masterPort: spec.serve.masterPort ?? 0,
    port: spec.serve.port,
    distributedTimeoutSeconds: Math.max(1, Math.round(timeoutMs / 1000)),
    args: spec.serve.args,
  };
}

/** The companion `companion` on its host, `host`: its image is the cluster's unless it names its own. */
export function companionInput(
  spec: DeploySpec,
  launchId: string,
  host: InputHost,
  companion: CompanionSpec,
): CompanionInput {
  return {
    host: host.ref,
    clusterIp: host.clusterIp,
    cluster: spec.cluster,
    launchId,
    companion,
    image: companion.image ?? spec.ray.image,
    container: companionContainer(companion.name),
  };
}
