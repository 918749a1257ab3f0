// The agreement checks' remote commands (issue: the hosts must agree), shared by the activity that runs them and
// by `liftoff plan`, which lists them. One read per host, every section bounded on the host; the versions inside
// the image cost a container start (no network, never a pull).
import { raw, sh, type RemoteCommand } from '../ssh/quote.js';
import { weightListLimit } from '../parsers/agreement-facts.js';
import type { BatchEntry } from './sections.js';

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

/** `nonce` marks the sections, so that no host output can forge a section header. */
export function hostReadCommand(input: HostReadInput, nonce: string): RemoteCommand {
  const mark = (name: string): RemoteCommand => sh`printf '\\n%s\\n' ${`@@${nonce} ${name}`}`;
  const inModel = (body: RemoteCommand): RemoteCommand =>
    sh`(cd -- ${input.modelPath} 2>/dev/null || { echo unreadable; exit 0; }; ${body})`;
  const parts: RemoteCommand[] = [
    sh`${mark('clock')}; date +%s%N`,
    sh`${mark('image')}; docker image inspect --format ${'{{.Id}}'} -- ${input.image} 2>&1 | head -c 400`,
    sh`${mark('addr')}; ${withSbin}ip -o -4 addr show 2>&1 | head -n 500`,
    sh`${mark('link')}; ${withSbin}ip -o link show 2>&1 | head -n 500`,
    sh`${mark('weights')}; ${inModel(sh`find -L . -maxdepth 8 ${pruned} ! -type d -printf ${'%y %s %p\\n'} 2>/dev/null | head -n ${weightListLimit + 1}`)}`,
    // The shard names of each index, not the index itself: a big model's index is megabytes of tensor names.
    sh`${mark('index')}; ${inModel(
      sh`find -L . -maxdepth 8 -name model.safetensors.index.json -type f 2>/dev/null | head -n 20 | while IFS= read -r f; do printf 'file %s\\n' "$f"; grep -oE ${'"total_size"[[:space:]]*:[[:space:]]*[0-9]+'} "$f" | head -n 1; grep -oE ${'"[^"/\\\\]+\\.safetensors"'} "$f" | sort -u | head -n 5000; done`,
    )}`,
    // Each loginctl's own exit, not head's: a logind that does not answer means none removes IPC objects.
    sh`${mark('ipc')}; printf 'uid=%s\\nuser=%s\\n' "$(id -u)" "$(id -un)"; s=$(loginctl show-session -p RemoveIPC 2>/dev/null); echo "session-exit=$?"; printf '%s\\n' "$s" | head -n 5; u=$(loginctl show-user "$(id -un)" -p UID -p Name -p Linger 2>/dev/null); echo "user-exit=$?"; printf '%s\\n' "$u" | head -n 5`,
  ];
  if (input.hashWeights) {
    parts.push(
      sh`${mark('hash')}; ${inModel(sh`find -L . -maxdepth 8 ${pruned} -type f -print0 2>/dev/null | head -z -n ${weightListLimit} | xargs -0 -r sha256sum 2>/dev/null`)}`,
    );
  }
  if (input.rayHead) {
    const connect = 'exec 3<>"/dev/tcp/$0/$1"';
    parts.push(
      sh`${mark('ray')}; out=$(timeout 3 bash -c ${connect} ${input.rayHead.ip} ${input.rayHead.port} 2>&1); echo "exit $?"; printf '%s\\n' "$out" | head -c 300`,
    );
  }
  return parts.reduce((all, part) => sh`${all}; ${part}`);
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

/** The most the host read prints: a listing of weightListLimit files, their hashes, and the small sections. */
export const hostReadMaxBytes = 8 * 1024 * 1024;

/**
 * The agreement's one round trip on a host: its facts, and on the head the versions inside the image too (the
 * other hosts read those only when their image ID differs from the head's). Shared by the activity and the plan.
 */
export function hostReadBatch(input: HostReadInput, nonce: string, withVersions: boolean): BatchEntry[] {
  return [
    { command: hostReadCommand(input, nonce), maxBytes: hostReadMaxBytes },
    ...(withVersions ? [imageVersionsCommand(input.image)] : []),
  ];
}

/** What identifies a host's facts when one activity hands them to the next (activities/step-handoff.ts). */
export const factsKey = (read: HostReadInput): unknown[] => [
  read.host,
  read.image,
  read.modelPath,
  read.hashWeights,
  read.rayHead?.ip ?? null,
  read.rayHead?.port ?? null,
];
