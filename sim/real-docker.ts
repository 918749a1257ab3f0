// The real-Docker mode of the simulated hosts (cluster option docker: 'real'): each host runs its own Docker Engine
// (Debian's docker.io) inside its network namespace, and `docker` on its PATH is the real CLI talking to it
// (DOCKER_HOST in every session). The daemon gets a mount namespace of its own with the host's /home and /root bound
// in, as its sshd has, so a spec's volume sources are the files an SSH session sees; /sys stays the machine's, where
// `ip netns exec` would remount it and hide the cgroup mounts runc needs. Its hostname is the host's, so a
// `--network host` container takes it; its IPC namespace and /dev/shm are the host's own, so an `--ipc host`
// container shares memory with the host's other containers only, as on separate machines (the host's SSH sessions
// still see the machine's /dev/shm: nothing liftoff runs over SSH reads it).
// Containers run the image scripts/setup-docker.sh builds: its ray, vllm and gpu-hog commands run the simulated
// tools from the mounts simContainerVolumes lists (node, the tool bundle, the hosts' state), or in a real-tools
// cluster the real Ray and vLLM from the mounts sim/real-tools.ts lists. GPUs: dockerd offers
// `--gpus` only with an executable `nvidia-container-runtime-hook` on its PATH when it starts; a no-op one stands in
// for the NVIDIA container toolkit, and a host listed in noGpuRuntime starts without it, as a host lacking the
// toolkit does.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SimCluster, SimHost } from './cluster-state.js';
import { allPids, isRunning, killAndWait, run, sleep, withDescendants } from './processes.js';
import { dockerGroup } from './ssh-user.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const dockerdBinary = '/usr/sbin/dockerd';
export const dockerCli = '/usr/bin/docker';
/** The clone's link to the image tarball scripts/setup-docker.sh built in the cache. */
export const realDockerImageLink = join(repoRoot, '.docker-image.tar');

/** Why real Docker cannot run here, or undefined when it can. */
export function realDockerMissing(): string | undefined {
  const setup =
    "run `bash scripts/setup.sh` (scripts/setup-docker.sh installs Debian's docker.io and builds the image)";
  if (process.getuid?.() !== 0) return 'real Docker needs root (dockerd, network namespaces)';
  for (const need of [dockerdBinary, dockerCli, realDockerImageLink])
    if (!existsSync(need)) return `${need} is missing: ${setup}`;
  return undefined;
}

/** The image tarball in the cache (the link's target), and the name it loads as (liftoff-sim/host:<key>). */
function imageInCache(): { tarball: string; name: string } {
  const tarball = realpathSync(realDockerImageLink);
  const key = /^docker-image-([0-9a-f]{16})\.tar$/.exec(basename(tarball))?.[1];
  if (!key)
    throw new Error(`${realDockerImageLink} points at ${tarball}, not an image of scripts/setup-docker.sh`);
  return { tarball, name: `liftoff-sim/host:${key}` };
}

/**
 * Where a host's daemon keeps what. Its data root is in the cache beside the image, one per network namespace name
 * (two clusters never share one: namespace names are unique on the machine), and outlives the cluster: the image is
 * unpacked once, not at every bring-up, and nothing unpacked is deleted at every teardown (thousands of files
 * that took half a minute to remove). Its exec root, socket and pid file are under /run, with a short path (a unix
 * socket path holds 107 bytes, and containerd's sits in the exec root).
 */
export function hostDataRoot(host: SimHost): string {
  return join(dirname(realpathSync(realDockerImageLink)), 'docker-data', host.netns ?? host.name);
}

export function hostDockerPaths(host: SimHost) {
  const runDir = join('/run/liftoff-docker', host.netns ?? host.name);
  return {
    log: join(host.hostDir, 'docker', 'dockerd.log'),
    runDir,
    execRoot: join(runDir, 'x'),
    socket: join(runDir, 'd.sock'),
    pidFile: join(runDir, 'd.pid'),
  };
}

/** The DOCKER_HOST of a host's sessions. */
export const hostDockerHost = (host: SimHost): string => `unix://${hostDockerPaths(host).socket}`;

const gpuRuntimeDir = (stateDir: string): string => join(stateDir, 'docker', 'gpu-runtime');
const containerEnvDir = (stateDir: string): string => join(stateDir, 'docker', 'container-env');

/**
 * Writes what every host's daemon and containers share: the no-op GPU runtime hook, the file the image's tool
 * commands read (/etc/liftoff-sim/env in a container), and a `docker` in binDir that runs the real CLI.
 */
export function writeRealDockerFiles(stateDir: string, binDir: string, hostsDir: string): void {
  mkdirSync(gpuRuntimeDir(stateDir), { recursive: true });
  const hook = join(gpuRuntimeDir(stateDir), 'nvidia-container-runtime-hook');
  writeFileSync(
    hook,
    '#!/bin/sh\n# Stands in for the NVIDIA container toolkit: there is no GPU to hand over.\nexit 0\n',
  );
  chmodSync(hook, 0o755);
  mkdirSync(containerEnvDir(stateDir), { recursive: true });
  const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  writeFileSync(
    join(containerEnvDir(stateDir), 'env'),
    `LIFTOFF_SIM_STATE_DIR=${q(dirname(hostsDir))}\nLIFTOFF_SIM_NODE=${q(process.execPath)}\n`,
  );
  const docker = join(binDir, 'docker');
  rmSync(docker, { force: true });
  writeFileSync(docker, `#!/bin/sh\nexec ${dockerCli} "$@"\n`);
  chmodSync(docker, 0o755);
}

/**
 * The bind mounts a container on a real-Docker host needs to run the simulated tools: the hosts' state folders at
 * their own paths (the tools write GPU, Ray and vLLM state there, which the host's nvidia-smi reads), the tool
 * bundle and node read-only, and the env file the image's commands read. The simulated cluster's deploy spec adds
 * them to the Ray container's volumes; nothing else of a spec changes.
 */
export function simContainerVolumes(cluster: SimCluster): string[] {
  const { stateDir } = cluster;
  return [
    `${join(stateDir, 'hosts')}:${join(stateDir, 'hosts')}`,
    `${join(stateDir, 'bin')}:${join(stateDir, 'bin')}:ro`,
    `${containerEnvDir(stateDir)}:/etc/liftoff-sim:ro`,
    `${process.execPath}:${process.execPath}:ro`,
  ];
}

/** `docker` against one host's daemon, from the control side. */
export function hostDocker(host: SimHost, args: string[], timeoutMs = 60_000): ReturnType<typeof run> {
  return run(dockerCli, args, {
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DOCKER_HOST: hostDockerHost(host), HOME: '/nonexistent' },
    cwd: '/',
    timeoutMs,
  });
}

/**
 * The host pids of a running container's processes, its main process first (those `docker exec` started too): every
 * process in the PID namespace of the main one, which `docker inspect` names. [] when the container is not running.
 */
export async function containerProcesses(host: SimHost, container: string): Promise<number[]> {
  const res = await hostDocker(host, [
    'inspect',
    '--type',
    'container',
    '--format',
    '{{.State.Pid}}',
    container,
  ]);
  const main = Number(res.stdout.trim());
  if (res.code !== 0 || !Number.isInteger(main) || main <= 0) return [];
  const pidNamespace = (pid: number): string | undefined => {
    try {
      return readlinkSync(`/proc/${pid}/ns/pid`);
    } catch {
      return undefined;
    }
  };
  const ns = pidNamespace(main);
  if (ns === undefined) return [];
  return [main, ...allPids().filter((pid) => pid !== main && pidNamespace(pid) === ns)];
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the host's daemon and waits until it answers. */
export async function startHostDocker(
  cluster: SimCluster,
  host: SimHost,
  opts: { gpuRuntime: boolean },
): Promise<void> {
  if (!host.netns) throw new Error('real Docker needs netns mode');
  const p = hostDockerPaths(host);
  rmSync(p.runDir, { recursive: true, force: true });
  mkdirSync(p.runDir, { recursive: true });
  const dataRoot = hostDataRoot(host);
  mkdirSync(dataRoot, { recursive: true });
  mkdirSync(dirname(p.log), { recursive: true });
  const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const path = [
    ...(opts.gpuRuntime ? [gpuRuntimeDir(cluster.stateDir)] : []),
    '/usr/sbin:/usr/bin:/sbin:/bin',
  ];
  const dockerd = [
    dockerdBinary,
    '--data-root',
    dataRoot,
    '--exec-root',
    p.execRoot,
    '--host',
    `unix://${p.socket}`,
    '--pidfile',
    p.pidFile,
    // Members of the docker group may use the socket (a non-root SSH user: SimClusterOptions.sshUser).
    '--group',
    dockerGroup,
    '--bridge=none',
    '--iptables=false',
    '--ip-masq=false',
    '--ip6tables=false',
    '--userland-proxy=false',
    '--storage-driver',
    'overlay2',
    '--containerd-namespace',
    host.netns,
    '--containerd-plugins-namespace',
    `${host.netns}-plugins`,
    // A `docker rm -f` or the daemon's own stop waits this long for a container's SIGTERM.
    '--shutdown-timeout',
    '3',
  ];
  // The deploy's containers run with --ipc host: they share the host's IPC namespace and /dev/shm, which on one
  // machine would be every simulated host's. Separate machines share no memory: a /dev/shm and IPC namespace of the
  // daemon's own. (Shared, vLLM's ranks on two hosts opened each other's segments, took themselves for one node and
  // waited on each other's /tmp sockets.)
  const script = [
    `hostname ${q(host.name)}`,
    `mount --bind ${q(join(host.hostDir, 'home'))} /home`,
    `mount --bind ${q(join(host.hostDir, 'roothome'))} /root`,
    'mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm',
    `exec env -i PATH=${q(path.join(':'))} ${dockerd.map(q).join(' ')}`,
  ].join(' && ');
  const out = openSync(p.log, 'a');
  try {
    const child = spawn(
      'nsenter',
      [
        `--net=/var/run/netns/${host.netns}`,
        'unshare',
        '--mount',
        '--uts',
        '--ipc',
        '--propagation',
        'private',
        'sh',
        '-c',
        script,
      ],
      {
        detached: true,
        stdio: ['ignore', out, out],
        cwd: '/',
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      },
    );
    child.unref();
  } finally {
    closeSync(out);
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await hostDocker(host, ['version', '--format', '{{.Server.Version}}'], 5_000);
    if (res.code === 0) return;
    if (Date.now() > deadline) {
      const log = existsSync(p.log) ? readFileSync(p.log, 'utf8').slice(-2000) : '';
      throw new Error(`dockerd of ${host.name} did not answer in 30 s: ${res.stderr.trim()}\n${log}`);
    }
    await sleep(200);
  }
}

async function dockerOk(host: SimHost, args: string[]): Promise<string> {
  const res = await hostDocker(host, args, 120_000);
  if (res.code !== 0) throw new Error(`docker ${args.join(' ')} on ${host.name}: ${res.stderr.trim()}`);
  return res.stdout;
}

/** Removes every container of the host's daemon, running or not. */
async function removeAllContainers(host: SimHost): Promise<void> {
  const ids = (await dockerOk(host, ['ps', '-aq'])).split('\n').filter((id) => id.length > 0);
  if (ids.length > 0) await dockerOk(host, ['rm', '-f', ...ids]);
}

/**
 * Makes the host's daemon as a fresh one with the test image: no container (a data root in the cache may hold
 * those of a run that crashed), the image loaded unless the data root has it (older versions of it removed), and
 * tagged with every name the cluster's specs use. One tarball made once, so every daemon reports the same image
 * ID (the digest of its config).
 */
export async function prepareHostDocker(host: SimHost, tags: string[]): Promise<void> {
  const image = imageInCache();
  await removeAllContainers(host);
  const loaded = (await hostDocker(host, ['image', 'inspect', '--format', '{{.Id}}', image.name])).code === 0;
  if (!loaded) {
    const old = (await dockerOk(host, ['images', '--format', '{{.Repository}}:{{.Tag}}', 'liftoff-sim/host']))
      .split('\n')
      .filter((name) => name.length > 0);
    for (const name of old) await dockerOk(host, ['rmi', '--force', name]);
    await dockerOk(host, ['load', '--quiet', '--input', image.tarball]);
  }
  for (const tag of tags) await dockerOk(host, ['tag', image.name, tag]);
  // An older image lost its last tag to the new one: nothing uses it any more.
  if (!loaded) await dockerOk(host, ['image', 'prune', '--force']);
}

/**
 * Removes the host daemon's containers and stops it, and removes its run folder. Whatever it leaves running the
 * cluster's teardown kills; its mounts live in its own mount namespace and go with it. `keepContainers`: stop it as
 * `systemctl stop docker` does, for a test of a stopped daemon: its containers stop with it and stay in its data
 * root, which the next bring-up clears (prepareHostDocker).
 */
export async function stopHostDocker(host: SimHost, opts: { keepContainers?: boolean } = {}): Promise<void> {
  const p = hostDockerPaths(host);
  const pid = readPid(p.pidFile);
  if (pid !== undefined && isRunning(pid)) {
    // The data root outlives the cluster: its containers must not.
    if (!opts.keepContainers) await removeAllContainers(host).catch(() => undefined);
    const family = withDescendants([pid]);
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone meanwhile
    }
    const deadline = Date.now() + 15_000;
    while (isRunning(pid) && Date.now() < deadline) await sleep(100);
    await killAndWait([...family].filter(isRunning));
  }
  rmSync(p.runDir, { recursive: true, force: true });
}
