// Knobs that make one simulated host disagree with the others, for the agreement checks of preflight: another
// image build under the same tag, other versions inside the image (a Python patch level is enough), a missing,
// broken, empty or truncated weight file, the cluster address on another interface or gone from the host,
// another MTU, the Ray port blocked towards the head, logind removing a non-root user's IPC, a clock offset. Each
// is real where the namespace allows it (interfaces, addresses, MTU, routing rules, files) and otherwise state the
// simulated tools read. clearDisagreements puts every host back.
import { existsSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireCluster, requireHost, type SimCluster, type SimHost } from './cluster-state.js';
import { paths, readFaults, readHostConfig, readJson, writeFaults, writeJson } from './host-state.js';
import { clusterIfaceName } from './network.js';
import { runOk } from './processes.js';
import {
  referenceImageVersions,
  referenceLogind,
  shardFileName,
  snapshotDirOf,
  writeImageSite,
  writeLogind,
  writeModelDir,
} from './seed.js';

export interface Disagreement {
  /** `docker image inspect` reports other IDs for every image of the host. */
  imageIdSalt?: string;
  /** The versions python3 finds inside every image of the host. */
  imageVersions?: { python?: string; ray?: string; vllm?: string };
  /** This shard's file (1-based) is gone from the snapshot. */
  missingShard?: number;
  /** This shard's link (1-based) points at a blob that is not there. */
  brokenShardLink?: number;
  /** This shard's blob (1-based) is empty, as a download that stopped before its first byte leaves it. */
  emptyShard?: number;
  /** This shard's blob (1-based) is cut to half its size: the shards then hold fewer bytes than total_size. */
  truncatedShard?: number;
  /** The cluster interface is renamed to this: clusterIp is then on an interface NCCL_SOCKET_IFNAME does not name. */
  clusterIface?: string;
  /**
   * The cluster interface carries this address (same /24) instead of clusterIp, as after a new DHCP lease:
   * clusterIp is on no interface. Only on a host reached by another address (its management link).
   */
  clusterAddress?: string;
  mtu?: number;
  /** TCP to the head's clusterIp on this port is unreachable from this host (a routing rule, like a firewall). */
  blockTcpTo?: { ip: string; port: number };
  logind?: { removeIpc: boolean; uid: number; name: string; linger: boolean };
  clockOffsetSeconds?: number;
}

/** What was changed on a host, so that clearDisagreements can undo the network part. */
interface Applied {
  iface?: string;
  /** The address the cluster interface carries instead of clusterIp. */
  address?: string;
  mtu?: boolean;
  rule?: boolean;
  weights?: boolean;
}

const rulePriority = 100;
const appliedFile = (h: SimHost): string => join(h.hostDir, 'disagree.json');

function needNetns(h: SimHost): string {
  if (!h.netns) throw new Error(`${h.name}: network knobs need netns mode`);
  return h.netns;
}

/** The model folders of a host as they are on disk (under the host folder's home in netns mode). */
function modelDirsOnDisk(cluster: SimCluster, h: SimHost): string[] {
  return readHostConfig(h.hostDir).modelDirs.map((d) =>
    cluster.mode === 'netns' ? join(paths.home(h.hostDir), d.slice('/home/'.length)) : d,
  );
}

/** Adds `d` to what the host already disagrees on. */
export async function setDisagreement(stateDir: string, host: string, d: Disagreement): Promise<void> {
  const cluster = requireCluster(stateDir);
  const h = requireHost(cluster, host);
  const applied = readJson<Applied>(appliedFile(h)) ?? {};
  const cfg = readHostConfig(h.hostDir);
  if (d.imageIdSalt !== undefined)
    writeFaults(h.hostDir, { ...readFaults(h.hostDir), imageIdSalt: d.imageIdSalt });
  if (d.imageVersions) {
    for (const image of cfg.images)
      writeImageSite(h.hostDir, image, { ...referenceImageVersions, ...d.imageVersions });
  }
  for (const [shard, broken] of [
    [d.missingShard, false],
    [d.brokenShardLink, true],
  ] as const) {
    if (shard === undefined) continue;
    for (const dir of modelDirsOnDisk(cluster, h)) {
      const link = join(snapshotDirOf(dir), shardFileName(shard, cfg.vllm.shards));
      rmSync(link, { force: true });
      if (broken) symlinkSync(join('..', '..', 'blobs', 'deadbeef'.repeat(8)), link);
    }
    applied.weights = true;
  }
  for (const [shard, keep] of [
    [d.emptyShard, 0],
    [d.truncatedShard, 0.5],
  ] as const) {
    if (shard === undefined) continue;
    for (const dir of modelDirsOnDisk(cluster, h)) {
      // Through the snapshot's link: the blob is cut, as an interrupted download leaves it.
      const link = join(snapshotDirOf(dir), shardFileName(shard, cfg.vllm.shards));
      truncateSync(link, Math.floor(statSync(link).size * keep));
    }
    applied.weights = true;
  }
  const currentIface = applied.iface ?? clusterIfaceName;
  if (d.clusterIface !== undefined && d.clusterIface !== currentIface) {
    await renameIface(needNetns(h), currentIface, d.clusterIface);
    applied.iface = d.clusterIface;
  }
  if (d.clusterAddress !== undefined) {
    if (h.address === h.clusterIp)
      throw new Error(`${h.name}: reached at its clusterIp, it would be cut off`);
    await replaceAddress(
      needNetns(h),
      applied.iface ?? clusterIfaceName,
      applied.address ?? h.clusterIp,
      d.clusterAddress,
    );
    applied.address = d.clusterAddress;
  }
  if (d.mtu !== undefined) {
    await runOk('ip', [
      '-n',
      needNetns(h),
      'link',
      'set',
      'dev',
      applied.iface ?? clusterIfaceName,
      'mtu',
      String(d.mtu),
    ]);
    applied.mtu = true;
  }
  if (d.blockTcpTo) {
    const { ip, port } = d.blockTcpTo;
    await runOk('ip', [
      '-n',
      needNetns(h),
      'rule',
      'add',
      'priority',
      String(rulePriority),
      'to',
      `${ip}/32`,
      'ipproto',
      'tcp',
      'dport',
      String(port),
      'unreachable',
    ]);
    applied.rule = true;
  }
  if (d.logind) writeLogind(h.hostDir, d.logind);
  if (d.clockOffsetSeconds !== undefined)
    writeFileSync(paths.clockOffset(h.hostDir), `${d.clockOffsetSeconds}\n`);
  writeJson(appliedFile(h), applied);
}

async function renameIface(netns: string, from: string, to: string): Promise<void> {
  await runOk('ip', ['-n', netns, '-batch', '-'], {
    input: `link set dev ${from} down\nlink set dev ${from} name ${to}\nlink set dev ${to} up\n`,
  });
}

/** Swaps the interface's /24 address `from` for `to`. */
async function replaceAddress(netns: string, iface: string, from: string, to: string): Promise<void> {
  // The old address goes first: deleting a primary address also deletes the secondaries of its subnet.
  await runOk('ip', ['-n', netns, '-batch', '-'], {
    input: `addr del ${from}/24 dev ${iface}\naddr add ${to}/24 dev ${iface}\n`,
  });
}

/**
 * Every host back to the reference: one image build and its versions, whole weights, one interface name, address
 * and MTU.
 */
export async function clearDisagreements(stateDir: string): Promise<void> {
  const cluster = requireCluster(stateDir);
  for (const h of cluster.hosts) {
    const applied = readJson<Applied>(appliedFile(h)) ?? {};
    const cfg = readHostConfig(h.hostDir);
    const { imageIdSalt: _salt, ...faults } = readFaults(h.hostDir);
    writeFaults(h.hostDir, faults);
    for (const image of cfg.images) writeImageSite(h.hostDir, image, referenceImageVersions);
    if (applied.weights) for (const dir of modelDirsOnDisk(cluster, h)) writeModelDir(dir, cfg.vllm.shards);
    if (h.netns) {
      if (applied.iface) await renameIface(h.netns, applied.iface, clusterIfaceName);
      if (applied.address) await replaceAddress(h.netns, clusterIfaceName, applied.address, h.clusterIp);
      if (applied.mtu)
        await runOk('ip', ['-n', h.netns, 'link', 'set', 'dev', clusterIfaceName, 'mtu', '1500']);
      if (applied.rule) await runOk('ip', ['-n', h.netns, 'rule', 'del', 'priority', String(rulePriority)]);
    }
    writeLogind(h.hostDir, referenceLogind);
    if (existsSync(paths.clockOffset(h.hostDir))) rmSync(paths.clockOffset(h.hostDir));
    rmSync(appliedFile(h), { force: true });
  }
}
