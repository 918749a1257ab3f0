// Bringing a simulated cluster up: plan the hosts, build the tools, make the network and the keys, write each
// host's folder and sshd config, start every sshd, and seed the reference state.
import { existsSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { buildSimTools } from './build-tools.js';
import { installRealTools, realToolsMissing, realToolsPaths } from './real-tools.js';
import {
  hostDockerHost,
  prepareHostDocker,
  realDockerMissing,
  simContainerVolumes,
  startHostDocker,
  writeRealDockerFiles,
} from './real-docker.js';
import { downCluster, removeStrayNetwork } from './cluster-down.js';
import {
  clusterFile,
  clusterPaths,
  defaultStateDir,
  markerFile,
  requireCluster,
  sessionPath,
  startHostSshd,
  type SimCluster,
  type SimClusterOptions,
  type SimHost,
} from './cluster-state.js';
import { paths, readJson, writeJson, type HostConfig } from './host-state.js';
import {
  clusterIfaceName,
  createFabric,
  createHostNet,
  hostNet,
  netLayout,
  netnsSupported,
  simHostsProblem,
  type HostNet,
} from './network.js';
import { mapLimit, run } from './processes.js';
import {
  defaultVllmPace,
  gpuMemoryMiB,
  referenceImages,
  referenceModelDir,
  seedReferenceState,
  writeHostFolder,
} from './seed.js';
import { writeCommandRecorder } from './command-log.js';
import { generateKeyPair, publicKeyBody, readSshdPid, sshdPaths, writeSshdConfig } from './sshd.js';
import { startToolServer } from './tool-server.js';
import {
  allowUnitStops,
  ensureSshUser,
  handHostToSshUser,
  writeHostEtcHosts,
  sshUserProblem,
  type SshUserIds,
} from './ssh-user.js';

interface PlannedHost extends SimHost {
  ordinal: number;
  net?: HostNet;
}

function plan(opts: SimClusterOptions, stateDir: string): { cluster: SimCluster; hosts: PlannedHost[] } {
  const hostsProblem = simHostsProblem(opts.hosts);
  if (hostsProblem) throw new Error(hostsProblem);
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
  const realDocker = opts.docker === 'real';
  if (realDocker) {
    if (mode !== 'netns') throw new Error("docker: 'real' needs netns mode (a daemon per network namespace)");
    const missing = realDockerMissing();
    if (missing) throw new Error(`docker: 'real': ${missing}`);
  }
  if (opts.realTools) {
    if (!realDocker)
      throw new Error("realTools needs docker: 'real' (the real Ray and vLLM run in real containers)");
    const missing = realToolsMissing();
    if (missing) throw new Error(`realTools: ${missing}`);
  }
  for (const n of opts.noGpuRuntime ?? []) {
    if (!realDocker) throw new Error("noGpuRuntime needs docker: 'real'");
    if (!names.includes(n)) throw new Error(`noGpuRuntime host ${n} is not one of ${names.join(', ')}`);
  }
  const root = process.getuid?.() === 0;
  const sshUser = opts.sshUser ?? userInfo().username;
  if (sshUser !== userInfo().username) {
    const problem = sshUserProblem(sshUser);
    if (problem) throw new Error(problem);
    if (mode !== 'netns') throw new Error('sshUser needs netns mode (a per-host /home holds its home)');
  }
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
    sshUser,
    privateKeyPath: join(sshDir, clientKeyFile),
    knownHostsPath: join(sshDir, knownHostsFile),
    sshConfigPath: join(sshDir, 'config'),
    workerPolicyPath: join(sshDir, workerPolicyFile),
    netIndex,
    hosts: hosts.map(({ ordinal: _o, net: _n, ...h }) => h),
    ...(realDocker ? { docker: 'real' as const, noGpuRuntime: opts.noGpuRuntime ?? [] } : {}),
    // The cache's own path: the hosts never depend on this clone's link.
    ...(opts.realTools ? { realTools: { venv: realpathSync(realToolsPaths.venv) } } : {}),
  };
  return { cluster, hosts };
}

/** Known-hosts patterns for a host: every address it answers SSH on, bracketed when the port is not 22. */
function knownHostPatterns(h: SimHost): string {
  const addrs = [...new Set([h.address, h.clusterIp])];
  return addrs.map((a) => (h.sshPort === 22 ? a : `[${a}]:${h.sshPort}`)).join(',');
}

const clientKeyFile = 'id_ed25519';
const knownHostsFile = 'known_hosts';
const workerPolicyFile = 'worker-policy.yaml';

/**
 * Writes the liftoff worker policy for the cluster in `stateDir` (its key and known_hosts, which bring-up puts
 * in its ssh folder; secret sources keep liftoff's defaults) and returns its path. The paths do not change from
 * one bring-up to the next, so a worker started before the cluster can be pointed at it.
 */
export function writeSimWorkerPolicy(stateDir: string): string {
  const sshDir = clusterPaths.ssh(resolve(stateDir));
  mkdirSync(sshDir, { recursive: true });
  // Marks the folder as a cluster's state dir, so the bring-up that follows may clear it (downCluster refuses
  // any other non-empty folder).
  if (!existsSync(markerFile(resolve(stateDir))))
    writeFileSync(
      markerFile(resolve(stateDir)),
      'state of a simulated liftoff cluster; `npm run sim -- down` removes it\n',
    );
  const file = join(sshDir, workerPolicyFile);
  writeFileSync(
    file,
    [
      '# Generated by `npm run sim -- up`: a liftoff worker may reach this simulated cluster with its key and',
      '# known_hosts. Use: LIFTOFF_WORKER_POLICY=THIS_FILE liftoff worker (or liftoff dev).',
      `knownHosts: [${JSON.stringify(join(sshDir, knownHostsFile))}]`,
      `privateKeys: [${JSON.stringify(join(sshDir, clientKeyFile))}]`,
      '',
    ].join('\n'),
  );
  return file;
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
    ...(cluster.docker === 'real' ? { DOCKER_HOST: hostDockerHost(host) } : {}),
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
  const [, hostKeys, sshUserIds] = await Promise.all([
    buildSimTools(clusterPaths.bin(stateDir)),
    keys(),
    otherSshUser(cluster)
      ? ensureSshUser(cluster.sshUser).then(async (ids) => {
          await allowUnitStops(cluster.sshUser, stateDir, clusterPaths.bin(stateDir));
          return ids;
        })
      : undefined,
    network(),
  ]);

  const recorder = opts.recordCommands ? writeCommandRecorder(sshDir) : undefined;
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
    if (cluster.docker === 'real') sessionEnv.DOCKER_HOST = hostDockerHost(h);
    writeSshdConfig({
      hostDir: h.hostDir,
      listenAddress: cluster.mode === 'netns' ? '0.0.0.0' : h.address,
      port: h.sshPort,
      authorizedKeysFile: join(sshDir, 'authorized_keys'),
      sessionEnv,
      ...(recorder ? { forceCommand: recorder } : {}),
    });
  }
  if (sshUserIds) for (const h of hosts) writeHostEtcHosts(h.hostDir, h.name);
  const knownHosts = cluster.hosts
    .map((h) => `${knownHostPatterns(h)} ${publicKeyBody(hostKeys.get(h.name) ?? '')}`)
    .join('\n');
  writeFileSync(cluster.knownHostsPath, `${knownHosts}\n`);
  writeFileSync(cluster.sshConfigPath, sshClientConfig(cluster));
  writeSimWorkerPolicy(stateDir);
  if (cluster.realTools)
    installRealTools(
      cluster,
      hosts.map((h) => paths.home(h.hostDir)),
    );

  if (cluster.docker === 'real') {
    writeRealDockerFiles(stateDir, clusterPaths.bin(stateDir), clusterPaths.hosts(stateDir));
    const withoutGpus = new Set(cluster.noGpuRuntime);
    // A daemon needs only its namespace: it starts beside the sshds. Loading the one tarball into each daemon
    // gives every host the same image ID.
    await Promise.all([
      mapLimit(cluster.hosts, 16, (h) => startHostSshd(h)),
      mapLimit(cluster.hosts, 4, async (h) => {
        await startHostDocker(cluster, h, { gpuRuntime: !withoutGpus.has(h.name) });
        await prepareHostDocker(h, referenceImages);
      }),
    ]);
  } else {
    // Each host's tool server joins its sshd's namespaces. Real-Docker hosts have none: their tools run in
    // containers, apart from the host, and every call is its own process there.
    await mapLimit(cluster.hosts, 16, async (h) => {
      await startHostSshd(h);
      const sshdPid = cluster.mode === 'netns' ? readSshdPid(h.hostDir) : undefined;
      if (cluster.mode === 'netns' && sshdPid === undefined) return;
      await startToolServer({
        hostDir: h.hostDir,
        binDir: clusterPaths.bin(stateDir),
        path: sessionPath(stateDir),
        ...(sshdPid === undefined ? {} : { sshdPid }),
      });
    });
  }
  if (opts.seedReferenceState ?? true) await seedEveryHost(cluster);
  if (sshUserIds) handHostsToSshUser(cluster, sshUserIds);
}

/** Whether the cluster's SSH user is not this machine's current user (SimClusterOptions.sshUser). */
const otherSshUser = (cluster: SimCluster): boolean => cluster.sshUser !== userInfo().username;

/** Gives every host's folder to the SSH user, after root wrote (or seeded) what is in it. */
function handHostsToSshUser(cluster: SimCluster, owner: SshUserIds): void {
  for (const h of cluster.hosts) handHostToSshUser(h.hostDir, cluster.sshUser, owner);
}

/**
 * The reference containers' `docker run` flags beyond name and image. On real Docker they also need the host's
 * network (the image's tools find their host by hostname) and the simulated tools' mounts; a host whose daemon
 * cannot give GPUs ran its old containers without them.
 */
function seedRunFlags(cluster: SimCluster, host: SimHost): string[] {
  if (cluster.docker !== 'real') return ['--gpus', 'all'];
  return [
    ...(cluster.noGpuRuntime?.includes(host.name) ? [] : ['--gpus', 'all']),
    '--network',
    'host',
    ...simContainerVolumes(cluster).flatMap((v) => ['--volume', v]),
  ];
}

function seedEveryHost(cluster: SimCluster): Promise<unknown> {
  return mapLimit(cluster.hosts, 4, (h) => {
    const config = readJson<HostConfig>(paths.config(h.hostDir)) as HostConfig;
    return seedReferenceState(h.hostDir, config, hostRunner(cluster, h), seedRunFlags(cluster, h));
  });
}

/**
 * Puts every host of a running cluster back in the reference state after a reboot (old units active, old
 * containers holding GPU memory), leaving whatever a deploy started: the next deploy has to clear it, as for real.
 */
export async function reseedCluster(stateDir: string = defaultStateDir()): Promise<void> {
  const cluster = requireCluster(resolve(stateDir));
  await seedEveryHost(cluster);
  if (otherSshUser(cluster)) handHostsToSshUser(cluster, await ensureSshUser(cluster.sshUser));
}
