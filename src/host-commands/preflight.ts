// The remote commands of preflight (step 1, read only), built in one place; each check's declaration
// (src/steps/preflight-checks.ts) names them, and the deploy and `liftoff plan` run and show that one list.
import { raw, sh, type RemoteCommand } from '../ssh/quote.js';

// `ip` lives in /usr/sbin or /sbin, which a non-root login's PATH may lack.
const withSbin = raw('PATH="$PATH:/usr/sbin:/sbin" ');

export const dockerVersionCommand = (): RemoteCommand => sh`docker version --format ${'{{.Server.Version}}'}`;

export const imageIdCommand = (image: string): RemoteCommand =>
  sh`docker image inspect --format ${'{{.Id}}'} -- ${image}`;

/**
 * Whether the host's Docker gives containers GPUs as the Ray container asks for them (`--gpus all`): a throwaway
 * container with no network that runs `true`. Only the engine knows: `--gpus` needs the NVIDIA runtime hook (or a
 * CDI device) where the daemon looks when it starts, which no file on the host shows for certain.
 */
export const gpuAccessCommand = (image: string): RemoteCommand =>
  sh`docker run --rm --gpus all --network none --pull never --entrypoint true ${image}`;

export const folderExistsCommand = (path: string): RemoteCommand => sh`test -d ${path}`;

// The HF cache keeps files four levels down (models--Org--Name/snapshots/<hash>/…), as symlinks into
// blobs/; -name matches the link itself. The depth bound keeps a scan of a big cache short.
const weightFiles = ['(', '-name', '*.safetensors', '-o', '-name', 'config.json', ')'];
export const weightFilesCommand = (modelPath: string): RemoteCommand =>
  sh`find -H ${modelPath} -maxdepth 8 ${weightFiles} -print 2>/dev/null | head -n 5000`;

/** HOST:CONTAINER[:mode]; a source that is not a path is a named docker volume, which docker creates. */
export function volumeHostPaths(volumes: readonly string[]): string[] {
  return [...new Set(volumes.map((v) => v.split(':')[0] ?? '').filter((p) => p.startsWith('/')))];
}

export const missingPathsCommand = (paths: readonly string[]): RemoteCommand =>
  sh`for p in ${paths}; do [ -e "$p" ] || printf '%s\\n' "$p"; done`;

export const ipv4AddressesCommand = (iface?: string): RemoteCommand =>
  iface === undefined ? sh`${withSbin}ip -o -4 addr show` : sh`${withSbin}ip -o -4 addr show dev ${iface}`;

// The nearest existing folder: a model path not yet created will live on its parent's filesystem.
export const freeSpaceCommand = (path: string): RemoteCommand =>
  sh`p=${path}; while [ ! -e "$p" ]; do p=$(dirname "$p"); done; df -Pk -- "$p"`;

/** Exit 2: no such folder; exit 3: the log is a symbolic link; else the folder with its links followed. */
export function logDirCommand(logDir: string, logPath: string | undefined): RemoteCommand {
  const symlinkCheck = logPath === undefined ? raw('') : sh`if [ -L ${logPath} ]; then exit 3; fi; `;
  return sh`test -d ${logDir} || exit 2; ${symlinkCheck}readlink -f -- ${logDir}`;
}

/**
 * Exit 4: the SSH user cannot create files in the log folder (the launch writes the log and its marker there);
 * exit 5: the log is there and the user cannot write it.
 */
export function logWritableCommand(logDir: string, logPath: string | undefined): RemoteCommand {
  const fileCheck =
    logPath === undefined ? raw('') : sh`; if [ -e ${logPath} ] && [ ! -w ${logPath} ]; then exit 5; fi`;
  return sh`test -w ${logDir} || exit 4${fileCheck}`;
}

/**
 * The companions' memory fit reads the host's memory as verifyGpusClear does: nvidia-smi's device table (memory.total,
 * `[N/A]` on unified memory), then /proc/meminfo (MemTotal: on unified memory, the GPU's memory).
 */
export { gpuDevicesCommand as gpuMemoryCommand, meminfoCommand } from './cleanup.js';

/** Who listens on a companion's port: the start step's own read (`ss -Hltn 'sport = :PORT'`). */
export { listenerCommand as companionListenerCommand } from './multiproc.js';

/** The names of this cluster's companions whose containers run on the host (their liftoff.companion labels). */
export const companionContainersCommand = (cluster: string): RemoteCommand =>
  sh`docker ps --filter ${`label=liftoff.cluster=${cluster}`} --filter label=liftoff.role=companion --format ${'{{.Label "liftoff.companion"}}'}`;
