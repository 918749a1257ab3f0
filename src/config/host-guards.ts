// Guard rails on what a spec may do to a GPU host: the serve log liftoff truncates, the units it stops, the
// folders it mounts into a container, and how host-side paths are written. Pure (no Node builtins): the schema,
// which workflows import, and the preflight check on the host share these rules.

// Folders of the operating system: a serve log there would truncate a system file (`/etc/passwd`).
const systemDirs = [
  '/etc',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/boot',
  '/proc',
  '/sys',
  '/dev',
];

/** The system folder `path` lies in (itself included), or undefined. `path` is absolute and normalised. */
export function systemDirOf(path: string): string | undefined {
  return systemDirs.find((d) => path === d || path.startsWith(`${d}/`));
}

/**
 * Why a host-side path written with `~` is refused; undefined when it is not. Every path is quoted on the
 * host, so `~` is never expanded there: `~/vllm.log` would name a folder called `~`.
 */
export function homeRelativeProblem(path: string): string | undefined {
  if (path !== '~' && !path.startsWith('~/')) return undefined;
  return `${JSON.stringify(path)} starts with ~, which is not expanded on the hosts (liftoff quotes every path): write the absolute path, e.g. /home/USER${path.slice(1)}`;
}

/** `path` with `//` and `.` dropped; undefined when it has a `..` segment (its meaning depends on links). */
function normalised(path: string): string | undefined {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) return undefined;
  return `/${parts.join('/')}`;
}

/** Why the serve log may not be written at `path` (absolute); undefined when it may. */
export function logPathProblem(path: string): string | undefined {
  const clean = normalised(path);
  if (clean === undefined) {
    return `${JSON.stringify(path)} contains "..": name the log file without it`;
  }
  if (clean === '/' || path.endsWith('/')) {
    return `${JSON.stringify(path)} names a folder: serve.logPath is the log file itself, e.g. /var/log/vllm/serve.log`;
  }
  const system = systemDirOf(clean);
  if (system !== undefined) {
    return `${JSON.stringify(path)} lies under ${system}, a system folder: liftoff truncates serve.logPath before each launch, so it must be a file of its own, e.g. /var/log/vllm/serve.log or /home/USER/vllm-serve.log`;
  }
  return undefined;
}

// A mount of these gives the container the host: its root filesystem, or the container runtime's socket (and
// the folders that hold the sockets), through which it can start a privileged container of its own.
const runtimeSockets = ['/var/run/docker.sock', '/run/docker.sock', '/run/containerd/containerd.sock'];

/** Why the volume `HOST:CONTAINER[:mode]` needs ray.allowDangerousMounts; undefined when it does not. */
export function dangerousMountProblem(volume: string): string | undefined {
  const hostPart = volume.split(':')[0] ?? '';
  const host = normalised(hostPart);
  if (host === undefined) {
    return `${JSON.stringify(hostPart)} contains "..": name the host folder without it`;
  }
  if (host === '/') {
    return `mounts the host's root filesystem into the container, which gives the container the host. Mount only the folders it needs, or set ray.allowDangerousMounts: true if this is meant`;
  }
  const socket = runtimeSockets.find((s) => s === host || s.startsWith(`${host}/`));
  if (socket !== undefined) {
    return `mounts ${host === socket ? 'the container runtime socket' : `${host}, which holds the container runtime socket ${socket}`}: whoever has it can start a privileged container, that is, has the host. Leave it out, or set ray.allowDangerousMounts: true if this is meant`;
  }
  return undefined;
}

// Units a host needs to stay reachable over SSH and to run containers. Stopping (or disabling) one would cut
// liftoff off mid-deploy, or take the host's network or container runtime with it.
const protectedUnits = ['ssh', 'sshd', 'docker', 'containerd', 'networking', 'NetworkManager'];

/** Why `cleanup.services` may not list `unit`; undefined when it may. */
export function protectedUnitProblem(unit: string): string | undefined {
  const base = unit.replace(/\.[a-z]+$/, '').replace(/@.*$/, '');
  if (!protectedUnits.includes(base) && !base.startsWith('systemd-')) return undefined;
  return `${JSON.stringify(unit)} is a unit the host needs to stay reachable and run containers (${protectedUnits.join(', ')}, systemd-*): liftoff never stops or disables it. Remove it from cleanup.services`;
}
