// A liftoff spec for a running simulated cluster: what a user would write for real hosts.
import type { SimCluster } from './cluster.js';
import { simContainerVolumes } from './real-docker.js';
import { realToolVolumes } from './real-tools.js';

export interface SimSpecOptions {
  cluster?: string;
  /** Hosts not reachable from the control host go through the head. */
  jumpThroughHead?: boolean;
}

export function simClusterSpec(sim: SimCluster, opts: SimSpecOptions = {}) {
  const head = sim.hosts[0];
  if (!head) throw new Error('simulated cluster has no hosts');
  return {
    cluster: opts.cluster ?? 'sim',
    ssh: { user: sim.sshUser, privateKeyPath: sim.privateKeyPath, knownHostsPath: sim.knownHostsPath },
    hosts: sim.hosts.map((h, i) => ({
      name: h.name,
      address: h.address,
      ...(h.sshPort !== 22 ? { port: h.sshPort } : {}),
      clusterIp: h.clusterIp,
      role: i === 0 ? ('head' as const) : ('worker' as const),
      ...(!h.reachableFromControl || (opts.jumpThroughHead && i > 0) ? { jumpHost: head.name } : {}),
    })),
  };
}

/** A full deploy spec for the simulated cluster, shaped like examples/spark-qwen35.yaml. */
export function simDeploySpec(sim: SimCluster, opts: SimSpecOptions = {}) {
  const base = simClusterSpec(sim, opts);
  return {
    ...base,
    cleanup: {
      services: [
        'vllm-cluster.service',
        'vllm-proxy.service',
        'vllm-embeddings.service',
        'vllm-reranker.service',
      ],
      disableServices: true,
      containers: ['vllm_node', 'reranker', 'vllm_embeddings'],
    },
    gpu: { perHost: 1, clearTimeout: '30s' },
    ray: {
      image: 'hellohal2064/vllm-qwen3.5-gb10',
      container: 'vllm_qwen35',
      port: 6379,
      env: {
        RAY_memory_monitor_refresh_ms: '0',
        NCCL_SOCKET_IFNAME: sim.hosts[0]?.clusterIface ?? 'enp1s0f1np1',
        GLOO_SOCKET_IFNAME: sim.hosts[0]?.clusterIface ?? 'enp1s0f1np1',
      },
      // On real Docker, also the mounts through which the image's ray and vllm run the simulated tools, or the
      // real ones in a real-tools cluster.
      volumes: [
        '/home/aurora/.cache/huggingface:/root/.cache/huggingface',
        ...(sim.realTools ? realToolVolumes(sim) : sim.docker === 'real' ? simContainerVolumes(sim) : []),
      ],
      verifyTimeout: '30s',
    },
    serve: {
      model: 'Qwen/Qwen3.5-122B-A10B-FP8',
      port: 30000,
      tensorParallelSize: sim.hosts.length,
      args: ['--gpu-memory-utilization', '0.85', '--max-model-len', '32768'],
      env: { VLLM_ENGINE_READY_TIMEOUT_S: '1800' },
      logPath: '/home/aurora/vllm-qwen35-serve.log',
      loadTimeout: '5m',
      pollInterval: '1s',
      stallTimeout: '30s',
    },
    smoke: { prompt: 'Reply with one word: ready?', maxTokens: 16 },
    // Tests count launches, sessions and commands on the hosts: a supervisor probing behind them would change
    // those counts. The supervision tests switch it on with their own settings.
    supervise: { enabled: false },
    // The failure tests look at a failed deploy as it failed (its diagnostics, its teardown): an automatic
    // rollback would replace it with the known-good's deploy. test/e2e/rollback.test.ts switches it on.
    rollout: { onFailure: 'leave' } as { onFailure: 'leave' | 'rollback'; bakeTime?: string },
  };
}
