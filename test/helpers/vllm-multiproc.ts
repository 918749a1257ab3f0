// How one rank of vLLM's own multi-node mode (no Ray) is started: its `vllm serve` argv and the env it needs.
// Found by running vLLM 0.32's CPU build across two simulated hosts (test/real/real-multinode.test.ts); meant to
// move into liftoff's multiproc launch backend (issue 17) as it is.
//
// What made it work, against a first try that failed at engine start: rank 1 must run the real `vllm serve` CLI.
// `python -m vllm.entrypoints.openai.api_server` accepts `--headless` and ignores it, so the follower built an API
// server and a whole engine of its own, which died on `AssertionError: collective_rpc should not be called on
// follower node`. The CLI's `serve --headless` runs only the rank's workers ("Launching vLLM … headless multiproc
// executor, with head node address …").

/** One rank of a multi-node launch. Every rank gets the same parallel sizes, master and model. */
export interface MultiprocRank {
  model: string;
  /** 0 serves the API; the others run headless, their workers only. */
  nodeRank: number;
  nnodes: number;
  /** Across all nodes: tensor × pipeline parallel must equal the cluster's total worker count. */
  tensorParallelSize: number;
  /** Rank 0's address on the cluster network, where its torch.distributed store listens. */
  masterAddr: string;
  masterPort: number;
  /** This host's own address on the cluster network. */
  hostIp: string;
  /** This host's interface on the cluster network. */
  clusterIface: string;
  /** Rank 0's API port. */
  apiPort: number;
  /**
   * torch.distributed's timeout (init_process_group, hence the connect to the master's store). Without it a rank
   * that cannot reach the master retries in silence for torch's default (30 min for gloo), printing nothing.
   */
  distributedTimeoutSeconds?: number;
  /** Further `vllm serve` flags (the model's own: context length, eager mode…). */
  args?: readonly string[];
}

/** The argv (from `vllm` on) and the env of one rank's `vllm serve`. */
export function multiprocRankCommand(r: MultiprocRank): { argv: string[]; env: Record<string, string> } {
  const argv = [
    'vllm',
    'serve',
    r.model,
    '--nnodes',
    String(r.nnodes),
    '--node-rank',
    String(r.nodeRank),
    '--master-addr',
    r.masterAddr,
    '--master-port',
    String(r.masterPort),
    '--tensor-parallel-size',
    String(r.tensorParallelSize),
    // Multiprocessing workers, never Ray's executor: it is vLLM's default for --nnodes > 1 on CPU, but a Ray
    // that is initialised in a placement group (as in liftoff's Ray images) would be picked instead, and
    // vLLM's CPU build refuses Ray (`current platform cpu does not support ray`).
    '--distributed-executor-backend',
    'mp',
    ...(r.distributedTimeoutSeconds === undefined
      ? []
      : ['--distributed-timeout-seconds', String(r.distributedTimeoutSeconds)]),
    // Rank 0 serves the OpenAI API; the other ranks run their workers only, no API server and no engine.
    ...(r.nodeRank === 0 ? ['--port', String(r.apiPort)] : ['--headless']),
    ...(r.args ?? []),
  ];
  const env = {
    // The address this rank gives the others for vLLM's message queues (ZMQ). Unset, vLLM guesses it from the
    // route to 8.8.8.8: the management network's address, or 0.0.0.0 on a host with no default route (vLLM's get_ip(); not
    // tried without it here).
    VLLM_HOST_IP: r.hostIp,
    // The interface gloo (torch.distributed on CPU) binds its connections to. Unset, gloo takes the address the
    // host's name resolves to: loopback here (as with Ubuntu's `127.0.1.1 hostname` line in /etc/hosts), so rank 0
    // offers 127.0.0.1 and rank 1 fails with `Gloo connectFullMesh failed … Connection refused,
    // remote=[127.0.0.1]:…` (seen without it). Each host has a management and a cluster interface: name the latter.
    GLOO_SOCKET_IFNAME: r.clusterIface,
  };
  return { argv, env };
}
