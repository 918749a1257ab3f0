// `npm run sim -- status`: each host's sshd, links, units, containers, GPU processes and faults.
import { resolve } from 'node:path';
import { defaultStateDir, netOf, requireCluster, type HostStatus } from './cluster-state.js';
import { liveGpuProcesses, paths, readFaults, readRecords } from './host-state.js';
import { hostLinksUp } from './network.js';
import { allPids, isRunning, processGroupOf } from './processes.js';
import { readSshdPid, sshdRunning } from './sshd.js';

/** Process groups with at least one running member, from one pass over /proc. */
function liveProcessGroups(): Set<number> {
  const out = new Set<number>();
  for (const pid of allPids()) {
    const pgid = processGroupOf(pid);
    if (pgid !== undefined && isRunning(pid)) out.add(pgid);
  }
  return out;
}

function readUnits(hostDir: string, liveGroups: Set<number>): HostStatus['units'] {
  return readRecords<{ active?: boolean; enabled?: boolean; pgid?: number }>(paths.units(hostDir)).map(
    ({ file, record }) => {
      const u = record ?? {};
      return {
        name: file.slice(0, -'.json'.length),
        active: u.active === true,
        enabled: u.enabled === true,
        running: u.pgid !== undefined && liveGroups.has(u.pgid),
      };
    },
  );
}

function readContainers(hostDir: string, liveGroups: Set<number>): HostStatus['containers'] {
  type Record = { name?: string; image?: string; status?: string; pgid?: number };
  return readRecords<Record>(paths.containers(hostDir)).flatMap(({ file, record: c }) => {
    if (!c) return [];
    const running = c.pgid !== undefined && liveGroups.has(c.pgid);
    return [{ name: c.name ?? file.slice(0, -5), image: c.image ?? '', status: c.status ?? '', running }];
  });
}

export async function clusterStatus(stateDir: string = defaultStateDir()): Promise<HostStatus[]> {
  const cluster = requireCluster(resolve(stateDir));
  const liveGroups = liveProcessGroups();
  return Promise.all(
    cluster.hosts.map(async (h): Promise<HostStatus> => {
      const pid = readSshdPid(h.hostDir);
      const up = sshdRunning(h.hostDir);
      return {
        name: h.name,
        address: h.address,
        sshPort: h.sshPort,
        reachableFromControl: h.reachableFromControl,
        sshd: up ? 'up' : 'down',
        sshdPid: up ? pid : undefined,
        link: h.netns ? ((await hostLinksUp(netOf(cluster, h))) ? 'up' : 'down') : 'none',
        units: readUnits(h.hostDir, liveGroups),
        containers: readContainers(h.hostDir, liveGroups),
        gpuProcesses: liveGpuProcesses(h.hostDir),
        faults: readFaults(h.hostDir),
      };
    }),
  );
}
