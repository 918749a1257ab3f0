// Network namespaces for the simulated hosts: a management bridge the control host (root namespace)
// can reach, and a cluster fabric it cannot, so a host with only a fabric link needs a jump host.
import { existsSync, readlinkSync, statSync } from 'node:fs';
import { allPids, run, runOk } from './processes.js';

/**
 * Names and subnets of one simulated network. Index 0 is the documented layout (lfmgmt0, lf-fabric,
 * 10.213.1.0/24 and 10.213.2.0/24); other indexes let separate clusters coexist on one machine
 * (parallel test files): index k uses 10.213.(2k+1).0/24 and 10.213.(2k+2).0/24.
 */
export interface NetLayout {
  index: number;
  /** Namespace names start with this: `lf-` for index 0, `lf<k>-` otherwise. */
  nsPrefix: string;
  mgmtBridge: string;
  mgmtGateway: string;
  fabricNs: string;
  fabricBridge: string;
}

/**
 * Hosts of one simulated cluster. What a host's number must fit: its management and cluster addresses end in
 * 10 + the number inside a /24 (≤ 254), its loopback-mode address in the number itself, its MACs in one hex byte
 * of it (≤ 255) and its root-side veth name in IFNAMSIZ: the address plan alone would allow 244. 128 is what
 * `npm run bench` measures (issue 33) and what bench/capacity.ts's per-host needs were read at. Larger fleets are
 * several clusters side by side, each on its own netIndex (bench/fleet-supervision.ts does so).
 */
export const maxSimHosts = 128;

/** Why a cluster of `hosts` hosts cannot come up, naming the field and the fix; undefined when it can. */
export function simHostsProblem(hosts: number): string | undefined {
  if (Number.isInteger(hosts) && hosts >= 1 && hosts <= maxSimHosts) return undefined;
  return (
    `hosts must be 1..${maxSimHosts}, got ${hosts}` +
    (Number.isInteger(hosts) && hosts > maxSimHosts
      ? `: one simulated cluster numbers its hosts' addresses within one /24 per network and is sized for ${maxSimHosts}` +
        ' (sim/network.ts maxSimHosts); bring up several clusters side by side, each with its own netIndex and state dir'
      : '')
  );
}

export const clusterIfaceName = 'enp1s0f1np1';
export const mgmtIfaceName = 'mgmt0';

export function netLayout(index: number): NetLayout {
  if (!Number.isInteger(index) || index < 0 || index > 99)
    throw new Error(`net index must be 0..99, got ${index}`);
  const nsPrefix = index === 0 ? 'lf-' : `lf${index}-`;
  return {
    index,
    nsPrefix,
    mgmtBridge: `lfmgmt${index}`,
    mgmtGateway: `10.213.${2 * index + 1}.1`,
    fabricNs: `${nsPrefix}fabric`,
    fabricBridge: 'fab0',
  };
}

export interface HostNet {
  netns: string;
  /** Undefined for a host without a management link. */
  mgmtIp?: string;
  clusterIp: string;
  /** Root-namespace end of the management veth. */
  rootVeth: string;
  /** Fabric-namespace end of the cluster veth. */
  fabricVeth: string;
  mgmtMac: string;
  clusterMac: string;
}

/** `ordinal` is the host's 1-based number (spark1 → 1). */
export function hostNet(layout: NetLayout, name: string, ordinal: number, withMgmt: boolean): HostNet {
  if (!Number.isInteger(ordinal) || ordinal < 1 || ordinal > maxSimHosts)
    throw new Error(`host number must be 1..${maxSimHosts}, got ${ordinal}`);
  const netns = `${layout.nsPrefix}${name}`;
  if (netns.length > 64) throw new Error(`namespace name too long: ${netns}`);
  const hex = (n: number): string => n.toString(16).padStart(2, '0');
  return {
    netns,
    mgmtIp: withMgmt ? `10.213.${2 * layout.index + 1}.${10 + ordinal}` : undefined,
    clusterIp: `10.213.${2 * layout.index + 2}.${10 + ordinal}`,
    rootVeth: `lfm${layout.index}h${ordinal}`,
    fabricVeth: `h${ordinal}`,
    // Fixed, locally administered MACs so the control side can pin neighbour entries (see createHostNet).
    mgmtMac: `02:13:${hex(layout.index)}:01:00:${hex(ordinal)}`,
    clusterMac: `02:13:${hex(layout.index)}:02:00:${hex(ordinal)}`,
  };
}

export function netnsSupported(): boolean {
  return process.getuid?.() === 0 && existsSync('/usr/sbin/ip') && existsSync('/usr/bin/unshare');
}

async function ipBatch(netns: string | undefined, lines: string[]): Promise<void> {
  const args = netns ? ['-n', netns, '-batch', '-'] : ['-batch', '-'];
  await runOk('ip', args, { input: `${lines.join('\n')}\n` });
}

export async function listNetns(): Promise<string[]> {
  const res = await run('ip', ['netns', 'list']);
  return res.stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.length > 0);
}

/**
 * Traffic from the control host to 10.213.0.0/16 must never leave the machine: without this, a
 * fabric address (no route here) would follow the default route out of eth0.
 */
const projectRange = '10.213.0.0/16';

export async function createFabric(layout: NetLayout): Promise<void> {
  await ipBatch(undefined, [
    `route replace unreachable ${projectRange}`,
    `netns add ${layout.fabricNs}`,
    `link add ${layout.mgmtBridge} type bridge`,
    `addr add ${layout.mgmtGateway}/24 dev ${layout.mgmtBridge}`,
    `link set ${layout.mgmtBridge} up`,
  ]);
  await ipBatch(layout.fabricNs, [
    'link set lo up',
    `link add ${layout.fabricBridge} type bridge`,
    `link set ${layout.fabricBridge} up`,
  ]);
}

export async function createHostNet(layout: NetLayout, net: HostNet): Promise<void> {
  const root = [`netns add ${net.netns}`];
  if (net.mgmtIp) {
    root.push(
      `link add ${net.rootVeth} type veth peer name ${mgmtIfaceName} address ${net.mgmtMac} netns ${net.netns}`,
      `link set ${net.rootVeth} master ${layout.mgmtBridge} up`,
      // A pinned neighbour entry makes a downed link look like a real unreachable host to the control
      // side: packets vanish and connects time out, instead of failing fast on ARP.
      `neigh replace ${net.mgmtIp} lladdr ${net.mgmtMac} dev ${layout.mgmtBridge} nud permanent`,
    );
  }
  await ipBatch(undefined, root);
  await ipBatch(layout.fabricNs, [
    `link add ${net.fabricVeth} type veth peer name ${clusterIfaceName} address ${net.clusterMac} netns ${net.netns}`,
    `link set ${net.fabricVeth} master ${layout.fabricBridge} up`,
  ]);
  const inside = [
    'link set lo up',
    `addr add ${net.clusterIp}/24 dev ${clusterIfaceName}`,
    `link set ${clusterIfaceName} up`,
  ];
  if (net.mgmtIp)
    inside.push(`addr add ${net.mgmtIp}/24 dev ${mgmtIfaceName}`, `link set ${mgmtIfaceName} up`);
  await ipBatch(net.netns, inside);
}

/** Both of a host's links down (or up): the host vanishes from every network, as if unplugged. */
export async function setHostLinks(net: HostNet, up: boolean): Promise<void> {
  const state = up ? 'up' : 'down';
  const lines = [`link set ${clusterIfaceName} ${state}`];
  if (net.mgmtIp) lines.push(`link set ${mgmtIfaceName} ${state}`);
  await ipBatch(net.netns, lines);
}

export async function hostLinksUp(net: HostNet): Promise<boolean> {
  const res = await run('ip', ['-n', net.netns, '-o', 'link', 'show', 'dev', clusterIfaceName]);
  return res.code === 0 && /[<,]UP[,>]/.test(res.stdout);
}

/** Processes in any of the named network namespaces (what `ip netns pids` does, for many at once). */
export function netnsPids(namespaces: string[]): number[] {
  const inodes = new Set<number>();
  for (const ns of namespaces) {
    try {
      inodes.add(statSync(`/run/netns/${ns}`).ino);
    } catch {
      // not there (any more)
    }
  }
  if (inodes.size === 0) return [];
  return allPids().filter((pid) => {
    try {
      const m = /^net:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/ns/net`));
      return m !== null && inodes.has(Number(m[1]));
    } catch {
      return false;
    }
  });
}

/** Deletes namespaces (their veths go with them) and the management bridge. Missing pieces are fine. */
export async function deleteNetwork(layout: NetLayout, hostNamespaces: string[]): Promise<void> {
  // A deleted namespace is torn down by the kernel later, and its veths' root-side ends with it; deleting
  // those ends first makes them gone by the time this returns.
  const links = await run('ip', ['-o', 'link', 'show']);
  const rootVeth = new RegExp(`^\\d+: (lfm${layout.index}h\\d+)@`, 'gm');
  const lines = [...links.stdout.matchAll(rootVeth)].map((m) => `link delete ${m[1]}`);
  const existing = new Set(await listNetns());
  for (const ns of new Set([...hostNamespaces, layout.fabricNs])) {
    if (existing.has(ns)) lines.push(`netns delete ${ns}`);
  }
  if (new RegExp(`^\\d+: ${layout.mgmtBridge}:`, 'm').test(links.stdout))
    lines.push(`link delete ${layout.mgmtBridge}`);
  // -force: one missing piece must not stop the rest from going.
  if (lines.length > 0) await run('ip', ['-force', '-batch', '-'], { input: `${lines.join('\n')}\n` });
  const bridges = await run('ip', ['-o', 'link', 'show', 'type', 'bridge']);
  if (!/^\d+: lfmgmt\d+[:@]/m.test(bridges.stdout)) {
    await run('ip', ['route', 'delete', 'unreachable', projectRange]);
  }
}

/** Namespaces of this layout that exist now, found by name (for cleanup after a crash lost the state). */
export async function strayNamespaces(layout: NetLayout): Promise<string[]> {
  return (await listNetns()).filter((ns) => ns.startsWith(layout.nsPrefix));
}
