// One rank's `vllm serve` in vLLM's own multi-node mode: the argv after `--entrypoint vllm IMAGE` and the env
// its container needs. test/helpers/vllm-multiproc.ts holds the launch found to work with the real vLLM (and
// why each flag and variable is there); test/unit/multiproc-argv.test.ts checks this builder against it.

export interface RankCommandInput {
  model: string;
  servedModelName?: string | undefined;
  /** 0 serves the API; the others run headless, their workers only. */
  rank: number;
  nnodes: number;
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
    // Multiprocessing workers, never Ray's executor, which vLLM would pick in an image where Ray is initialised.
    '--distributed-executor-backend',
    'mp',
    // Without it a rank that cannot reach the master retries in silence for torch's default (30 min on gloo).
    '--distributed-timeout-seconds',
    String(r.distributedTimeoutSeconds),
    ...(r.rank === 0 ? ['--port', String(r.port)] : ['--headless']),
    ...(r.servedModelName ? ['--served-model-name', r.servedModelName] : []),
    ...r.args,
  ];
}

/**
 * The env a rank needs besides the spec's: its own cluster address for vLLM's message queues, and the interface
 * that carries it for gloo (unset, gloo binds where the host's name resolves: often loopback). A value the spec
 * sets wins.
 */
export function rankEnv(clusterIp: string, clusterIface: string | undefined): Record<string, string> {
  return { VLLM_HOST_IP: clusterIp, ...(clusterIface ? { GLOO_SOCKET_IFNAME: clusterIface } : {}) };
}

/** The interface of `ip -o -4 addr show` that carries `ip`; undefined when none does. */
export function interfaceOf(ipAddrOutput: string, ip: string): string | undefined {
  for (const line of ipAddrOutput.split('\n')) {
    const m = /^\d+:\s+(\S+)\s+inet\s+([0-9.]+)\//.exec(line.slice(0, 512));
    if (m?.[2] === ip) return m[1]?.replace(/@.*$/, '');
  }
  return undefined;
}
