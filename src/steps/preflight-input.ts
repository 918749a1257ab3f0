// What preflightHost is asked on one host, built from the spec in one place: by the deploy's workflow (with its
// patches' choices) and by `liftoff plan`, so the plan lists the very reads the deploy's trip runs.
import type { DeploySpec } from '../config/schema.js';
import { gpuMemoryUtilizationOf, vllmDefaultGpuMemoryUtilization } from '../config/companions.js';
import { dirnameOf, modelPathFor } from '../config/derive.js';
import type { HostRef } from '../config/targets.js';
import type { HostReadInput } from '../host-commands/agreement.js';
import { volumeHostPaths } from '../host-commands/preflight.js';
import { hostReadOf } from '../preflight/agreement.js';
import type { PlanHost } from './plan-entry.js';

export interface PreflightInput {
  host: HostRef;
  clusterIp: string;
  /** NCCL_SOCKET_IFNAME, when the spec sets it: that interface must carry clusterIp. */
  iface?: string;
  image: string;
  /** Host folder that must hold the model weights. */
  modelPath: string;
  /** HOST:CONTAINER[:mode] volumes; every HOST path must exist. */
  volumes: string[];
  /** Folder of the serve log (head only): must exist, and not lie in a system folder once links are followed. */
  logDir?: string;
  /** The serve log itself (head only): must not be a symbolic link, since the launch truncates it. */
  logPath?: string;
  minFreeDiskGiB: number;
  /**
   * The agreement read of this host, made in the same round trip (and on the head the versions inside the image);
   * its facts come back in the report, for the workflow to pass to checkHostsAgree.
   */
  agreement?: { read: HostReadInput; versions: boolean };
  /**
   * The companions this host runs, for the memory and port checks; absent on a host without any, so the
   * preflight of a spec without companions reads and reports what it always did.
   */
  companions?: CompanionsOnHost;
}

/** What the companion checks of one host need: the figures they add up and the ports they look at. */
export interface CompanionsOnHost {
  cluster: string;
  /** The main model's --gpu-memory-utilization (serve.args), else vLLM's default; it runs on every host. */
  mainUtilization: { value: number; fromArgs: boolean };
  /** spec.cleanup lists services or containers: the deploy stops those before it starts companions. */
  cleanupListed: boolean;
  companions: CompanionOnHost[];
}

export interface CompanionOnHost {
  /** Its index in spec.companions, for the fields a finding names. */
  index: number;
  name: string;
  port: number;
  memoryMiB: number;
  /** The --gpu-memory-utilization its own command gives vLLM, when it gives one. */
  utilization?: number;
  /** Its image (companions[].image, else ray.image). */
  image: string;
  /** The host side of its volumes (companions[].volumes) that are absolute paths. */
  volumeHostPaths: string[];
}

/** The companion checks' input of `host`, or undefined where no companion runs. */
export function companionsOnHost(spec: DeploySpec, host: string): CompanionsOnHost | undefined {
  const companions = spec.companions.flatMap((c, index) => {
    if (c.host !== host) return [];
    const utilization = gpuMemoryUtilizationOf(c.command);
    return [
      {
        index,
        name: c.name,
        port: c.port,
        memoryMiB: c.memoryMiB,
        ...(utilization !== undefined ? { utilization } : {}),
        image: c.image ?? spec.ray.image,
        volumeHostPaths: volumeHostPaths(c.volumes),
      },
    ];
  });
  if (companions.length === 0) return undefined;
  const main = gpuMemoryUtilizationOf(spec.serve.args);
  return {
    cluster: spec.cluster,
    mainUtilization:
      main !== undefined
        ? { value: main, fromArgs: true }
        : { value: vllmDefaultGpuMemoryUtilization, fromArgs: false },
    cleanupListed: spec.cleanup.services.length > 0 || spec.cleanup.containers.length > 0,
    companions,
  };
}

/** With the agreement read in the host's own trip; no interface named: the agreement checks cover them. */
export function preflightInputOf(spec: DeploySpec, host: PlanHost, head: PlanHost): PreflightInput {
  const isHead = host.role === 'head';
  const companions = companionsOnHost(spec, host.name);
  const expect = {
    image: spec.ray.image,
    modelPath: modelPathFor(spec) ?? '',
    hashWeights: spec.preflight.hashWeights,
    rayPort: spec.ray.port,
    hosts: [{ name: head.name, clusterIp: head.clusterIp, role: head.role }],
  };
  const agreement = hostReadOf(expect, { name: host.name, clusterIp: host.clusterIp, role: host.role });
  return {
    host: host.ref,
    clusterIp: host.clusterIp,
    image: spec.ray.image,
    modelPath: modelPathFor(spec) ?? '',
    volumes: spec.ray.volumes,
    ...(isHead ? { logDir: dirnameOf(spec.serve.logPath), logPath: spec.serve.logPath } : {}),
    minFreeDiskGiB: spec.preflight.minFreeDiskGiB,
    agreement: { read: agreement, versions: isHead },
    ...(companions ? { companions } : {}),
  };
}
