// The simulated GPU cluster: N hosts, each a network namespace (or a loopback address) with a real
// sshd, a state folder, and simulated tools first on its PATH. Bring-up is in cluster-up.ts, teardown in
// cluster-down.ts, status in cluster-status.ts; this module is what tests and the CLI import, and it holds
// the switches that take a host down and up again or set its faults.
import { resolve } from 'node:path';
import { netOf, requireCluster, requireHost, startHostSshd } from './cluster-state.js';
import { writeFaults, type HostFaults } from './host-state.js';
import { setHostLinks } from './network.js';
export { maxSimHosts, simHostsProblem } from './network.js';
import {
  countAcceptedPublickey,
  countConnections,
  countSessions,
  killSshdConnections,
  sshdRunning,
  stopSshd,
} from './sshd.js';
import { runOk } from './processes.js';
import { readCommandLog, writeSlowCommand } from './command-log.js';
import { stopHostDocker } from './real-docker.js';

export {
  clusterPaths,
  defaultStateDir,
  readCluster,
  type HostStatus,
  type SimCluster,
  type SimClusterOptions,
  type SimHost,
} from './cluster-state.js';
export { downCluster } from './cluster-down.js';
export { clusterStatus } from './cluster-status.js';
export { reseedCluster, upCluster, writeSimWorkerPolicy } from './cluster-up.js';

/** Stops a real-Docker host's daemon as `systemctl stop docker` would: its containers stop with it. */
export async function stopDockerDaemon(stateDir: string, host: string): Promise<void> {
  const cluster = requireCluster(resolve(stateDir));
  if (cluster.docker !== 'real') throw new Error("stopDockerDaemon needs a cluster with docker: 'real'");
  await stopHostDocker(requireHost(cluster, host), { keepContainers: true });
}

/** `sshd`: the daemon and every open connection stop (connection refused). `link`: the host's links go down (connections time out). */
export async function setHostDown(stateDir: string, host: string, how: 'sshd' | 'link'): Promise<void> {
  const cluster = requireCluster(resolve(stateDir));
  const h = requireHost(cluster, host);
  if (how === 'sshd') {
    // Down for the connections already open too: a worker keeps one per host between activities.
    killSshdConnections(h.hostDir);
    await stopSshd(h.hostDir);
    return;
  }
  if (!h.netns) throw new Error('link faults need netns mode (loopback hosts have no link of their own)');
  await setHostLinks(netOf(cluster, h), false);
}

/** Undoes setHostDown: links up, sshd running. */
export async function setHostUp(stateDir: string, host: string): Promise<void> {
  const cluster = requireCluster(resolve(stateDir));
  const h = requireHost(cluster, host);
  if (h.netns) await setHostLinks(netOf(cluster, h), true);
  if (!sshdRunning(h.hostDir)) await startHostSshd(h);
}

/** Restarts the host's sshd with the same host key and config. */
export async function restartSshd(stateDir: string, host: string): Promise<void> {
  const cluster = requireCluster(resolve(stateDir));
  const h = requireHost(cluster, host);
  await stopSshd(h.hostDir);
  await startHostSshd(h);
}

/**
 * A second candidate interface on a host (netns mode): a veth end `iface` carrying `cidr` (e.g. 10.250.0.5/24),
 * as a host with a second NIC or RoCE port shows it. Gone with the namespace at `down`.
 */
export async function addHostInterface(
  stateDir: string,
  host: string,
  iface: string,
  cidr: string,
): Promise<void> {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  if (!h.netns) throw new Error('addHostInterface needs netns mode');
  await runOk('ip', ['-n', h.netns, 'link', 'add', iface, 'type', 'veth', 'peer', 'name', `${iface}p`]);
  await runOk('ip', ['-n', h.netns, 'addr', 'add', cidr, 'dev', iface]);
  await runOk('ip', ['-n', h.netns, 'link', 'set', iface, 'up']);
}

/** The commands the host ran over SSH, in order (a cluster brought up with `recordCommands`). */
export function hostCommands(stateDir: string, host: string): string[] {
  return readCommandLog(requireHost(requireCluster(resolve(stateDir)), host).hostDir);
}

/** Replaces the host's faults; the tools read them on their next invocation. */
export function setFaults(stateDir: string, host: string, faults: HostFaults): void {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  writeFaults(h.hostDir, faults);
}

/** Slows the host's remote commands that contain a text (a cluster up with `recordCommands`); undefined clears. */
export function setSlowCommand(
  stateDir: string,
  host: string,
  slow: { contains: string; seconds: number } | undefined,
): void {
  writeSlowCommand(requireHost(requireCluster(resolve(stateDir)), host).hostDir, slow);
}

/** Remote commands (SSH sessions) run on the host since the cluster came up. */
export function countRemoteCommands(stateDir: string, host: string): number {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  return countSessions(h.hostDir);
}

/** TCP connections the host's sshd accepted, a login or not (a client that stops at the host key counts). */
export function countSshConnections(stateDir: string, host: string): number {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  return countConnections(h.hostDir);
}

/** Successful SSH logins (Accepted publickey) on the host since the cluster came up. */
export function countSshHandshakes(stateDir: string, host: string): number {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  return countAcceptedPublickey(h.hostDir);
}
