// vLLM's own multi-node mode (`--nnodes N --node-rank R --master-addr A --master-port P`, no Ray): the
// rendezvous of every rank at rank 0's torch.distributed store, over real TCP. Rank 0 listens on the master
// address and waits for the others; each other rank connects, retrying until --distributed-timeout-seconds.
// The failures print torch's own texts (as seen from vLLM 0.32's CPU build in test/real/real-multinode).
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { numberOption, UsageError, type ParsedArgs } from '../ray/args.js';
import { FatalExit, frames, print, traceback, vllmLine, VLLM_VERSION } from './log.js';

/** torch's default store timeout is 30 min; vLLM passes --distributed-timeout-seconds when set. */
const DEFAULT_TIMEOUT_S = 1800;
const RETRY_MS = 250;

export interface Multinode {
  nnodes: number;
  rank: number;
  masterAddr: string;
  masterPort: number;
  timeoutS: number;
  headless: boolean;
  /** tensor × pipeline parallel: the world size, spread evenly over the nodes. */
  worldSize: number;
  tp: number;
}

/** The multi-node settings of `vllm serve`, or undefined for a single-node launch. */
export function multinodeOf(parsed: ParsedArgs, tp: number): Multinode | undefined {
  const nnodes = numberOption(parsed, 'nnodes') ?? 1;
  if (nnodes <= 1) return undefined;
  const rank = numberOption(parsed, 'node-rank') ?? 0;
  if (!Number.isInteger(rank) || rank < 0 || rank >= nnodes) {
    throw new UsageError(`argument --node-rank: ${rank} is not in [0, ${nnodes})`);
  }
  const pp = numberOption(parsed, 'pipeline-parallel-size') ?? 1;
  const worldSize = tp * pp;
  if (worldSize % nnodes !== 0) {
    // vLLM's own check: every node runs the same number of workers.
    throw new FatalExit([
      `ValueError: world_size (${worldSize}) must be divisible by nnodes (${nnodes}): tensor_parallel_size × pipeline_parallel_size is split evenly over the nodes`,
    ]);
  }
  return {
    nnodes,
    rank,
    masterAddr: parsed.values.get('master-addr') ?? '127.0.0.1',
    masterPort: numberOption(parsed, 'master-port') ?? 29501,
    timeoutS: numberOption(parsed, 'distributed-timeout-seconds') ?? DEFAULT_TIMEOUT_S,
    headless: parsed.booleans.has('headless'),
    worldSize,
    tp,
  };
}

/** How many workers (GPUs) this node runs. */
export function workersPerNode(m: Multinode): number {
  return m.worldSize / m.nnodes;
}

/** Prints the line `line` gives for each worker of this node, by its global and local rank, as each process logs. */
function eachLocalRank(m: Multinode, line: (rank: number, localRank: number) => string): void {
  const n = workersPerNode(m);
  for (let i = 0; i < n; i++) print(line(m.rank * n + i, i));
}

const distributedFrame: [string, number, string, string] = [
  '/usr/local/lib/python3.12/dist-packages/torch/distributed/rendezvous.py',
  189,
  '_create_c10d_store',
  'return TCPStore(',
];

/** The lines every rank prints before its rendezvous. */
export function announce(m: Multinode): void {
  const init = `tcp://${m.masterAddr}:${m.masterPort}`;
  if (m.headless) {
    print(
      vllmLine(
        'INFO',
        'serve.py:141',
        `Launching vLLM (v${VLLM_VERSION}) headless multiproc executor, with head node address ${m.masterAddr}:${m.masterPort} for torch.distributed process group.`,
      ),
    );
  }
  eachLocalRank(m, (rank, localRank) =>
    vllmLine(
      'INFO',
      'parallel_state.py:1208',
      `world_size=${m.worldSize} rank=${rank} local_rank=${localRank} distributed_init_method=${init} backend=nccl`,
    ),
  );
}

/** The lines every rank prints once the process group formed. */
export function assigned(m: Multinode): void {
  eachLocalRank(m, (rank) =>
    vllmLine(
      'INFO',
      'parallel_state.py:1400',
      `rank ${rank} in world size ${m.worldSize} is assigned as DP rank 0, PP rank ${Math.floor(rank / m.tp)}, TP rank ${rank % m.tp}, EP rank ${rank % m.tp}`,
    ),
  );
}

/** The connections of this rank to the others once all joined; closing them ends the group. */
export interface ProcessGroup {
  close(): void;
  /** Rank 0: `listener` runs once when a rank's connection drops while the group is up (a rank died). */
  onPeerLost(listener: (peer: { rank: number; address: string }) => void): void;
}

/**
 * What rank 0's worker prints when a headless rank dies under it, as real vLLM 0.32 did: gloo's read error in a
 * collective, behind the executor's ERROR prefix (the peer's address and port from torch).
 */
export function peerLostLines(m: Multinode, peerAddress: string): string[] {
  const prefix = (text: string) =>
    `(Worker_TP0 pid=${process.pid}) ${vllmLine('ERROR', 'multiproc_executor.py:953', text)}`;
  return traceback(
    [frames.engineCore, distributedFrame],
    `RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [${peerAddress}]:${m.masterPort + 1}: Connection reset by peer. This is typically caused by a remote worker hanging or bugs in the application.`,
  ).map(prefix);
}

/** Rank 0: the store. Waits for every other rank, or fails as torch does when the port is taken or time runs out. */
async function serveStore(m: Multinode): Promise<ProcessGroup> {
  const peers = new Set<Socket>();
  let formed = false;
  let closing = false;
  let peerLost: ((peer: { rank: number; address: string }) => void) | undefined;
  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      if (!buffered.includes('\n')) return;
      peers.add(socket);
      check();
    });
    socket.on('close', () => {
      peers.delete(socket);
      if (!formed || closing) return;
      const rank = Number((JSON.parse(buffered.split('\n')[0] ?? '{}') as { rank?: number }).rank);
      const listener = peerLost;
      peerLost = undefined;
      listener?.({ rank, address: socket.remoteAddress ?? m.masterAddr });
    });
  });
  let check: () => void = () => undefined;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      const [code, name, message] =
        e.code === 'EADDRINUSE'
          ? [-98, 'EADDRINUSE', 'address already in use']
          : [-99, 'EADDRNOTAVAIL', 'cannot assign requested address'];
      reject(
        new FatalExit(
          traceback(
            [frames.engineCore, distributedFrame],
            `torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: ${m.masterPort}, useIpv6: false, code: ${code}, name: ${name}, message: ${message}`,
          ),
        ),
      );
    });
    server.listen(m.masterPort, m.masterAddr, () => resolve());
  });
  const startedAt = Date.now();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      const failure = new FatalExit(
        traceback(
          [frames.engineCore, distributedFrame],
          `torch.distributed.DistStoreError: Timed out after ${Math.round((Date.now() - startedAt) / 1000) + 1} seconds waiting for clients. ${peers.size + 1}/${m.nnodes} clients joined.`,
        ),
      );
      // The store goes with the failed rendezvous, as torch's does: a store still listening would keep the
      // process (and the port) alive after it printed its fatal line.
      for (const p of peers) p.destroy();
      server.close();
      reject(failure);
    }, m.timeoutS * 1000);
    check = () => {
      if (peers.size < m.nnodes - 1) return;
      clearTimeout(timer);
      for (const p of peers) p.write('ready\n');
      formed = true;
      resolve();
    };
    check();
  });
  return {
    close: () => {
      closing = true;
      for (const p of peers) p.destroy();
      server.close();
    },
    onPeerLost: (listener) => {
      peerLost = listener;
    },
  };
}

function connectOnce(m: Multinode): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: m.masterAddr, port: m.masterPort });
    const fail = () => {
      socket.destroy();
      resolve(undefined);
    };
    socket.setTimeout(1_000, fail);
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.setTimeout(0);
      socket.removeListener('error', fail);
      socket.on('error', () => undefined);
      resolve(socket);
    });
  });
}

/** A rank > 0: connects to the store until the timeout, then waits for the group to form. */
async function joinStore(m: Multinode): Promise<ProcessGroup> {
  const deadline = Date.now() + m.timeoutS * 1000;
  const timedOut = () =>
    new FatalExit(
      traceback(
        [frames.engineCore, distributedFrame],
        `torch.distributed.DistNetworkError: The client socket has timed out after ${m.timeoutS * 1000}ms while trying to connect to (${m.masterAddr}, ${m.masterPort}).`,
      ),
    );
  for (;;) {
    const socket = await connectOnce(m);
    if (socket) {
      socket.write(`${JSON.stringify({ rank: m.rank })}\n`);
      const ready = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
        socket.once('data', () => {
          clearTimeout(timer);
          resolve(true);
        });
        socket.once('close', () => {
          clearTimeout(timer);
          resolve(false);
        });
      });
      if (ready) return { close: () => socket.destroy(), onPeerLost: () => undefined };
      socket.destroy();
    }
    if (Date.now() >= deadline) throw timedOut();
    await new Promise((r) => setTimeout(r, Math.min(RETRY_MS, Math.max(0, deadline - Date.now()))));
  }
}

/** Every rank's rendezvous: rank 0 serves the store, the others join it. */
export function rendezvous(m: Multinode): Promise<ProcessGroup> {
  return m.rank === 0 ? serveStore(m) : joinStore(m);
}
