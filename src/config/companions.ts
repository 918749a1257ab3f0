// The spec's `companions`: single-host services that live beside the multi-node model (an embeddings server, a
// reranker, an OpenAI proxy in front of the main endpoint). The deploy starts them once the main model answers,
// the supervisor probes them every round, and `down` removes them. Pure: workflows validate with it.
import { z } from 'zod';
import { isSecretFlag } from '../shared/secrets.js';
import { specTimeout } from './duration.js';
import { envMap } from './env-schema.js';
import { shown, type SpecIssue } from './errors.js';
import { dangerousMountProblem } from './host-guards.js';
import { maxChars, maxItems } from './limits.js';
import { flagValue } from './vllm-flags.js';
import { argText, cappedList, cappedText, imageRef, port, volume } from './text-fields.js';

/** How a companion shows it does real work: the request its readiness probe and the supervisor send. */
export const companionProbes = ['embeddings', 'rerank', 'chat', 'health'] as const;
export type CompanionProbeKind = (typeof companionProbes)[number];

/** A companion's name: part of its container's name and of the names its commands answer by. */
const companionName = cappedText(24).regex(
  /^[a-z0-9][a-z0-9-]*$/,
  'expected a short name of lowercase letters, digits and "-", such as embeddings',
);

export const companionSchema = z.strictObject({
  name: companionName,
  /** The host it runs on: one of hosts[].name. */
  host: cappedText(63),
  /** Default: ray.image, the cluster's image. */
  image: imageRef.optional(),
  /** What the container runs, as an argv (the image's entrypoint is replaced by its first word). */
  command: cappedList(argText(maxChars.arg), maxItems.args, 'arguments').min(
    1,
    'expected the command as a list, such as ["vllm", "serve", "BAAI/bge-m3", "--port", "8001"]',
  ),
  /** The model id the probe asks for; default: what the command serves (`vllm serve MODEL`, --served-model-name). */
  model: argText(maxChars.model).optional(),
  /** Where it listens on its host's clusterIp. */
  port,
  env: envMap,
  volumes: cappedList(volume, maxItems.volumes, 'volumes').default([]),
  /** What it may take of its host's memory (GB10: unified memory), counted with the main model's in preflight. */
  memoryMiB: z
    .number()
    .int()
    .min(1)
    .max(16 * 1024 * 1024),
  probe: z.enum(companionProbes).default('health'),
  /** Give the container the host's GPUs (a proxy needs none). */
  gpus: z.boolean().default(true),
  /** How long it may take to answer its probe after its container started. */
  readyTimeout: specTimeout('10m').default('10m'),
});

export const companionsSchema = cappedList(companionSchema, maxItems.companions, 'companions').default([]);

export type CompanionSpec = z.infer<typeof companionSchema>;

/** The container a companion runs in, on its host. */
export function companionContainer(name: string): string {
  return `liftoff-${name}`;
}

/** The model a probe asks for: the spec's `model`, else what the command serves; undefined when neither says. */
export function companionModel(c: Pick<CompanionSpec, 'command' | 'model'>): string | undefined {
  if (c.model !== undefined) return c.model;
  const argv = c.command;
  const served = flagValue(argv, 'served-model-name');
  if (served !== undefined) return served;
  const serveAt = argv.findIndex((a, i) => a === 'serve' && /(^|\/)vllm$/.test(argv[i - 1] ?? ''));
  const model = serveAt >= 0 ? argv[serveAt + 1] : undefined;
  return model !== undefined && !model.startsWith('-') ? model : undefined;
}

/** Companions in the order the deploy starts them: the largest memory budget first (vLLM profiles free memory). */
export function startOrder<C extends Pick<CompanionSpec, 'memoryMiB'>>(companions: readonly C[]): C[] {
  return [...companions].sort((a, b) => b.memoryMiB - a.memoryMiB);
}

interface SpecShape {
  hosts: readonly { name: string; role: 'head' | 'worker' }[];
  ray: { container: string; port: number };
  serve: { port: number };
  companions: readonly CompanionSpec[];
}

/** What a companion's fields cannot say alone: its host, its name and port among the others, its probe's model. */
export function companionIssues(spec: SpecShape): SpecIssue[] {
  if (spec.companions.length > maxItems.companions) return [];
  const issues: SpecIssue[] = [];
  const hostNames = spec.hosts.map((h) => h.name);
  const head = spec.hosts.find((h) => h.role === 'head')?.name;
  const names = new Map<string, number>();
  const ports = new Map<string, number>();
  spec.companions.forEach((c, i) => {
    const at = (field: string | number, ...more: (string | number)[]) => ['companions', i, field, ...more];
    const firstNamed = names.get(c.name);
    if (firstNamed !== undefined) {
      issues.push({
        path: at('name'),
        message: `${shown(c.name)} is already companions[${firstNamed}]'s name`,
      });
    } else names.set(c.name, i);
    if (!hostNames.includes(c.host)) {
      issues.push({
        path: at('host'),
        message: `${shown(c.host)} is not one of hosts[].name (${hostNames.join(', ')})`,
      });
    }
    if (companionContainer(c.name) === spec.ray.container) {
      issues.push({
        path: at('name'),
        message: `its container would be named ${companionContainer(c.name)}, which is ray.container: rename one`,
      });
    }
    const key = `${c.host}:${c.port}`;
    const firstOnPort = ports.get(key);
    if (firstOnPort !== undefined) {
      issues.push({
        path: at('port'),
        message: `${c.port} is already companions[${firstOnPort}]'s port on ${c.host}; each needs its own`,
      });
    } else ports.set(key, i);
    if (c.host === head && (c.port === spec.serve.port || c.port === spec.ray.port)) {
      const which = c.port === spec.serve.port ? 'serve.port' : 'ray.port';
      issues.push({
        path: at('port'),
        message: `${c.port} is ${which} on the head (${head}), where the main model listens: pick another port`,
      });
    }
    if (c.probe !== 'health' && companionModel(c) === undefined) {
      issues.push({
        path: at('model'),
        message: `the ${c.probe} probe needs a model id, and the command serves none that liftoff can read (\`vllm serve MODEL\`): set companions[${i}].model`,
      });
    }
    c.command.forEach((arg, j) => {
      if (isSecretFlag(arg)) {
        issues.push({
          path: at('command', j),
          message: `${shown(arg.replace(/=.*$/s, ''))} takes a credential, which would be stored in Temporal's history. Pass it through companions[${i}].env with a reference instead: { fromEnv: NAME } or { fromFile: /path/on/the/worker/host }`,
        });
      }
    });
    c.volumes.forEach((v, j) => {
      const problem = dangerousMountProblem(v);
      if (problem) issues.push({ path: at('volumes', j), message: problem });
    });
  });
  return issues;
}

/** What vLLM takes of a GPU's memory when `--gpu-memory-utilization` is not given. */
export const vllmDefaultGpuMemoryUtilization = 0.9;

/**
 * The `--gpu-memory-utilization` an argv gives vLLM (either spelling, `X` or `=X`, the last one winning: flagValue),
 * or undefined when it gives none, or none vLLM would take (not a fraction in (0, 1]).
 */
export function gpuMemoryUtilizationOf(argv: readonly string[]): number | undefined {
  const text = flagValue(argv, 'gpu-memory-utilization');
  if (text === undefined || !/^(?:\d+(?:\.\d*)?|\.\d+)$/.test(text)) return undefined;
  const value = Number(text);
  return value > 0 && value <= 1 ? value : undefined;
}
