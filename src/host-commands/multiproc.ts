// The remote commands of the multiproc backend (serve.backend: multiproc, vLLM's own multi-node mode, no Ray):
// one rank's `vllm serve` argv and env, its container's start, and the reads around it. Shared by the
// activities that run them (src/activities/multiproc.ts) and by `liftoff plan`, which shows them.
//
// The argv and env are the launch that works with vLLM 0.32's real CPU build across two hosts
// (test/real/real-multinode.test.ts deploys it). What that taught, flag by flag, is said below. A rank other than
// 0 must run the real `vllm serve` CLI with `--headless`: `python -m vllm.entrypoints.openai.api_server` accepts
// `--headless` and ignores it, so the follower built an API server and a whole engine of its own, which died on
// `AssertionError: collective_rpc should not be called on follower node`. The CLI's `serve --headless` runs only
// the rank's workers ("Launching vLLM … headless multiproc executor, with head node address …").
import { sh, type RawShell, type RemoteCommand } from '../ssh/quote.js';
import type { EnvTransport } from './env-transport.js';
import { launchLabels, markedLaunchCommand } from './launch.js';
import type { EnvSpec } from '../config/schema.js';
import { parseIpv4Addresses } from '../parsers/ip-addr.js';
import type { HostRef } from '../config/targets.js';

export interface RankCommandInput {
  model: string;
  servedModelName?: string | undefined;
  /** 0 serves the API; the others run headless, their workers only. */
  rank: number;
  nnodes: number;
  /** Across all nodes: tensor × pipeline parallel equals the cluster's total worker count. */
  tensorParallelSize: number;
  /** The head's clusterIp: where rank 0's torch.distributed store listens. */
  masterAddr: string;
  masterPort: number;
  /** Rank 0's API port. */
  port: number;
  distributedTimeoutSeconds: number;
  /** The spec's serve.args (the model's own flags; may carry --pipeline-parallel-size). */
  args: readonly string[];
}

/** The argv after `--entrypoint vllm IMAGE`. Every rank gets the same parallel sizes, master and model. */
export function rankArgv(r: RankCommandInput): string[] {
  return [
    'serve',
    r.model,
    '--nnodes',
    String(r.nnodes),
    '--node-rank',
    String(r.rank),
    '--master-addr',
    r.masterAddr,
    '--master-port',
    String(r.masterPort),
    '--tensor-parallel-size',
    String(r.tensorParallelSize),
    // Multiprocessing workers, never Ray's executor: it is vLLM's default for --nnodes > 1 on CPU, but in an
    // image where Ray is initialised in a placement group vLLM would pick Ray, and its CPU build refuses Ray
    // (`current platform cpu does not support ray`).
    '--distributed-executor-backend',
    'mp',
    // torch.distributed's timeout (init_process_group, hence the connect to the master's store). Without it a
    // rank that cannot reach the master retries in silence for torch's default (30 min on gloo), printing nothing.
    '--distributed-timeout-seconds',
    String(r.distributedTimeoutSeconds),
    // Rank 0 serves the OpenAI API; the other ranks run their workers only, no API server and no engine.
    ...(r.rank === 0 ? ['--port', String(r.port)] : ['--headless']),
    ...(r.servedModelName ? ['--served-model-name', r.servedModelName] : []),
    ...r.args,
  ];
}

/**
 * A rank's env: its own cluster address and the interface that carries it, then the spec's values (ray.env,
 * serve.env), which win.
 * - VLLM_HOST_IP: the address this rank gives the others for vLLM's message queues (ZMQ). Unset, vLLM guesses it
 *   from the route to 8.8.8.8: the management network's address, or 0.0.0.0 on a host with no default route.
 * - GLOO_SOCKET_IFNAME: the interface gloo (torch.distributed on CPU) binds its connections to. Unset, gloo takes
 *   the address the host's name resolves to: loopback with Ubuntu's `127.0.1.1 hostname` line in /etc/hosts, so
 *   rank 0 offered 127.0.0.1 and rank 1 failed with `Gloo connectFullMesh failed … Connection refused,
 *   remote=[127.0.0.1]:…` (seen with the real vLLM). Each host has a management and a cluster interface: the
 *   latter is named, when found.
 */
export function rankEnv(
  clusterIp: string,
  clusterIface: string | undefined,
  specValues: Record<string, string> = {},
): Record<string, string> {
  return {
    VLLM_HOST_IP: clusterIp,
    ...(clusterIface ? { GLOO_SOCKET_IFNAME: clusterIface } : {}),
    ...specValues,
  };
}

/** The interface of `ip -o -4 addr show` that carries `ip`; undefined when none does. */
export const interfaceOf = (ipAddrOutput: string, ip: string): string | undefined =>
  parseIpv4Addresses(ipAddrOutput).find((a) => a.address === ip)?.iface;

/** Lines of a headless rank's log each load poll returns. */
export const rankTailLines = 30;

/** What listens on a TCP port (`ss`'s lines; empty when nothing does). */
export const listenerCommand = (port: number): RemoteCommand => sh`ss -Hltn ${`sport = :${port}`}`;

/** This cluster's running rank-0 containers, by label: an earlier launch's rank 0 may hold the master port. */
export const rank0ContainersCommand = (cluster: string): RemoteCommand =>
  sh`docker ps --filter ${`label=liftoff.cluster=${cluster}`} --filter label=liftoff.role=rank0 --format ${'{{.Names}}'}`;

/** One rank's start, on which host, with which env: the activity's input, built by rankInput (step-inputs.ts). */
export interface StartRankInput extends RankCommandInput {
  host: HostRef;
  cluster: string;
  launchId: string;
  image: string;
  container: string;
  clusterIp: string;
  /** ray.env then serve.env: a rank's container runs vllm itself, so it gets both. */
  env: EnvSpec[];
  volumes: readonly string[];
  /** This rank's log on its own host (serve.logPath); the container's output is copied there. */
  logPath: string;
}

/** The rank's container, then the copy of its output to the log, as one marked launch (markedLaunchCommand). */
export function rankRunCommand(
  input: StartRankInput,
  transport: EnvTransport,
  startedAt: number | RawShell,
): RemoteCommand {
  const labels = launchLabels(input, `liftoff.role=rank${input.rank}`, 'liftoff.backend=multiproc');
  const run = sh`docker run -d --name ${input.container} --gpus all --network host --ipc host ${labels} ${transport.flags} ${input.volumes.flatMap((v) => ['-v', v])} --entrypoint vllm ${input.image} ${rankArgv(input)} > /dev/null || exit 5`;
  const copy = sh`setsid nohup docker logs -f ${input.container}`;
  return markedLaunchCommand(input, transport, startedAt, sh`${run}; ${copy}`);
}
