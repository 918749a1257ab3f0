// The simulated GCS: node membership, `ray status` snapshots and GPU placement groups for vLLM drivers.
import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { formatBundleSpecs, formatPendingDemand } from './format.js';
import {
  JsonLineChannel,
  type BundlePlacement,
  type ClientMessage,
  type NodeInfo,
  type ServerMessage,
  type StatusSnapshot,
} from './protocol.js';
import type { HoldOutcome, LocalGpuHolder } from './node.js';

type HeadChannel = JsonLineChannel<ClientMessage, ServerMessage>;

/** How the GCS reaches a node to make it hold or release GPU memory. */
interface NodeAgent {
  hold(placementGroupId: string, gpuIndex: number, memoryMiB: number): Promise<HoldOutcome | undefined>;
  release(placementGroupId: string): void;
}

interface NodeEntry {
  info: NodeInfo;
  agent: NodeAgent;
}

interface PlacementGroup {
  id: string;
  bundles: number;
  driverIp: string;
  memoryMiB: number;
  driver: HeadChannel;
  state: 'pending' | 'creating' | 'ready';
  placement: { nodeId: string; gpuIndex: number }[];
}

const HOLD_TIMEOUT_MS = 3000;

class RemoteAgent implements NodeAgent {
  private nextReqId = 1;
  private readonly waiting = new Map<number, (outcome: HoldOutcome | undefined) => void>();

  constructor(private readonly channel: HeadChannel) {
    channel.onMessage((msg) => {
      if (msg.type !== 'holdResult' && msg.type !== 'holdFailed') return;
      const resolve = this.waiting.get(msg.reqId);
      this.waiting.delete(msg.reqId);
      resolve?.(
        msg.type === 'holdResult'
          ? { pid: msg.pid, freeMiB: msg.freeMiB, totalMiB: msg.totalMiB }
          : undefined,
      );
    });
    channel.onClose(() => {
      for (const resolve of this.waiting.values()) resolve(undefined);
      this.waiting.clear();
    });
  }

  hold(placementGroupId: string, gpuIndex: number, memoryMiB: number): Promise<HoldOutcome | undefined> {
    const reqId = this.nextReqId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(reqId);
        resolve(undefined);
      }, HOLD_TIMEOUT_MS);
      this.waiting.set(reqId, (outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      });
      this.channel.send({ type: 'holdGpu', reqId, placementGroupId, gpuIndex, memoryMiB });
    });
  }

  release(placementGroupId: string): void {
    this.channel.send({ type: 'releaseGpu', placementGroupId });
  }
}

class LocalAgent implements NodeAgent {
  constructor(private readonly holder: LocalGpuHolder) {}

  hold(placementGroupId: string, gpuIndex: number, memoryMiB: number): Promise<HoldOutcome | undefined> {
    return Promise.resolve(this.holder.hold(placementGroupId, gpuIndex, memoryMiB));
  }

  release(placementGroupId: string): void {
    this.holder.release(placementGroupId);
  }
}

export class GcsServer {
  private readonly nodes = new Map<string, NodeEntry>();
  private readonly placementGroups: PlacementGroup[] = [];
  private readonly channels = new Set<HeadChannel>();
  private server: Server | undefined;

  constructor(
    private readonly headNode: NodeInfo,
    headHolder: LocalGpuHolder,
  ) {
    this.nodes.set(headNode.nodeId, { info: headNode, agent: new LocalAgent(headHolder) });
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const server = createServer((socket) => this.accept(socket));
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, () => {
        server.off('error', reject);
        this.server = server;
        resolve();
      });
    });
  }

  close(): void {
    this.server?.close();
    for (const channel of this.channels) channel.close();
  }

  private accept(socket: Socket): void {
    const channel: HeadChannel = new JsonLineChannel(socket);
    this.channels.add(channel);
    channel.onClose(() => this.channels.delete(channel));
    let role: 'unknown' | 'node' | 'driver' = 'unknown';
    channel.onMessage((msg) => {
      if (msg.type === 'status') {
        channel.send({ type: 'statusReply', status: this.snapshot() });
      } else if (msg.type === 'register' && role === 'unknown') {
        role = 'node';
        this.addNode(msg.node, channel);
      } else if (msg.type === 'requestPlacementGroup' && role !== 'node') {
        role = 'driver';
        this.addPlacementGroup(msg, channel);
      }
    });
  }

  private addNode(info: NodeInfo, channel: HeadChannel): void {
    this.nodes.set(info.nodeId, { info, agent: new RemoteAgent(channel) });
    channel.startHeartbeat();
    channel.send({ type: 'registered', nodeId: info.nodeId });
    channel.onClose(() => this.removeNode(info.nodeId));
    this.schedule();
  }

  private removeNode(nodeId: string): void {
    const node = this.nodes.get(nodeId);
    if (!node) return;
    this.nodes.delete(nodeId);
    for (const pg of this.placementGroups) {
      if (pg.state !== 'pending' && pg.placement.some((b) => b.nodeId === nodeId)) {
        pg.driver.send({ type: 'placementGroupLost', nodeId, nodeIp: node.info.ip });
      }
    }
  }

  private addPlacementGroup(
    msg: Extract<ClientMessage, { type: 'requestPlacementGroup' }>,
    driver: HeadChannel,
  ): void {
    const pg: PlacementGroup = {
      id: randomBytes(14).toString('hex'),
      bundles: msg.bundles,
      driverIp: msg.driverIp,
      memoryMiB: msg.memoryMiB,
      driver,
      state: 'pending',
      placement: [],
    };
    this.placementGroups.push(pg);
    driver.startHeartbeat();
    driver.onClose(() => this.removePlacementGroup(pg));
    this.schedule();
    if (pg.state === 'pending') {
      driver.send({
        type: 'placementGroupPending',
        specs: formatBundleSpecs(pg.bundles, pg.driverIp),
        totalGpus: this.totalGpus(),
      });
    }
  }

  private removePlacementGroup(pg: PlacementGroup): void {
    const index = this.placementGroups.indexOf(pg);
    if (index < 0) return;
    this.placementGroups.splice(index, 1);
    for (const nodeId of new Set(pg.placement.map((b) => b.nodeId)))
      this.nodes.get(nodeId)?.agent.release(pg.id);
    this.schedule();
  }

  private totalGpus(): number {
    return [...this.nodes.values()].reduce((s, n) => s + n.info.gpus, 0);
  }

  private freeGpuIndexes(): Map<string, number[]> {
    const taken = new Set<string>();
    for (const pg of this.placementGroups) {
      if (pg.state === 'pending') continue;
      for (const b of pg.placement) taken.add(`${b.nodeId}/${b.gpuIndex}`);
    }
    const free = new Map<string, number[]>();
    for (const [nodeId, node] of this.nodes) {
      free.set(
        nodeId,
        Array.from({ length: node.info.gpus }, (_, i) => i).filter((i) => !taken.has(`${nodeId}/${i}`)),
      );
    }
    return free;
  }

  /** PACK strategy with vLLM's first bundle pinned to the driver's node (`node:IP` in the specs). */
  private place(pg: PlacementGroup): PlacementGroup['placement'] | undefined {
    const free = this.freeGpuIndexes();
    const driverNode = [...this.nodes.values()].find(
      (n) => n.info.ip === pg.driverIp && (free.get(n.info.nodeId)?.length ?? 0) > 0,
    );
    if (!driverNode) return undefined;
    const order = [
      driverNode.info.nodeId,
      ...[...this.nodes.keys()].filter((id) => id !== driverNode.info.nodeId),
    ];
    const placement: PlacementGroup['placement'] = [];
    for (const nodeId of order) {
      for (const gpuIndex of free.get(nodeId) ?? []) {
        if (placement.length < pg.bundles) placement.push({ nodeId, gpuIndex });
      }
    }
    return placement.length === pg.bundles ? placement : undefined;
  }

  private schedule(): void {
    for (const pg of this.placementGroups) {
      if (pg.state !== 'pending') continue;
      const placement = this.place(pg);
      if (!placement) continue;
      pg.state = 'creating';
      pg.placement = placement;
      void this.create(pg);
    }
  }

  private async create(pg: PlacementGroup): Promise<void> {
    const bundles: BundlePlacement[] = await Promise.all(
      pg.placement.map(async (b): Promise<BundlePlacement> => {
        const node = this.nodes.get(b.nodeId);
        const base = { nodeId: b.nodeId, nodeIp: node?.info.ip ?? '', gpuIndex: b.gpuIndex };
        // The driver's own node: vLLM's engine process holds that memory itself.
        if (!node || node.info.ip === pg.driverIp) return { ...base, holderPid: 0 };
        const outcome = await node.agent.hold(pg.id, b.gpuIndex, pg.memoryMiB);
        return {
          ...base,
          holderPid: outcome?.pid ?? node.info.pid,
          freeMiB: outcome?.freeMiB,
          totalMiB: outcome?.totalMiB,
        };
      }),
    );
    if (pg.driver.isClosed || !this.placementGroups.includes(pg)) {
      // The driver left while the nodes were taking their shares: give them back.
      for (const nodeId of new Set(pg.placement.map((b) => b.nodeId)))
        this.nodes.get(nodeId)?.agent.release(pg.id);
      return;
    }
    pg.state = 'ready';
    pg.driver.send({
      type: 'placementGroupReady',
      placementGroupId: pg.id,
      bundles,
      headMemoryMonitorDisabled: this.headNode.memoryMonitorDisabled,
    });
  }

  private snapshot(): StatusSnapshot {
    return {
      nodes: [...this.nodes.values()].map(({ info }) => ({
        nodeId: info.nodeId,
        cpus: info.cpus,
        gpus: info.gpus,
        memoryBytes: info.memoryBytes,
        objectStoreBytes: info.objectStoreBytes,
      })),
      usedGpus: this.placementGroups
        .filter((pg) => pg.state !== 'pending')
        .reduce((s, pg) => s + pg.bundles, 0),
      pendingPlacementGroups: this.placementGroups
        .filter((pg) => pg.state === 'pending')
        .map((pg) => formatPendingDemand(pg.bundles, pg.driverIp)),
    };
  }
}
