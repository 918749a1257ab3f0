// The launch backend's rules: `serve.backend: ray` (a Ray cluster in Docker, vLLM placed over it) or
// `multiproc` (vLLM's own multi-node mode: one `vllm serve --nnodes N --node-rank R` per host, no Ray). Pure:
// the schema runs these checks, and it is imported by workflows.
import type { SpecIssue } from './errors.js';
import { multiprocOwnedArgIssues } from './owned-flags.js';

export const launchBackends = ['ray', 'multiproc'] as const;
export type LaunchBackend = (typeof launchBackends)[number];

/** torch.distributed's timeout for a multiproc launch when the spec sets none (vLLM's own is 30 min on gloo). */
export const defaultDistributedTimeout = '2m';

/** Why a multiproc deploy shows the Ray steps skipped: the workflow's progress and the postmortem both say it. */
export const multiprocSkipsRay = 'serve.backend multiproc: vLLM runs its own multi-node mode, no Ray cluster';

export const rayOnlySteps = ['startRayHead', 'startRayWorkers', 'verifyRayCluster'] as const;

/** The backend a spec as written asks for (a spec the report reads may be invalid: then ray, the default). */
export function backendOfInput(input: unknown): LaunchBackend {
  return isRecord(input) && isRecord(input.serve) && input.serve.backend === 'multiproc'
    ? 'multiproc'
    : 'ray';
}

/**
 * The fields of the `ray` block that only a Ray cluster reads, with their defaults; the other fields describe any
 * rank's container. The default itself passes: a parsed spec carries it, and the CLI sends the parsed spec to the
 * workflow, which validates it again.
 */
export const rayOnlyFields = { port: 6379, verifyTimeout: '90s' } as const;

const multiprocOnlyFields = ['masterPort', 'distributedTimeout'] as const;

/** `--pipeline-parallel-size N` / `-pp N` (or `=N`) in the serve args; 1 when absent or unreadable. */
export function pipelineParallelSize(args: readonly string[]): number {
  let size = 1;
  args.forEach((arg, i) => {
    const m = /^(?:--pipeline-parallel-size|-pp)(?:=(.*))?$/.exec(arg);
    if (!m) return;
    const n = Number(m[1] ?? args[i + 1]);
    if (Number.isInteger(n) && n > 0) size = n;
  });
  return size;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checked on the spec as written, before defaults fill `ray.port` and `ray.verifyTimeout` in: a Ray-only field
 * the user set for a multiproc launch would be silently ignored, so it is refused.
 */
export function writtenFieldIssues(raw: unknown): SpecIssue[] {
  if (!isRecord(raw) || !isRecord(raw.serve)) return [];
  const backend = raw.serve.backend ?? 'ray';
  const issues: SpecIssue[] = [];
  if (backend === 'multiproc' && isRecord(raw.ray)) {
    for (const [field, byDefault] of Object.entries(rayOnlyFields)) {
      const value = raw.ray[field];
      if (value !== undefined && value !== byDefault) {
        issues.push({
          path: ['ray', field],
          message: `${JSON.stringify(value)} is a Ray setting, and serve.backend: multiproc starts no Ray cluster (vLLM's own multi-node mode), so it would be ignored: remove ray.${field}, or set serve.backend: ray`,
        });
      }
    }
  }
  if (backend === 'ray') {
    for (const field of multiprocOnlyFields) {
      if (raw.serve[field] !== undefined) {
        issues.push({
          path: ['serve', field],
          message: `is read only by serve.backend: multiproc (vLLM's own multi-node mode); remove serve.${field}, or set serve.backend: multiproc`,
        });
      }
    }
  }
  return issues;
}

/** The parts of a parsed spec the multiproc rules read (the schema imports this module, so not its types). */
export interface BackendShape {
  hosts: readonly unknown[];
  gpu: { perHost: number };
  ray: { port: number };
  serve: {
    backend: LaunchBackend;
    port: number;
    tensorParallelSize: number;
    args: readonly string[];
    masterPort?: number | undefined;
  };
}

/**
 * What the multiproc launch needs of a parsed spec: a master port, serve.args that leave the flags it sets alone,
 * and one worker per GPU of the cluster.
 */
export function multiprocIssues(spec: BackendShape): SpecIssue[] {
  if (spec.serve.backend !== 'multiproc') return [];
  const issues: SpecIssue[] = [];
  const { masterPort, port, tensorParallelSize: tp } = spec.serve;
  if (masterPort === undefined) {
    issues.push({
      path: ['serve', 'masterPort'],
      message:
        "not set: serve.backend: multiproc needs the port where rank 0 (on the head) listens for the other ranks (torch.distributed's store), e.g. serve.masterPort: 29501",
    });
  } else if (masterPort === port) {
    issues.push({
      path: ['serve', 'masterPort'],
      message: `${masterPort} is also serve.port: rank 0's API server and its torch.distributed store would both listen on it on the head; pick another port (e.g. 29501)`,
    });
  }
  for (const { index, message } of multiprocOwnedArgIssues(spec.serve.args))
    issues.push({ path: ['serve', 'args', index], message });
  const pp = pipelineParallelSize(spec.serve.args);
  const workers = spec.hosts.length * spec.gpu.perHost;
  if (tp * pp !== workers) {
    const fit = workers % pp === 0 ? ` Set serve.tensorParallelSize to ${workers / pp},` : '';
    issues.push({
      path: ['serve', 'tensorParallelSize'],
      message: `${tp} × pipeline parallel ${pp} = ${tp * pp} workers, but serve.backend: multiproc runs one worker on every GPU of every host (${spec.hosts.length} hosts × gpu.perHost ${spec.gpu.perHost} = ${workers}), and every rank is given the same sizes.${fit} or change gpu.perHost or the hosts.`,
    });
  }
  return issues;
}
