// The simulated GPU cluster: N hosts, each a network namespace (or a loopback address) with a real
// sshd, a state folder, and simulated tools first on its PATH.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { buildSimTools } from './build-tools.js';
import {
  liveGpuProcesses,
  paths,
  readFaults,
  readJson,
  writeFaults,
  writeJson,
  type GpuProcess,
  type HostConfig,
  type HostFaults,
} from './host-state.js';
import {
  clusterIfaceName,
  createFabric,
  createHostNet,
  deleteNetwork,
  hostLinksUp,
  hostNet,
  netLayout,
  netnsPids,
  netnsSupported,
  setHostLinks,
  strayNamespaces,
  type HostNet,
  type NetLayout,
} from './network.js';
import {
  allPids,
  isRunning,
  killAndWait,
  mapLimit,
  processGroupOf,
  readEnvVar,
  run,
  withDescendants,
} from './processes.js';
import {
  defaultVllmPace,
  gpuMemoryMiB,
  referenceImages,
  referenceModelDir,
  seedReferenceState,
  writeHostFolder,
} from './seed.js';
import {
  countAcceptedPublickey,
  countSessions,
  countListens,
  generateKeyPair,
  publicKeyBody,
  readSshdPid,
  spawnSshd,
  sshdPaths,
  sshdRunning,
  stopSshd,
  waitSshdListening,
  writeSshdConfig,
} from './sshd.js';

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
  netIndex: number;
  hosts: SimHost[];
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
  gpuProcesses: GpuProcess[];
  faults: HostFaults;
}

export const defaultStateDir = (): string => resolve(process.env.LIFTOFF_SIM_DIR ?? '/tmp/liftoff-sim');

const clusterFile = (stateDir: string): string => join(stateDir, 'cluster.json');
const markerFile = (stateDir: string): string => join(stateDir, '.liftoff-sim');

/** Where tools and host folders live inside the state dir. */
export const clusterPaths = {
  bin: (stateDir: string) => join(stateDir, 'bin'),
  ssh: (stateDir: string) => join(stateDir, 'ssh'),
  hosts: (stateDir: string) => join(stateDir, 'hosts'),
};

export function readCluster(stateDir: string = defaultStateDir()): SimCluster | undefined {
  return readJson<SimCluster>(clusterFile(resolve(stateDir)));
}

function requireCluster(stateDir: string): SimCluster {
  const cluster = readCluster(stateDir);
  if (!cluster) throw new Error(`no simulated cluster in ${stateDir} (run \`npm run sim -- up\`)`);
  return cluster;
}

function requireHost(cluster: SimCluster, name: string): SimHost {
  const host = cluster.hosts.find((h) => h.name === name);
  if (!host)
    throw new Error(`no host ${name} in the cluster (hosts: ${cluster.hosts.map((h) => h.name).join(', ')})`);
  return host;
}

function netOf(cluster: SimCluster, host: SimHost): HostNet {
  const ordinal = cluster.hosts.indexOf(host) + 1;
  return hostNet(netLayout(cluster.netIndex), host.name, ordinal, host.reachableFromControl);
}

interface PlannedHost extends SimHost {
  ordinal: number;
  net?: HostNet;
}

function plan(opts: SimClusterOptions, stateDir: string): { cluster: SimCluster; hosts: PlannedHost[] } {
  if (!Number.isInteger(opts.hosts) || opts.hosts < 1 || opts.hosts > 64) {
    throw new Error(`hosts must be 1..64, got ${opts.hosts}`);
  }
  const mode = opts.mode ?? (netnsSupported() ? 'netns' : 'loopback');
  if (mode === 'netns' && !netnsSupported()) throw new Error('netns mode needs root, iproute2 and unshare');
  const gpus = opts.gpusPerHost ?? 1;
  if (!Number.isInteger(gpus) || gpus < 1 || gpus > 16)
    throw new Error(`gpusPerHost must be 1..16, got ${gpus}`);
  const netIndex = opts.netIndex ?? 0;
  const layout = netLayout(netIndex);
  const prefix = opts.namePrefix ?? 'spark';
  if (!/^[a-z][a-z0-9-]*$/.test(prefix))
    throw new Error(`namePrefix must be a hostname prefix, got ${prefix}`);
  const names = Array.from({ length: opts.hosts }, (_, i) => `${prefix}${i + 1}`);
  const clusterOnly = new Set(opts.clusterOnly ?? []);
  for (const n of clusterOnly) {
    if (!names.includes(n)) throw new Error(`clusterOnly host ${n} is not one of ${names.join(', ')}`);
  }
  if (clusterOnly.size > 0 && mode === 'loopback') {
    throw new Error('clusterOnly needs netns mode: loopback hosts share one network and are all reachable');
  }
  if (clusterOnly.size === names.length) throw new Error('at least one host needs a management link');
  const root = process.getuid?.() === 0;
  const sshDir = clusterPaths.ssh(stateDir);
  const hosts = names.map((name, i): PlannedHost => {
    const ordinal = i + 1;
    const hostDir = join(clusterPaths.hosts(stateDir), name);
    if (mode === 'netns') {
      const net = hostNet(layout, name, ordinal, !clusterOnly.has(name));
      return {
        name,
        address: net.mgmtIp ?? net.clusterIp,
        sshPort: 22,
        clusterIp: net.clusterIp,
        clusterIface: clusterIfaceName,
        hostDir,
        netns: net.netns,
        reachableFromControl: net.mgmtIp !== undefined,
        ordinal,
        net,
      };
    }
    const ip = `127.0.${netIndex + 1}.${ordinal}`;
    return {
      name,
      address: ip,
      sshPort: root ? 22 : 2200 + ordinal,
      clusterIp: ip,
      clusterIface: 'lo',
      hostDir,
      reachableFromControl: true,
      ordinal,
    };
  });
  const cluster: SimCluster = {
    mode,
    stateDir,
    sshUser: userInfo().username,
    privateKeyPath: join(sshDir, 'id_ed25519'),
    knownHostsPath: join(sshDir, 'known_hosts'),
    sshConfigPath: join(sshDir, 'config'),
    netIndex,
    hosts: hosts.map(({ ordinal: _o, net: _n, ...h }) => h),
  };
  return { cluster, hosts };
}

function sessionPath(stateDir: string): string {
  return `${clusterPaths.bin(stateDir)}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin`;
}

/** Known-hosts patterns for a host: every address it answers SSH on, bracketed when the port is not 22. */
function knownHostPatterns(h: SimHost): string {
  const addrs = [...new Set([h.address, h.clusterIp])];
  return addrs.map((a) => (h.sshPort === 22 ? a : `[${a}]:${h.sshPort}`)).join(',');
}

function sshClientConfig(cluster: SimCluster): string {
  const jump = cluster.hosts.find((h) => h.reachableFromControl);
  const lines = ['# Generated by `npm run sim -- up`. Use: ssh -F THIS_FILE <host name>'];
  for (const h of cluster.hosts) {
    lines.push(`Host ${h.name}`, `  HostName ${h.address}`, `  Port ${h.sshPort}`);
    if (!h.reachableFromControl && jump)
      lines.push(`  ProxyJump ${cluster.sshUser}@${jump.address}:${jump.sshPort}`);
  }
  lines.push(
    'Host *',
    `  User ${cluster.sshUser}`,
    `  IdentityFile ${cluster.privateKeyPath}`,
    '  IdentitiesOnly yes',
    `  UserKnownHostsFile ${cluster.knownHostsPath}`,
    '  StrictHostKeyChecking yes',
    '  GlobalKnownHostsFile /dev/null',
    '',
  );
  return lines.join('\n');
}

/** Starts a host's sshd and waits until it listens. */
async function startHostSshd(host: SimHost): Promise<void> {
  const before = countListens(host.hostDir);
  const pid = spawnSshd({ hostDir: host.hostDir, hostName: host.name, netns: host.netns });
  // sshd writes the same pid itself once it listens; writing it now covers a crash before that.
  writeFileSync(sshdPaths.pidFile(host.hostDir), `${pid}\n`);
  await waitSshdListening(host.hostDir, pid, before);
}

/**
 * Runs a simulated tool "on" the host: inside sshd's namespaces (network, mount, hostname) with the
 * environment an SSH session gets, so what it starts lives on that host.
 */
function hostRunner(cluster: SimCluster, host: SimHost): (args: string[]) => ReturnType<typeof run> {
  const env: NodeJS.ProcessEnv = {
    LIFTOFF_SIM_HOST_DIR: host.hostDir,
    PATH: sessionPath(cluster.stateDir),
    HOME: cluster.mode === 'netns' ? '/root' : join(host.hostDir, 'roothome'),
    LANG: 'C.UTF-8',
  };
  return (args) => {
    const [tool, ...rest] = args;
    if (tool === undefined) throw new Error('no tool to run');
    const toolPath = join(clusterPaths.bin(cluster.stateDir), tool);
    const cmdPath = tool.includes('/') ? tool : existsSync(toolPath) ? toolPath : tool;
    if (cluster.mode === 'netns') {
      const pid = readSshdPid(host.hostDir);
      if (pid === undefined) throw new Error(`sshd of ${host.name} is not running`);
      return run('nsenter', ['-t', String(pid), '-n', '-m', '-u', '--', cmdPath, ...rest], {
        env,
        cwd: '/',
        timeoutMs: 60_000,
      });
    }
    return run(cmdPath, rest, { env, cwd: '/', timeoutMs: 60_000 });
  };
}

/**
 * Brings up a fresh cluster (tearing down whatever the state dir held). Returns once every sshd
 * listens and the reference state is seeded. On failure everything started is torn down again.
 */
export async function upCluster(opts: SimClusterOptions): Promise<SimCluster> {
  const stateDir = resolve(opts.stateDir ?? defaultStateDir());
  const { cluster, hosts } = plan(opts, stateDir);
  await downCluster(stateDir);
  if (cluster.mode === 'netns') await removeStrayNetwork(netLayout(cluster.netIndex), cluster.hosts);
  mkdirSync(clusterPaths.ssh(stateDir), { recursive: true });
  mkdirSync(clusterPaths.hosts(stateDir), { recursive: true });
  writeFileSync(
    markerFile(stateDir),
    'state of a simulated liftoff cluster; `npm run sim -- down` removes it\n',
  );
  // Written before anything starts, so a crash mid-way still leaves downCluster a map of what to remove.
  writeJson(clusterFile(stateDir), cluster);
  try {
    await bringUp(opts, cluster, hosts);
  } catch (err) {
    await downCluster(stateDir).catch(() => undefined);
    throw err;
  }
  return cluster;
}

async function bringUp(opts: SimClusterOptions, cluster: SimCluster, hosts: PlannedHost[]): Promise<void> {
  const { stateDir } = cluster;
  const flavour = opts.flavour ?? 'gb10';
  const vllm = { ...defaultVllmPace, ...opts.vllm };
  const layout = netLayout(cluster.netIndex);
  const sshDir = clusterPaths.ssh(stateDir);

  const network = async (): Promise<void> => {
    if (cluster.mode !== 'netns') return;
    await createFabric(layout);
    await mapLimit(hosts, 8, (h) => createHostNet(layout, h.net as HostNet));
  };
  const keys = async (): Promise<Map<string, string>> => {
    const clientPub = await generateKeyPair(cluster.privateKeyPath, `liftoff-sim@control`);
    writeFileSync(join(sshDir, 'authorized_keys'), `${clientPub}\n`);
    const hostKeys = new Map<string, string>();
    await mapLimit(hosts, 4, async (h) => {
      mkdirSync(sshdPaths.dir(h.hostDir), { recursive: true });
      hostKeys.set(h.name, await generateKeyPair(sshdPaths.hostKey(h.hostDir), `root@${h.name}`));
    });
    return hostKeys;
  };
  const [, hostKeys] = await Promise.all([buildSimTools(clusterPaths.bin(stateDir)), keys(), network()]);

  for (const h of hosts) {
    const modelDir =
      cluster.mode === 'netns'
        ? referenceModelDir
        : join(h.hostDir, 'home', referenceModelDir.slice('/home/'.length));
    const config: HostConfig = {
      name: h.name,
      address: h.address,
      clusterIp: h.clusterIp,
      clusterIface: h.clusterIface,
      flavour,
      gpuCount: opts.gpusPerHost ?? 1,
      gpuMemoryMiB: gpuMemoryMiB(flavour),
      images: referenceImages,
      modelDirs: [modelDir],
      vllm,
    };
    writeHostFolder(h.hostDir, config, (dir) =>
      cluster.mode === 'netns' ? join(paths.home(h.hostDir), dir.slice('/home/'.length)) : dir,
    );
    const sessionEnv: Record<string, string> = {
      LIFTOFF_SIM_HOST_DIR: h.hostDir,
      PATH: sessionPath(stateDir),
    };
    // Without a mount namespace /root is the machine's own; a per-host HOME keeps its dotfiles out.
    if (cluster.mode === 'loopback') sessionEnv.HOME = join(h.hostDir, 'roothome');
    writeSshdConfig({
      hostDir: h.hostDir,
      listenAddress: cluster.mode === 'netns' ? '0.0.0.0' : h.address,
      port: h.sshPort,
      authorizedKeysFile: join(sshDir, 'authorized_keys'),
      sessionEnv,
    });
  }
  const knownHosts = cluster.hosts
    .map((h) => `${knownHostPatterns(h)} ${publicKeyBody(hostKeys.get(h.name) ?? '')}`)
    .join('\n');
  writeFileSync(cluster.knownHostsPath, `${knownHosts}\n`);
  writeFileSync(cluster.sshConfigPath, sshClientConfig(cluster));

  await mapLimit(cluster.hosts, 16, (h) => startHostSshd(h));
  if (opts.seedReferenceState ?? true) await seedEveryHost(cluster);
}

function seedEveryHost(cluster: SimCluster): Promise<unknown> {
  return mapLimit(cluster.hosts, 4, (h) => {
    const config = readJson<HostConfig>(paths.config(h.hostDir)) as HostConfig;
    return seedReferenceState(h.hostDir, config, hostRunner(cluster, h));
  });
}

/**
 * Puts every host of a running cluster back in the reference state after a reboot (old units active, old
 * containers holding GPU memory), leaving whatever a deploy started: the next deploy has to clear it, as for real.
 */
export async function reseedCluster(stateDir: string = defaultStateDir()): Promise<void> {
  await seedEveryHost(requireCluster(resolve(stateDir)));
}

/** Namespaces and links of this layout left by a run whose state dir is gone. */
async function removeStrayNetwork(layout: NetLayout, hosts: SimHost[]): Promise<void> {
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
  for (const name of existsSync(clusterPaths.hosts(stateDir))
    ? readdirSync(clusterPaths.hosts(stateDir))
    : []) {
    for (const f of existsSync(paths.containers(join(clusterPaths.hosts(stateDir), name)))
      ? readdirSync(paths.containers(join(clusterPaths.hosts(stateDir), name)))
      : []) {
      if (!f.endsWith('.json')) continue;
      const c = readJson<{ pgid?: number }>(
        join(paths.containers(join(clusterPaths.hosts(stateDir), name)), f),
      );
      if (c?.pgid) roots.push(...groupMembers(c.pgid));
    }
  }
  return withDescendants(roots);
}

/** Process groups with at least one running member, from one pass over /proc. */
function liveProcessGroups(): Set<number> {
  const out = new Set<number>();
  for (const pid of allPids()) {
    const pgid = processGroupOf(pid);
    if (pgid !== undefined && isRunning(pid)) out.add(pgid);
  }
  return out;
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

function readUnits(hostDir: string, liveGroups: Set<number>): HostStatus['units'] {
  const dir = paths.units(hostDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const u = readJson<{ active?: boolean; enabled?: boolean; pgid?: number }>(join(dir, f)) ?? {};
      return {
        name: f.slice(0, -'.json'.length),
        active: u.active === true,
        enabled: u.enabled === true,
        running: u.pgid !== undefined && liveGroups.has(u.pgid),
      };
    });
}

function readContainers(hostDir: string, liveGroups: Set<number>): HostStatus['containers'] {
  const dir = paths.containers(hostDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .flatMap((f) => {
      const c = readJson<{ name?: string; image?: string; status?: string; pgid?: number }>(join(dir, f));
      if (!c) return [];
      const running = c.pgid !== undefined && liveGroups.has(c.pgid);
      return [{ name: c.name ?? f.slice(0, -5), image: c.image ?? '', status: c.status ?? '', running }];
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

/** `sshd`: the daemon stops (connection refused). `link`: the host's links go down (connections time out). */
export async function setHostDown(stateDir: string, host: string, how: 'sshd' | 'link'): Promise<void> {
  const cluster = requireCluster(resolve(stateDir));
  const h = requireHost(cluster, host);
  if (how === 'sshd') {
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

/** Replaces the host's faults; the tools read them on their next invocation. */
export function setFaults(stateDir: string, host: string, faults: HostFaults): void {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  writeFaults(h.hostDir, faults);
}

/** Remote commands (SSH sessions) run on the host since the cluster came up. */
export function countRemoteCommands(stateDir: string, host: string): number {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  return countSessions(h.hostDir);
}

/** Successful SSH logins (Accepted publickey) on the host since the cluster came up. */
export function countSshHandshakes(stateDir: string, host: string): number {
  const h = requireHost(requireCluster(resolve(stateDir)), host);
  return countAcceptedPublickey(h.hostDir);
}
