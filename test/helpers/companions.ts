// The reference site's embeddings server and reranker as companions (issue 31's example), for the tests that deploy,
// plan or supervise them. Their budgets cover what their --gpu-memory-utilization reserves of a simulated GB10's
// memory (121,690 MiB: 6,085 and 4,868 MiB), so preflight's companion checks pass them.

export const embeddingsCommand = [
  'vllm',
  'serve',
  'BAAI/bge-m3',
  '--port',
  '8001',
  '--gpu-memory-utilization',
  '0.05',
];
export const rerankerCommand = [
  'vllm',
  'serve',
  'BAAI/bge-reranker-v2-m3',
  '--port',
  '8002',
  '--gpu-memory-utilization',
  '0.04',
];

/** The embeddings server on `host`, with `extra` fields (volumes, a budget) over the example's. */
export function embeddingsCompanion<E extends object>(host: string, extra?: E) {
  return {
    name: 'embeddings',
    host,
    command: embeddingsCommand,
    port: 8001,
    memoryMiB: 6144,
    probe: 'embeddings' as const,
    ...extra,
  };
}

/** The reranker on `host`, with `extra` fields over the example's. */
export function rerankerCompanion<E extends object>(host: string, extra?: E) {
  return {
    name: 'reranker',
    host,
    command: rerankerCommand,
    port: 8002,
    memoryMiB: 5120,
    probe: 'rerank' as const,
    ...extra,
  };
}
