// What a simulated cluster is (its hosts, its state dir and what lies where in it), and what bring-up,
// status and the fault switches share: looking a cluster and a host up, a session's PATH, starting an sshd.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readJson, type GpuProcess, type HostConfig, type HostFaults } from './host-state.js';
import { hostNet, netLayout, type HostNet } from './network.js';
import { countListens, spawnSshd, sshdPaths, waitSshdListening } from './sshd.js';

export interface SimClusterOptions {
  hosts: number;
  /**
   * Default: netns when root with iproute2 and unshare, else loopback. Loopback differs: hosts are
   * 127.0.1.N sharing the machine's network (no jump-only hosts, no link faults), sshd listens on port 22
   * as root else 2200+N, and there are no mount/UTS namespaces, so hostname is the machine's, /home and
   * /proc/meminfo are the machine's (modelDirs point into hostDir/home instead) and HOME is hostDir/roothome.
   */
  mode?: 'netns' | 'loopback';
  stateDir?: string;
  flavour?: 'h200' | 'gb10';
  gpusPerHost?: number;
  namePrefix?: string;
  /** Hosts (by name) with no management link: reachable only via another host (jump host tests). Netns mode only. */
  clusterOnly?: string[];
  vllm?: Partial<HostConfig['vllm']>;
  seedReferenceState?: boolean;
  /**
   * Which network layout to use (0..99), so clusters in separate state dirs can run side by side.
   * 0 (default) is lfmgmt0 / lf-fabric / 10.213.1.0/24 + 10.213.2.0/24 / lf-<name>; k uses
   * 10.213.(2k+1).0/24 + 10.213.(2k+2).0/24 and lf<k>-<name>. In loopback mode hosts are 127.0.(k+1).N.
   */
  netIndex?: number;
  /**
   * The deploy's containers run the real Ray and vLLM from .venv-real, mounted into them (sim/real-tools.ts). Needs
   * docker: 'real'.
   */
  realTools?: boolean;
  /** Every host logs each command it runs over SSH (sim/command-log.ts); off by default, as it costs a shell. */
  recordCommands?: boolean;
  /**
   * `real`: every host runs its own Docker Engine and `docker` is the real CLI (sim/real-docker.ts); netns mode
   * only, as root, after scripts/setup-docker.sh. Default `simulated`: sim/tools/docker.
   */
  docker?: 'simulated' | 'real';
  /** Real-Docker hosts (by name) whose daemon has no NVIDIA runtime: `docker run --gpus` fails there. */
  noGpuRuntime?: string[];
  /**
   * The user every SSH session logs in as. Default: the machine's current user (root in netns mode). Another name
   * makes it an ordinary user of this machine in the docker group, owning each host's folder (sim/ssh-user.ts), as
   * at a site whose login is not root. Netns mode only, as root.
   */
  sshUser?: string;
}

export interface SimHost {
  name: string;
  address: string;
  sshPort: number;
  clusterIp: string;
  clusterIface: string;
  hostDir: string;
  netns?: string;
  reachableFromControl: boolean;
}

export interface SimCluster {
  mode: 'netns' | 'loopback';
  stateDir: string;
  sshUser: string;
  privateKeyPath: string;
  knownHostsPath: string;
  /** An ssh_config with a Host entry per host name (ProxyJump set for cluster-only hosts): `ssh -F it spark2`. */
  sshConfigPath: string;
  /**
   * A liftoff worker policy that lets a worker use this cluster's key and known_hosts (a worker's own setting,
   * never the spec's): `LIFTOFF_WORKER_POLICY=<it> liftoff worker`.
   */
  workerPolicyPath: string;
  netIndex: number;
  hosts: SimHost[];
  /** Present when every host runs a real Docker Engine (sim/real-docker.ts). */
  docker?: 'real';
  /** Real-Docker hosts whose daemon has no NVIDIA runtime (SimClusterOptions.noGpuRuntime). */
  noGpuRuntime?: string[];
  /** Present when the deploy's containers run the real Ray and vLLM: the venv they mount (sim/real-tools.ts). */
  realTools?: { venv: string };
}

export interface HostStatus {
  name: string;
  address: string;
  sshPort: number;
  reachableFromControl: boolean;
  sshd: 'up' | 'down';
  sshdPid?: number;
  /** Netns mode: whether the host's links are up. Loopback mode has no links to take down. */
  link: 'up' | 'down' | 'none';
  units: { name: string; active: boolean; enabled: boolean; running: boolean }[];
  containers: { name: string; image: string; status: string; running: boolean }[];
  /** A real-Docker host's daemon: whether it answers, and what docker said when it did not. */
  dockerd?: 'up' | 'down';
  dockerdError?: string;
  gpuProcesses: GpuProcess[];
  faults: HostFaults;
}

export const defaultStateDir = (): string => resolve(process.env.LIFTOFF_SIM_DIR ?? '/tmp/liftoff-sim');

export const clusterFile = (stateDir: string): string => join(stateDir, 'cluster.json');
export const markerFile = (stateDir: string): string => join(stateDir, '.liftoff-sim');

/** Where tools and host folders live inside the state dir. */
export const clusterPaths = {
  bin: (stateDir: string) => join(stateDir, 'bin'),
  ssh: (stateDir: string) => join(stateDir, 'ssh'),
  hosts: (stateDir: string) => join(stateDir, 'hosts'),
};

export function readCluster(stateDir: string = defaultStateDir()): SimCluster | undefined {
  return readJson<SimCluster>(clusterFile(resolve(stateDir)));
}

export function requireCluster(stateDir: string): SimCluster {
  const cluster = readCluster(stateDir);
  if (!cluster) throw new Error(`no simulated cluster in ${stateDir} (run \`npm run sim -- up\`)`);
  return cluster;
}

export function requireHost(cluster: SimCluster, name: string): SimHost {
  const host = cluster.hosts.find((h) => h.name === name);
  if (!host)
    throw new Error(`no host ${name} in the cluster (hosts: ${cluster.hosts.map((h) => h.name).join(', ')})`);
  return host;
}

export function netOf(cluster: SimCluster, host: SimHost): HostNet {
  const ordinal = cluster.hosts.indexOf(host) + 1;
  return hostNet(netLayout(cluster.netIndex), host.name, ordinal, host.reachableFromControl);
}

export function sessionPath(stateDir: string): string {
  return `${clusterPaths.bin(stateDir)}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin`;
}

/** Starts a host's sshd and waits until it listens. */
export async function startHostSshd(host: SimHost): Promise<void> {
  const before = countListens(host.hostDir);
  const pid = spawnSshd({ hostDir: host.hostDir, hostName: host.name, netns: host.netns });
  // sshd writes the same pid itself once it listens; writing it now covers a crash before that.
  writeFileSync(sshdPaths.pidFile(host.hostDir), `${pid}\n`);
  await waitSshdListening(host.hostDir, pid, before);
}
