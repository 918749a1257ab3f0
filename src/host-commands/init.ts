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

export const vllmUnitsCommand = (): RemoteCommand =>
  sh`systemctl list-units --type=service --state=running --no-legend --plain -- ${vllmUnitPattern}`;

export const runningContainersCommand = (): RemoteCommand =>
  sh`docker ps --format ${'{{.Names}} {{.Image}}'}`;
