// Do the hosts agree? Pure comparisons of what each host said (src/parsers/agreement-facts.ts) against the
// spec and against each other. Every problem names the hosts and what differs, and ends with what to do.
import type { HostFacts, ImageVersions, WeightEntry } from '../parsers/agreement-facts.js';
import { carries } from '../parsers/ip-addr.js';
import { machineIdsOf } from './machine-ids.js';
import { shortImageId } from '../shared/revisions.js';
import { hostIdentityOf } from './host-identity.js';
import type { HostIdentity } from '../shared/revisions.js';
import type { HostReadInput } from '../host-commands/agreement.js';

export type AgreementCheck = 'image' | 'weights' | 'addresses' | 'versions' | 'ipc';

export interface AgreementProblem {
  check: AgreementCheck;
  hosts: string[];
  detail: string;
}

export interface AgreementReport {
  ok: boolean;
  problems: AgreementProblem[];
  /** Worth knowing, not worth refusing: clock skew, a host without a machine id. */
  warnings: string[];
  /** Each host's machine id, by host name (src/preflight/machine-ids.ts). */
  machineIds: Record<string, string>;
  /** What each host whose facts were read is (src/preflight/host-identity.ts), in the hosts' order. */
  identities: HostIdentity[];
}

export interface AgreementHost {
  name: string;
  clusterIp: string;
  role: 'head' | 'worker';
}

export interface AgreementExpectations {
  image: string;
  modelPath: string;
  /** In spec order, the head among them. */
  hosts: AgreementHost[];
  /** The plain NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME of ray.env. */
  ifaceVars: { name: string; value: string }[];
  /** VLLM_HOST_IP as the spec sets it, with the hosts whose processes would see it. */
  vllmHostIps: { field: string; value: string; hosts: string[] }[];
  rayPort: number;
  maxClockSkewMs: number;
}

/**
 * What the agreement read asks of one host. One builder for preflightHost, which reads it in its round trip, and
 * checkHostsAgree, which reads a host whose facts did not come from there.
 */
export function hostReadOf(
  expect: Pick<AgreementExpectations, 'image' | 'modelPath' | 'hosts' | 'rayPort'> & { hashWeights: boolean },
  host: AgreementHost,
): HostReadInput {
  const head = expect.hosts.find((h) => h.role === 'head');
  return {
    host: host.name,
    image: expect.image,
    modelPath: expect.modelPath,
    hashWeights: expect.hashWeights,
    ...(head && head.name !== host.name ? { rayHead: { ip: head.clusterIp, port: expect.rayPort } } : {}),
  };
}

const listMax = 5;

function listed(items: string[]): string {
  const shown = items.slice(0, listMax).join(', ');
  return items.length > listMax ? `${shown} and ${items.length - listMax} more` : shown;
}

/** Hosts grouped by a value, in the hosts' order; hosts without a value are left out. */
function groupBy<T>(facts: HostFacts[], of: (f: HostFacts) => T | undefined, key: (v: T) => string = String) {
  const groups = new Map<string, { value: T; hosts: string[] }>();
  for (const f of facts) {
    const v = of(f);
    if (v === undefined) continue;
    const k = key(v);
    const g = groups.get(k) ?? { value: v, hosts: [] };
    g.hosts.push(f.host);
    groups.set(k, g);
  }
  return [...groups.values()];
}

/** One problem when the hosts do not all share a value: it names the hosts of every group after the first. */
function disagreement<T>(
  check: AgreementCheck,
  groups: { value: T; hosts: string[] }[],
  show: (value: T) => string,
  detail: (sideBySide: string) => string,
): AgreementProblem[] {
  if (groups.length < 2) return [];
  const sideBySide = groups.map((g) => `${g.hosts.join(', ')}: ${show(g.value)}`).join(' | ');
  return [{ check, hosts: groups.slice(1).flatMap((g) => g.hosts), detail: detail(sideBySide) }];
}

export function compareHosts(exp: AgreementExpectations, facts: HostFacts[]): AgreementReport {
  const problems = [
    ...compareImages(exp, facts),
    ...compareVersions(exp, facts),
    ...compareWeights(exp, facts),
    ...compareAddresses(exp, facts),
    ...checkIpc(facts),
  ];
  const machines = machineIdsOf(facts);
  return {
    ok: problems.length === 0,
    problems,
    warnings: [...clockWarnings(exp, facts), ...machines.warnings],
    machineIds: machines.ids,
    identities: identitiesOf(exp, facts),
  };
}

/** One identity per host whose facts were read, in the spec's host order whatever order the facts came in. */
function identitiesOf(exp: AgreementExpectations, facts: HostFacts[]): HostIdentity[] {
  const byHost = new Map(facts.map((f) => [f.host, f]));
  return exp.hosts.flatMap((h) => {
    const f = byHost.get(h.name);
    return f ? [hostIdentityOf(f)] : [];
  });
}

function compareImages(exp: AgreementExpectations, facts: HostFacts[]): AgreementProblem[] {
  const groups = groupBy(facts, (f) => f.imageId);
  return disagreement(
    'image',
    groups,
    shortImageId,
    (sideBySide) =>
      `${exp.image} is a different image from host to host (${sideBySide}): pull the same build on every host (docker pull ${exp.image}), or pin a digest (image@sha256:…)`,
  );
}

const versionNames: (keyof ImageVersions)[] = ['python', 'ray', 'vllm'];

function compareVersions(exp: AgreementExpectations, facts: HostFacts[]): AgreementProblem[] {
  const groups = groupBy(
    facts,
    (f) => f.versions,
    (v) => versionNames.map((n) => v[n] ?? '?').join(' '),
  );
  const differing = versionNames.filter((n) => new Set(groups.map((g) => g.value[n] ?? '?')).size > 1);
  return disagreement(
    'versions',
    groups,
    (v) => differing.map((n) => `${n} ${v[n] ?? '?'}`).join(', '),
    (sideBySide) =>
      `${differing.join(', ')} inside ${exp.image} differ (${sideBySide}): Ray and NCCL need the same versions on every node; pull the same build everywhere`,
  );
}

function compareWeights(exp: AgreementExpectations, facts: HostFacts[]): AgreementProblem[] {
  const problems: AgreementProblem[] = [];
  const sound: HostFacts[] = [];
  for (const f of facts) {
    if (!f.weights) continue;
    const own = weightProblems(f, exp.modelPath);
    problems.push(...own.map((detail) => ({ check: 'weights' as const, hosts: [f.host], detail })));
    if (own.length === 0) sound.push(f);
  }
  // Host against host only where each is whole on its own; the first sound host (the head, usually) is the reference.
  const [reference, ...others] = sound;
  if (!reference?.weights) return problems;
  const refFiles = byPath(reference.weights.entries);
  for (const f of others) {
    const files = byPath(f.weights?.entries ?? []);
    const missing = [...refFiles.keys()].filter((p) => !files.has(p));
    const extra = [...files.keys()].filter((p) => !refFiles.has(p));
    const sized = [...refFiles].filter(([p, e]) => files.has(p) && files.get(p)?.bytes !== e.bytes);
    const parts: string[] = [];
    if (missing.length) parts.push(`missing on ${f.host}: ${listed(missing)}`);
    if (extra.length) parts.push(`only on ${f.host}: ${listed(extra)}`);
    if (sized.length)
      parts.push(
        `sizes differ: ${listed(sized.map(([p, e]) => `${p} ${e.bytes} B on ${reference.host}, ${files.get(p)?.bytes ?? 0} B on ${f.host}`))}`,
      );
    const hashDiff = differingHashes(reference, f);
    if (hashDiff.length) parts.push(`sha256 differs: ${listed(hashDiff)}`);
    if (parts.length) {
      problems.push({
        check: 'weights',
        hosts: [f.host],
        detail: `the weights in ${exp.modelPath} on ${f.host} are not those on ${reference.host}: ${parts.join('; ')}. Download the same revision on every host (huggingface-cli download ORG/NAME --revision …)`,
      });
    }
  }
  return problems;
}

function byPath(entries: WeightEntry[]): Map<string, WeightEntry> {
  return new Map(entries.filter((e) => e.kind === 'file').map((e) => [e.path, e]));
}

function differingHashes(a: HostFacts, b: HostFacts): string[] {
  if (!a.hashes || !b.hashes) return [];
  const other = b.hashes;
  return Object.entries(a.hashes)
    .filter(([p, h]) => other[p] !== undefined && other[p] !== h)
    .map(([p]) => p);
}

/** What is wrong with one host's weights by themselves: broken links, and the index's shards. */
export function weightProblems(f: HostFacts, modelPath: string): string[] {
  const entries = f.weights?.entries ?? [];
  const out: string[] = [];
  const broken = entries.filter((e) => e.kind === 'broken').map((e) => e.path);
  if (broken.length) {
    out.push(
      `broken symbolic link(s) in ${modelPath}: ${listed(broken)} (their blobs are missing: an interrupted download)`,
    );
  }
  // Looked up once per shard: sets keep the check linear in the files and shards (a scan of the broken list for
  // each shard made it quadratic: 45 s at 50 000 files).
  const files = byPath(entries);
  const brokenPaths = new Set(broken);
  for (const index of f.indexes) {
    const dir = index.file.slice(0, index.file.lastIndexOf('/') + 1);
    const missing = index.shards.filter((s) => !files.has(`${dir}${s}`) && !brokenPaths.has(`${dir}${s}`));
    const empty = index.shards.filter((s) => files.get(`${dir}${s}`)?.bytes === 0);
    if (missing.length) out.push(`${index.file} lists shard(s) that are not there: ${listed(missing)}`);
    if (empty.length) out.push(`shard(s) listed in ${index.file} are empty: ${listed(empty)}`);
    const bytes = index.shards.reduce((sum, s) => sum + (files.get(`${dir}${s}`)?.bytes ?? 0), 0);
    // total_size counts tensor bytes only; each file adds its header, so whole shards hold at least that much.
    if (index.totalSize !== undefined && !missing.length && !empty.length && bytes < index.totalSize) {
      out.push(
        `the shards of ${index.file} hold ${bytes} bytes, fewer than its total_size ${index.totalSize}: a shard is truncated`,
      );
    }
  }
  if (out.length && f.weights?.truncated) out.push(`(only the first ${entries.length} files were listed)`);
  return out.map((d) => `${d}: download the weights again (huggingface-cli download ORG/NAME)`);
}

/** NCCL_SOCKET_IFNAME syntax: comma-separated prefixes, `=` for an exact name, a leading `^` to exclude. */
export function ifaceMatches(spec: string, iface: string): boolean {
  const exclude = spec.startsWith('^');
  const body = exclude ? spec.slice(1) : spec;
  const exact = body.startsWith('=');
  const names = (exact ? body.slice(1) : body).split(',').filter((n) => n !== '');
  const hit = names.some((n) => (exact ? iface === n : iface.startsWith(n)));
  return exclude ? !hit : hit;
}

function compareAddresses(exp: AgreementExpectations, facts: HostFacts[]): AgreementProblem[] {
  const problems: AgreementProblem[] = [];
  const holders = new Map<string, string>();
  for (const f of facts) {
    const host = exp.hosts.find((h) => h.name === f.host);
    if (!host) continue;
    const holder = f.addresses.find((a) => carries(a, host.clusterIp))?.iface;
    if (holder) holders.set(f.host, holder);
    const wrong = exp.ifaceVars.filter((v) => !holder || !ifaceMatches(v.value, holder));
    if (wrong.length) {
      const named = wrong.map((v) => `${v.name}=${v.value}`).join(' and ');
      const verb = wrong.length > 1 ? 'name' : 'names';
      problems.push({
        check: 'addresses',
        hosts: [f.host],
        detail: holder
          ? `clusterIp ${host.clusterIp} is on ${holder}, but ${named} ${verb} another interface: NCCL and Gloo would talk over another network than Ray; set them to ${holder}, or put clusterIp on the interface they name`
          : `clusterIp ${host.clusterIp} is on no interface of ${f.host} (${named} is what NCCL and Gloo would use): fix the host's clusterIp, or bring the interconnect up`,
      });
    }
    if (f.rayPort?.outcome === 'blocked') {
      const head = exp.hosts.find((h) => h.role === 'head');
      problems.push({
        check: 'addresses',
        hosts: [f.host],
        detail: `${f.host} cannot reach the head's Ray port ${head?.clusterIp ?? '?'}:${exp.rayPort} (${f.rayPort.detail}): open TCP ${exp.rayPort} from ${f.host} to ${head?.name ?? 'the head'} on the cluster network (a firewall?)`,
      });
    }
  }
  for (const v of exp.vllmHostIps) {
    const wrong = exp.hosts.filter((h) => v.hosts.includes(h.name) && h.clusterIp !== v.value);
    if (wrong.length) {
      problems.push({
        check: 'addresses',
        hosts: wrong.map((h) => h.name),
        detail: `${v.field} VLLM_HOST_IP=${v.value} is not the node IP given to Ray on ${wrong.map((h) => `${h.name} (${h.clusterIp})`).join(', ')}: vLLM and Ray would pick different addresses; remove it (liftoff sets VLLM_HOST_IP to each host's clusterIp)`,
      });
    }
  }
  const mtuGroups = groupBy(facts, (f) => {
    const iface = holders.get(f.host);
    return iface === undefined ? undefined : f.mtus[iface];
  });
  problems.push(
    ...disagreement(
      'addresses',
      mtuGroups,
      String,
      (sideBySide) =>
        `the MTU of the cluster interface differs (${sideBySide}): set the same MTU on every host (ip link set dev IFACE mtu N, and in the netplan or NetworkManager config)`,
    ),
  );
  return problems;
}

/** systemd leaves root's and system users' IPC alone (uid below 1000); a regular user's goes with its last session. */
const firstRegularUid = 1000;

function checkIpc(facts: HostFacts[]): AgreementProblem[] {
  const problems: AgreementProblem[] = [];
  for (const f of facts) {
    const { answers, removeIpc, uid, linger } = f.logind;
    if (!answers || !removeIpc || uid === undefined || uid < firstRegularUid || linger) continue;
    const user = f.logind.user ?? `uid ${uid}`;
    problems.push({
      check: 'ipc',
      hosts: [f.host],
      detail: `logind has RemoveIPC=yes and ${user} (uid ${uid}) does not linger: when the SSH session that started the Ray worker closes, systemd deletes ${user}'s shared memory and semaphores and the head hangs. Fix: sudo loginctl enable-linger ${user}, or RemoveIPC=no in /etc/systemd/logind.conf, then sudo systemctl restart systemd-logind`,
    });
  }
  return problems;
}

function clockWarnings(exp: AgreementExpectations, facts: HostFacts[]): string[] {
  const sorted = facts
    .filter((f) => f.clockOffsetMs !== undefined)
    .sort((a, b) => (a.clockOffsetMs ?? 0) - (b.clockOffsetMs ?? 0));
  const [first, last] = [sorted[0], sorted.at(-1)];
  if (!first || !last || sorted.length < 2) return [];
  const skewMs = (last.clockOffsetMs ?? 0) - (first.clockOffsetMs ?? 0);
  if (skewMs <= exp.maxClockSkewMs) return [];
  return [
    `clocks differ by ${(skewMs / 1000).toFixed(1)} s between ${first.host} and ${last.host} (preflight.maxClockSkew is ${exp.maxClockSkewMs / 1000} s): logs and timeouts will not line up; enable NTP on every host (timedatectl set-ntp true)`,
  ];
}
