// `npm run sim -- status`: each host's sshd, links, units, containers, GPU processes and faults. A real-Docker
// host's containers are its daemon's own list (the simulated docker's records are not written there).
import { resolve } from 'node:path';
import {
  defaultStateDir,
  netOf,
  requireCluster,
  type HostStatus,
  type SimCluster,
  type SimHost,
} from './cluster-state.js';
import { hostDocker } from './real-docker.js';
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

const psFormat = '{{.Names}}\t{{.Image}}\t{{.State}}\t{{.Status}}';

/** The containers the host's real daemon lists; a daemon that does not answer is said so, with its words. */
async function realContainers(
  host: SimHost,
): Promise<Pick<HostStatus, 'containers' | 'dockerd' | 'dockerdError'>> {
  const res = await hostDocker(host, ['ps', '-a', '--no-trunc', '--format', psFormat], 15_000);
  if (res.code !== 0)
    return { containers: [], dockerd: 'down', dockerdError: res.stderr.trim() || `exit ${res.code}` };
  const containers = res.stdout
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const [name = '', image = '', state = '', status = ''] = line.split('\t');
      return { name, image, status, running: state === 'running' };
    });
  return { containers, dockerd: 'up' };
}

async function containersOf(
  cluster: SimCluster,
  host: SimHost,
  liveGroups: Set<number>,
): Promise<Pick<HostStatus, 'containers' | 'dockerd' | 'dockerdError'>> {
  if (cluster.docker === 'real') return realContainers(host);
  return { containers: readContainers(host.hostDir, liveGroups) };
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
        ...(await containersOf(cluster, h, liveGroups)),
        gpuProcesses: liveGpuProcesses(h.hostDir),
        faults: readFaults(h.hostDir),
      };
    }),
  );
}
