// The agreement checks' remote commands (issue: the hosts must agree), one per fact, shared by the step that runs
// them (src/steps/agreement-read.ts) and `liftoff plan`, which lists them. Each is bounded on the host (head -n,
// head -c) besides the runner's byte bound; the versions inside the image cost a container start (no network,
// never a pull).
import { raw, sh, type RemoteCommand } from '../ssh/quote.js';
import { driverReadBytes, weightListLimit } from '../parsers/agreement-facts.js';

export interface HostReadInput {
  host: string;
  image: string;
  modelPath: string;
  hashWeights: boolean;
  /** Workers only: the head's clusterIp and Ray port, probed with a TCP connect from this host. */
  rayHead?: { ip: string; port: number };
}

// `ip` lives in /usr/sbin or /sbin, which a non-root login's PATH may lack.
const withSbin = raw('PATH="$PATH:/usr/sbin:/sbin" ');
// HF's download bookkeeping differs from host to host without the weights differing.
const pruned = raw(String.raw`\( -name .no_exist -o -name .cache -o -name '*.lock' \) -prune -o`);

/** `body` run inside the model folder; `unreadable` when the folder cannot be entered. */
const inModel = (modelPath: string, body: RemoteCommand): RemoteCommand =>
  sh`cd -- ${modelPath} 2>/dev/null || { echo unreadable; exit 0; }; ${body}`;

/** The id the host gives itself (systemd's, or dbus's copy): how a cluster knows a host whatever address names it. */
export const machineIdCommand = (): RemoteCommand =>
  sh`{ cat /etc/machine-id 2>/dev/null || cat /var/lib/dbus/machine-id 2>/dev/null; } | head -c 64`;

/** The host's clock in ns; read first in its trip, since the offset is measured from when the trip started. */
export const clockCommand = (): RemoteCommand => sh`date +%s%N`;

export const linksCommand = (): RemoteCommand => sh`${withSbin}ip -o link show | head -n 500`;

/** Every file below the model folder with its type and size: `f 64 ./path`, `l` for a broken link. */
export const weightListCommand = (modelPath: string): RemoteCommand =>
  inModel(
    modelPath,
    sh`find -L . -maxdepth 8 ${pruned} ! -type d -printf ${'%y %s %p\\n'} 2>/dev/null | head -n ${weightListLimit + 1}`,
  );

// The index files below the model folder, in find's order: the index-sha256 read's "first one" is the first
// weight-indexes lists.
const indexFiles = sh`find -L . -maxdepth 8 -name model.safetensors.index.json -type f 2>/dev/null`;

/** The shard names of each index, not the index itself: a big model's index is megabytes of tensor names. */
export const weightIndexesCommand = (modelPath: string): RemoteCommand =>
  inModel(
    modelPath,
    sh`${indexFiles} | head -n 20 | while IFS= read -r f; do printf 'file %s\\n' "$f"; grep -oE ${'"total_size"[[:space:]]*:[[:space:]]*[0-9]+'} "$f" | head -n 1; grep -oE ${'"[^"/\\\\]+\\.safetensors"'} "$f" | sort -u | head -n 5000; done`,
  );

/**
 * sha256 of the first safetensors index: `<64 hex>  ./snapshots/<hash>/model.safetensors.index.json`. The index
 * names every tensor's shard, so its hash says which weights these are without reading them (hashWeights does).
 */
export const indexSha256Command = (modelPath: string): RemoteCommand =>
  inModel(
    modelPath,
    sh`${indexFiles} | head -n 1 | while IFS= read -r f; do sha256sum -- "$f" 2>/dev/null; done | head -c 1100`,
  );

/** The running kernel's release, which a rollback must find again (a kernel update changes it under the spec). */
export const kernelCommand = (): RemoteCommand => sh`uname -r 2>/dev/null | head -c 200`;

/**
 * The GPU driver's version, a line per GPU (the first counts: every GPU of a host runs the one driver), then
 * `failed` when nvidia-smi exits non-zero: head's exit would hide nvidia-smi's.
 */
export const gpuDriverCommand = (): RemoteCommand =>
  sh`{ nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null || echo failed; } | head -c ${driverReadBytes}`;

/** preflight.hashWeights: sha256 of every file, which reads every byte of the weights. */
export const weightHashesCommand = (modelPath: string): RemoteCommand =>
  inModel(
    modelPath,
    sh`find -L . -maxdepth 8 ${pruned} -type f -print0 2>/dev/null | head -z -n ${weightListLimit} | xargs -0 -r sha256sum 2>/dev/null`,
  );

/** Each loginctl's own exit, not head's: a logind that does not answer means none removes IPC objects. */
export const ipcCommand = (): RemoteCommand =>
  sh`printf 'uid=%s\\nuser=%s\\n' "$(id -u)" "$(id -un)"; s=$(loginctl show-session -p RemoveIPC 2>/dev/null); echo "session-exit=$?"; printf '%s\\n' "$s" | head -n 5; u=$(loginctl show-user "$(id -un)" -p UID -p Name -p Linger 2>/dev/null); echo "user-exit=$?"; printf '%s\\n' "$u" | head -n 5`;

/** A TCP connect from this host to the head's Ray port: `exit N`, then what bash said. */
export function rayPortProbeCommand(head: { ip: string; port: number }): RemoteCommand {
  const connect = 'exec 3<>"/dev/tcp/$0/$1"';
  return sh`out=$(timeout 3 bash -c ${connect} ${head.ip} ${head.port} 2>&1); echo "exit $?"; printf '%s\\n' "$out" | head -c 300`;
}

const versionsScript = [
  'import sys, importlib.metadata as m',
  'print("python", sys.version.split()[0])',
  'for p in ("ray", "vllm"):',
  '    try: print(p, m.version(p))',
  '    except Exception: print(p, "-")',
].join('\n');

/** Python, Ray and vLLM inside the image, from the package metadata (nothing is imported). */
export const imageVersionsCommand = (image: string): RemoteCommand =>
  sh`docker run --rm --network none --pull never --entrypoint python3 ${image} -c ${versionsScript} 2>&1 | head -c 2000`;
