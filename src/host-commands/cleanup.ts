// The remote commands of steps 2–4 (stop old services, remove old containers, verify the GPUs are clear), which
// their step modules (src/steps/) declare for the activities that run them and for `liftoff plan`.
import { raw, sh, type RawShell, type RemoteCommand } from '../ssh/quote.js';

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

export const removeContainersCommand = (names: readonly string[]): RemoteCommand =>
  sh`docker rm -f -- ${names}`;

export const gpuFields = ['index', 'name', 'memory.used', 'memory.total'] as const;

export const gpuDevicesCommand = (): RemoteCommand =>
  sh`nvidia-smi --query-gpu=${gpuFields.join(',')} --format=csv,noheader,nounits`;

export const gpuAppsCommand = (): RemoteCommand =>
  sh`nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits`;

export const meminfoCommand = (): RemoteCommand => sh`head -c 65536 /proc/meminfo`;
