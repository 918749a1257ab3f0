// Tearing a simulated cluster down: every process it started, its namespaces and links, its state dir.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  clusterPaths,
  defaultStateDir,
  markerFile,
  readCluster,
  type SimCluster,
  type SimHost,
} from './cluster-state.js';
import { paths, readRecords, safeReaddir } from './host-state.js';
import {
  deleteNetwork,
  netLayout,
  netnsPids,
  netnsSupported,
  strayNamespaces,
  type NetLayout,
} from './network.js';
import {
  allPids,
  isRunning,
  killAndWait,
  mapLimit,
  processGroupOf,
  readEnvVar,
  withDescendants,
} from './processes.js';
import { readSshdPid } from './sshd.js';
import { stopHostDocker } from './real-docker.js';

/** Namespaces and links of this layout left by a run whose state dir is gone. */
export async function removeStrayNetwork(layout: NetLayout, hosts: SimHost[]): Promise<void> {
  const namespaces = await strayNamespaces(layout);
  const pids = netnsPids(namespaces);
  await killAndWait(withDescendants(pids));
  await deleteNetwork(layout, namespaces.concat(hosts.map((h) => h.netns ?? '').filter((n) => n.length > 0)));
}

/** Every process of the cluster: sshd and its sessions, and anything run with a host dir of this state dir. */
function clusterPids(stateDir: string, cluster: SimCluster | undefined): Set<number> {
  const roots: number[] = [];
  const under = `${stateDir}/`;
  for (const pid of allPids()) {
    const hostDir = readEnvVar(pid, 'LIFTOFF_SIM_HOST_DIR');
    if (hostDir !== undefined && hostDir.startsWith(under)) roots.push(pid);
  }
  for (const h of cluster?.hosts ?? []) {
    const pid = readSshdPid(h.hostDir);
    if (pid !== undefined && isRunning(pid)) roots.push(pid);
  }
  roots.push(...netnsPids((cluster?.hosts ?? []).flatMap((h) => (h.netns ? [h.netns] : []))));
  for (const name of safeReaddir(clusterPaths.hosts(stateDir))) {
    const containers = paths.containers(join(clusterPaths.hosts(stateDir), name));
    for (const { record } of readRecords<{ pgid?: number }>(containers)) {
      if (record?.pgid) roots.push(...groupMembers(record.pgid));
    }
  }
  return withDescendants(roots);
}

function groupMembers(pgid: number): number[] {
  return allPids().filter((pid) => processGroupOf(pid) === pgid);
}

/**
 * Kills every process of the cluster, deletes its namespaces and links, and removes the state dir.
 * Idempotent; also cleans up after a crash (stale namespaces, processes whose sshd is gone).
 */
export async function downCluster(stateDir: string = defaultStateDir()): Promise<void> {
  const dir = resolve(stateDir);
  const cluster = readCluster(dir);
  if (existsSync(dir) && !cluster && !existsSync(markerFile(dir)) && readdirSync(dir).length > 0) {
    throw new Error(`${dir} is not a simulated cluster's state dir; not removing it`);
  }
  // Real Docker daemons first, and gently: a daemon stops its containers and containerd cleans up after them.
  if (cluster?.docker === 'real') await mapLimit(cluster.hosts, 8, (h) => stopHostDocker(h));
  // Kill until nothing is left: a process may fork while the first sweep runs.
  for (let round = 0; round < 5; round++) {
    const pids = clusterPids(dir, cluster);
    if (pids.size === 0) break;
    const left = await killAndWait(pids);
    if (left.length > 0 && round === 4) throw new Error(`processes did not die: ${left.join(', ')}`);
  }
  if (cluster?.mode === 'netns') {
    await deleteNetwork(
      netLayout(cluster.netIndex),
      cluster.hosts.map((h) => h.netns ?? '').filter((n) => n.length > 0),
    );
  } else if (!cluster && dir === defaultStateDir() && netnsSupported()) {
    // The state is gone but namespaces may not be (state dir deleted by hand): sweep the default layout.
    await removeStrayNetwork(netLayout(0), []);
  }
  rmSync(dir, { recursive: true, force: true });
}
