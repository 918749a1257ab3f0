// The read-only commands `liftoff init` runs on each host to suggest a spec: GPUs, IPv4 interfaces, RDMA links,
// docker images, models in the Hugging Face cache, and the vLLM services and containers running now.
import { sh, type RemoteCommand } from '../ssh/quote.js';

export const initGpuFields = ['index', 'name', 'memory.total'] as const;

export const gpuListCommand = (): RemoteCommand =>
  sh`nvidia-smi --query-gpu=${initGpuFields.join(',')} --format=csv,noheader,nounits`;

/** Mellanox OFED's map of RDMA devices to net devices; nothing where the tool is not installed. */
export const rdmaLinksCommand = (): RemoteCommand =>
  sh`if command -v ibdev2netdev >/dev/null 2>&1; then ibdev2netdev; fi`;

export const imagesCommand = (): RemoteCommand =>
  sh`docker images --format ${'{{.Repository}}:{{.Tag}} {{.ID}}'}`;

/** Hugging Face caches of the login and of every home (a service user's cache is where the weights often are). */
export const hfModelsCommand = (): RemoteCommand =>
  sh`for d in "$HOME"/.cache/huggingface/hub/models--* /home/*/.cache/huggingface/hub/models--* /root/.cache/huggingface/hub/models--*; do [ -d "$d" ] && printf '%s\n' "$d"; done 2>/dev/null | sort -u | head -n 200`;

/** The units that look like vLLM's: systemctl's pattern on the host, and the same test on this side. */
const vllmUnitPattern = '*vllm*';
export const isVllmUnit = (unit: string): boolean => unit.includes('vllm');

/** A container that looks like an inference server by its name or image (suggested for cleanup, read by init). */
const servingContainer = /vllm|ray|sglang|llm|tgi|text-generation|triton|ollama/i;
export const isServingContainer = (c: { name: string; image: string }): boolean =>
  servingContainer.test(`${c.name} ${c.image}`);

export const vllmUnitsCommand = (): RemoteCommand =>
  sh`systemctl list-units --type=service --state=running --no-legend --plain -- ${vllmUnitPattern}`;

export const runningContainersCommand = (): RemoteCommand =>
  sh`docker ps --format ${'{{.Names}} {{.Image}}'}`;

/** What systemd runs for a unit: its ExecStart, `{ path=… ; argv[]=… ; … }` (init/command-line.ts reads it). */
export const unitExecStartCommand = (unit: string): RemoteCommand =>
  sh`systemctl show -p ExecStart --value ${unit}`;

/**
 * A container's command line and what a companion would carry over, one JSON value a line: its image, entrypoint,
 * command, bind mounts and GPU requests. Not `{{json .Config}}`: that holds its environment, often a token.
 */
export const containerCommandLineFormat = [
  '{{json .Config.Image}}',
  '{{json .Config.Entrypoint}}',
  '{{json .Config.Cmd}}',
  '{{json .HostConfig.Binds}}',
  '{{json .HostConfig.DeviceRequests}}',
].join('\n');

export const containerCommandLineCommand = (container: string): RemoteCommand =>
  sh`docker inspect --type container --format ${containerCommandLineFormat} ${container}`;

/** The host's memory, for a companion's budget from its --gpu-memory-utilization on unified memory (GB10). */
export const memTotalCommand = (): RemoteCommand => sh`grep -m 1 ${'^MemTotal:'} /proc/meminfo`;
