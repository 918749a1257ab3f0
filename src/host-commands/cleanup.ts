// The remote commands of steps 2–4 (stop old services, remove old containers, verify the GPUs are clear),
// shared by the activities that run them and by `liftoff plan`, which shows them.
import { raw, sh, type RawShell, type RemoteCommand } from '../ssh/quote.js';
import { sectionedReads, stderrAfter, type SectionedCommand } from './sections.js';

export const userIdCommand = (): RemoteCommand => sh`id -u`;

/** Root runs systemctl itself; anyone else through `sudo -n`, which fails at once instead of prompting. */
export const privilegePrefix = (uid: string): RawShell => (uid.trim() === '0' ? raw('') : raw('sudo -n '));

export const unitStatesCommand = (units: readonly string[]): RemoteCommand =>
  sh`systemctl show --property=Id,LoadState,ActiveState,UnitFileState -- ${units}`;

export const stopUnitsCommand = (privileged: RawShell, units: readonly string[]): RemoteCommand =>
  sh`${privileged}systemctl stop -- ${units}`;

export const disableUnitsCommand = (privileged: RawShell, units: readonly string[]): RemoteCommand =>
  sh`${privileged}systemctl disable -- ${units}`;

export const clusterLabel = 'liftoff.cluster';
const namesFormat = '{{.Names}}';

/** Names of every container (running or not), optionally only those a `docker ps --filter` selects. */
export const containerNamesCommand = (filter?: string): RemoteCommand =>
  filter === undefined
    ? sh`docker ps -a --format ${namesFormat}`
    : sh`docker ps -a --filter ${filter} --format ${namesFormat}`;

export const clusterFilter = (cluster: string): string => `label=${clusterLabel}=${cluster}`;

/** The two lists removeContainers starts from: every container, then those labelled for the cluster. */
export const containerListsCommands = (cluster: string): [RemoteCommand, RemoteCommand] => [
  containerNamesCommand(),
  containerNamesCommand(clusterFilter(cluster)),
];

/** Whose container lists a handoff holds (activities/step-handoff.ts). */
export const containerListsKey = (host: string, cluster: string): unknown[] => [host, cluster];

export const removeContainersCommand = (names: readonly string[]): RemoteCommand =>
  sh`docker rm -f -- ${names}`;

export const gpuFields = ['index', 'name', 'memory.used', 'memory.total'] as const;

export const gpuDevicesCommand = (): RemoteCommand =>
  sh`nvidia-smi --query-gpu=${gpuFields.join(',')} --format=csv,noheader,nounits`;

export const gpuAppsCommand = (): RemoteCommand =>
  sh`nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits`;

export const meminfoCommand = (): RemoteCommand => sh`head -c 65536 /proc/meminfo`;

/** nvidia-smi's two tables and /proc/meminfo: what prints more than this is not a real tool's output. */
const maxGpuReadBytes = 1024 * 1024;

/** Step 4's reads (and `liftoff probe`'s) in one remote command: each its own section (sections.ts). */
export function gpuStateCommand(): SectionedCommand {
  // stdout is what the parsers read; stderr comes after it, for the message of a read that failed.
  return sectionedReads([
    { name: 'gpus', command: stderrAfter(gpuDevicesCommand()), maxBytes: maxGpuReadBytes },
    { name: 'apps', command: stderrAfter(gpuAppsCommand()), maxBytes: maxGpuReadBytes },
    { name: 'meminfo', command: stderrAfter(meminfoCommand()), maxBytes: 65536 + 4096 },
  ]);
}
