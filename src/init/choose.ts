// `liftoff init`'s choices from what the hosts showed: each host's cluster interface and IP, the image, the
// model and its cache, the GPUs per host, and what to clean up. Pure. Every choice keeps the alternatives and
// why it won, so the written spec can say so where a person would otherwise have to guess.
import { isServingContainer, isVllmUnit } from '../host-commands/init.js';
import { sameSubnet, type Ipv4Address } from '../parsers/ip-addr.js';
import type { HostFacts } from './probe.js';
import { proposeCompanions, type CompanionChoices, type HostMemory } from './companions.js';

export interface Choice<T> {
  value: T;
  reason: string;
  /** What was not picked, each with why. */
  alternatives: string[];
}

export interface HostChoice {
  name: string;
  address: string;
  role: 'head' | 'worker';
  jumpHost?: string;
  cluster: Choice<{ iface: string; ip: string }> | undefined;
}

export interface InitChoices {
  hosts: HostChoice[];
  /** NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME: one name for the whole cluster. */
  iface: string | undefined;
  image: Choice<string>;
  model: Choice<{ id: string; cacheDir: string }> | undefined;
  gpusPerHost: number;
  services: CleanupSuggestion[];
  containers: CleanupSuggestion[];
  /** Running containers not suggested for cleanup (no sign of an inference server). */
  otherContainers: string[];
  /** The vLLM services found beside the main model, offered as companions (and still stopped by cleanup). */
  companions: CompanionChoices;
  warnings: string[];
}

/** A unit or container suggested for cleanup, with the hosts that reported it (in the order of the hosts). */
export interface CleanupSuggestion {
  name: string;
  hosts: string[];
}

export const rayContainerName = 'liftoff_ray';

// Interfaces that are never an interconnect: loopback and the bridges and veths of container runtimes and VPNs.
const notInterconnect = /^(lo|docker\d*|br-.*|veth.*|virbr\d*|cni\d*|flannel.*|cali.*|tailscale\d*|wg\d*)$/;

function candidates(h: HostFacts): Ipv4Address[] {
  return h.addresses.filter((a) => !notInterconnect.test(a.iface) && !a.address.startsWith('127.'));
}

function pickInterface(h: HostFacts, others: HostFacts[]): HostChoice['cluster'] {
  const scored = candidates(h).map((a) => {
    const rdma = h.rdma.some((r) => r.iface === a.iface && r.up);
    const shared = others.every((o) => candidates(o).some((b) => sameSubnet(a.address, b.address, a.prefix)));
    const notSsh = a.address !== h.address;
    return { a, rdma, shared, notSsh, score: (rdma ? 4 : 0) + (shared ? 2 : 0) + (notSsh ? 1 : 0) };
  });
  if (scored.length === 0) return undefined;
  const best = scored.reduce((x, y) => (y.score > x.score ? y : x));
  const says = (s: (typeof scored)[number]): string[] => [
    s.rdma
      ? `RDMA (${h.rdma.find((r) => r.iface === s.a.iface)?.device ?? '?'}, ibdev2netdev)`
      : 'no RDMA device',
    others.length === 0
      ? 'single host'
      : s.shared
        ? 'on a network every other host shares'
        : 'on no network the other hosts share',
    s.notSsh ? 'not the SSH address' : 'the address SSH uses',
  ];
  return {
    value: { iface: best.a.iface, ip: best.a.address },
    reason: `${best.a.iface} ${best.a.address}/${best.a.prefix}: ${says(best).join(', ')}`,
    alternatives: scored
      .filter((s) => s !== best)
      .map((s) => `${s.a.iface} ${s.a.address}/${s.a.prefix}: ${says(s).join(', ')}`),
  };
}

function pickImage(hosts: HostFacts[], warnings: string[]): Choice<string> {
  const [head, ...rest] = hosts;
  const common = (head?.images ?? [])
    .map((i) => i.ref)
    .filter((ref) => rest.every((h) => h.images.some((i) => i.ref === ref)));
  for (const ref of common) {
    const ids = hosts.map((h) => `${h.name} ${h.images.find((i) => i.ref === ref)?.id ?? '?'}`);
    if (new Set(ids.map((x) => x.split(' ')[1])).size > 1) {
      warnings.push(`the hosts hold different images under ${ref}: ${ids.join(', ')}`);
    }
  }
  if (common.length === 0) {
    const fallback = head?.images[0]?.ref ?? 'vllm/vllm-openai:latest';
    warnings.push(
      `no image is on every host (${hosts.map((h) => `${h.name}: ${h.images.map((i) => i.ref).join(', ') || 'none'}`).join('; ')}): pull ${fallback} on each, or change ray.image`,
    );
    return { value: fallback, reason: `${fallback}: no image is on every host`, alternatives: [] };
  }
  // A container names its image as it was run: `vllm/vllm-openai` for `vllm/vllm-openai:latest`.
  const refOf = (image: string) => common.find((r) => r === image || r === `${image}:latest`);
  const running = head?.containers.find((c) => refOf(c.image) !== undefined);
  const runningRef = running && refOf(running.image);
  const pinned = common.find((r) => !r.endsWith(':latest'));
  const value = runningRef ?? pinned ?? common[0] ?? '';
  const why =
    common.length === 1
      ? 'the only image on every host'
      : runningRef
        ? `on every host, and the image the running container ${running?.name ?? '?'} on ${head?.name ?? '?'} uses`
        : pinned
          ? 'on every host, with a pinned tag (a moving :latest can change between hosts)'
          : 'the first image on every host';
  const reason = `${value}: ${why}`;
  return {
    value,
    reason,
    alternatives: common.filter((r) => r !== value).map((r) => `${r}: also on every host`),
  };
}

function pickModel(hosts: HostFacts[], warnings: string[]): InitChoices['model'] {
  const [head, ...rest] = hosts;
  const ids = [...new Set((head?.models ?? []).map((m) => m.id))]
    .filter((id) => rest.every((h) => h.models.some((m) => m.id === id)))
    .sort();
  const first = ids[0];
  if (first === undefined) {
    warnings.push(
      'no model is in the Hugging Face cache of every host: download one on each (huggingface-cli download ORG/NAME), then set serve.model and ray.volumes',
    );
    return undefined;
  }
  const cacheDir = head?.models.find((m) => m.id === first)?.cacheDir ?? '';
  const elsewhere = rest.filter((h) => !h.models.some((m) => m.id === first && m.cacheDir === cacheDir));
  if (elsewhere.length > 0) {
    warnings.push(
      `${first} is cached under another folder on ${elsewhere.map((h) => h.name).join(', ')} than on ${head?.name ?? '?'} (${cacheDir}); ray.volumes is one value for every host`,
    );
  }
  return {
    value: { id: first, cacheDir },
    reason: `${first}: ${ids.length === 1 ? "the only model in every host's cache" : `the first of ${ids.length} models in every host's cache (alphabetical)`}`,
    alternatives: ids.slice(1).map((id) => `${id}: also in every host's cache`),
  };
}

/** What --gpu-memory-utilization is a share of: one GPU's memory, or MemTotal on unified memory (GB10). */
function memoryOf(h: HostFacts): HostMemory {
  const sizes = h.gpus.map((g) => g.memoryTotalMiB);
  if (sizes.length > 0 && sizes.every((m): m is number => m !== null))
    return { host: h.name, mib: Math.min(...sizes), what: `${h.name}'s GPU memory` };
  return h.memTotalMiB !== null
    ? { host: h.name, mib: h.memTotalMiB, what: `${h.name}'s MemTotal, unified memory` }
    : { host: h.name, mib: null, what: 'unknown' };
}

/** Where a host sits in the spec: the first is the head, every other reached through `jump` if given. */
export function placement(i: number, name: string, jump: string | undefined) {
  return {
    role: i === 0 ? ('head' as const) : ('worker' as const),
    ...(jump !== undefined && name !== jump ? { jumpHost: jump } : {}),
  };
}

/** Each name `pick` finds on any host, once, with every host that reported it. */
function suggest(hosts: HostFacts[], pick: (h: HostFacts) => string[]): CleanupSuggestion[] {
  const byName = new Map<string, string[]>();
  for (const h of hosts) {
    for (const name of new Set(pick(h))) byName.set(name, [...(byName.get(name) ?? []), h.name]);
  }
  return [...byName].map(([name, on]) => ({ name, hosts: on }));
}

export function chooseSpec(hosts: HostFacts[], jump: string | undefined): InitChoices {
  const warnings: string[] = [];
  const hostChoices = hosts.map((h, i): HostChoice => {
    const cluster = pickInterface(
      h,
      hosts.filter((o) => o !== h),
    );
    if (!cluster)
      warnings.push(
        `${h.name} has no IPv4 address outside loopback and container bridges: set its clusterIp`,
      );
    return { name: h.name, address: h.address, ...placement(i, h.name, jump), cluster };
  });
  const names = [...new Set(hostChoices.flatMap((h) => (h.cluster ? [h.cluster.value.iface] : [])))];
  if (names.length > 1) {
    warnings.push(
      `the chosen interfaces have different names (${hostChoices.map((h) => `${h.name}: ${h.cluster?.value.iface ?? '-'}`).join(', ')}); NCCL_SOCKET_IFNAME is one name for the cluster, so preflight will refuse until they match`,
    );
  }
  const counts = hosts.map((h) => h.gpus.length);
  for (const h of hosts) if (h.gpus.length === 0) warnings.push(`${h.name}: nvidia-smi lists no GPU`);
  const running = hosts.flatMap((h) => h.containers);
  const containers = suggest(hosts, (h) =>
    h.containers.filter((c) => isServingContainer(c) && c.name !== rayContainerName).map((c) => c.name),
  );
  const suggested = new Set(containers.map((c) => c.name));
  const model = pickModel(hosts, warnings);
  const companions = proposeCompanions(
    hosts.flatMap((h) => h.commandLines.map((c) => ({ ...c, host: h.name }))),
    {
      mainModel: model?.value.id,
      hosts: hostChoices,
      memory: hosts.map(memoryOf),
      rayContainer: rayContainerName,
    },
  );
  for (const p of companions.proposals) {
    if (p.memory.placeholder)
      warnings.push(`companion ${p.companion.name}: memoryMiB is a placeholder (${p.memory.reason})`);
  }
  return {
    hosts: hostChoices,
    iface: names[0],
    image: pickImage(hosts, warnings),
    model,
    gpusPerHost: Math.max(1, Math.min(...counts)),
    // The host's own filter (systemctl's pattern) is the host's word: the same test again on this side.
    services: suggest(hosts, (h) => h.units.filter(isVllmUnit)),
    containers,
    otherContainers: [...new Set(running.map((c) => c.name))].filter((n) => !suggested.has(n)),
    companions,
    warnings,
  };
}
