// A simulated host's folder, and the state the reference case found after a reboot: enabled services
// and old containers that hold the GPUs.
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { normaliseImage } from './tools/docker/state.js';
import {
  paths,
  refreshMeminfo,
  writeFaults,
  writeJson,
  type GpuFlavour,
  type HostConfig,
} from './host-state.js';
import type { RunResult } from './processes.js';

export const referenceImages = ['hellohal2064/vllm-qwen3.5-gb10', 'vllm/vllm-openai:latest'];
export const referenceModelRepo = 'models--Qwen--Qwen3.5-122B-A10B-FP8';
export const referenceModelDir = `/home/aurora/.cache/huggingface/hub/${referenceModelRepo}`;
/** A made-up but well-formed snapshot hash; the HF cache keeps files under snapshots/<commit>/. */
const snapshotHash = '6f1c0a4e2b7d9a3c5e8f0b1d2c4a6e8f0a1b3c5d';

export const defaultVllmPace: HostConfig['vllm'] = {
  shards: 39,
  shardSeconds: 0.5,
  graphCaptureSeconds: 2,
  memoryMiB: 96073,
};

export function gpuMemoryMiB(flavour: GpuFlavour): number {
  return flavour === 'gb10' ? 121690 : 143771;
}

/**
 * Creates the folder layout the tools expect (host-state.ts), the fake /proc/meminfo, a home for
 * root, and the model weights under /home. modelDirs in `config` are paths as the host sees them.
 */
export function writeHostFolder(
  hostDir: string,
  config: HostConfig,
  modelDirOnDisk: (modelDir: string) => string,
): void {
  for (const dir of [paths.units, paths.containers, paths.gpu, paths.ray, paths.home]) {
    mkdirSync(dir(hostDir), { recursive: true });
  }
  mkdirSync(join(hostDir, 'roothome'), { recursive: true });
  writeJson(paths.config(hostDir), config);
  writeFaults(hostDir, {});
  writeFileSync(paths.launches(hostDir), '');
  refreshMeminfo(hostDir);
  for (const modelDir of config.modelDirs) writeModelDir(modelDirOnDisk(modelDir), config.vllm.shards);
  for (const image of config.images) writeImageSite(hostDir, image, referenceImageVersions);
  writeLogind(hostDir, referenceLogind);
}

/**
 * Bytes of each simulated shard: its 8-byte header length, a small JSON header, then tensor data. The header is
 * a small part of the shard, as in a real one, so that a shard cut in half falls short of the index's total_size.
 */
export const simShardBytes = 4096;
const simShardHeaderBytes = 16;

export function shardFileName(i: number, count: number): string {
  return `model-${String(i).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.safetensors`;
}

/** The snapshot folder of a model folder written by writeModelDir, where the shards' links live. */
export function snapshotDirOf(modelDir: string): string {
  return join(modelDir, 'snapshots', snapshotHash);
}

/**
 * An HF cache entry as huggingface_hub writes it: content in blobs/<sha256>, the snapshot's files symbolic
 * links to them. Every shard the index names is there and non-empty, and the index's total_size is their
 * tensor bytes, so the weights check of preflight has something true to compare.
 */
export function writeModelDir(dir: string, shards: number): void {
  const snapshot = snapshotDirOf(dir);
  mkdirSync(snapshot, { recursive: true });
  mkdirSync(join(dir, 'refs'), { recursive: true });
  mkdirSync(join(dir, 'blobs'), { recursive: true });
  writeFileSync(join(dir, 'refs', 'main'), snapshotHash);
  const config = {
    architectures: ['Qwen3_5MoeForConditionalGeneration'],
    model_type: 'qwen3_5_moe',
    torch_dtype: 'bfloat16',
    quantization_config: { quant_method: 'fp8', fmt: 'e4m3', weight_block_size: [128, 128] },
  };
  writeFileSync(join(snapshot, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  const count = Math.max(1, shards);
  const weightMap: Record<string, string> = {};
  for (let i = 1; i <= count; i++) {
    const name = shardFileName(i, count);
    weightMap[`model.layers.${i - 1}.mlp.experts.weight`] = name;
    const content = Buffer.alloc(simShardBytes, i % 251);
    const blob = createHash('sha256').update(content).digest('hex');
    writeFileSync(join(dir, 'blobs', blob), content);
    rmSync(join(snapshot, name), { force: true });
    symlinkSync(join('..', '..', 'blobs', blob), join(snapshot, name));
  }
  const totalSize = count * (simShardBytes - simShardHeaderBytes);
  writeFileSync(
    join(snapshot, 'model.safetensors.index.json'),
    `${JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }, null, 2)}\n`,
  );
}

/** The versions installed in every simulated image (sim/disagree.ts changes one host's). */
export const referenceImageVersions = { python: '3.12.3', ray: '2.49.1', vllm: '0.11.0' } as const;

/**
 * What a container's python3 finds on its PYTHONPATH: dist-info folders for ray and vllm, as pip installs them,
 * and a sitecustomize that makes the machine's python3 report the image's Python version (sys.version).
 */
export function writeImageSite(
  hostDir: string,
  image: string,
  versions: { python: string; ray: string; vllm: string },
): void {
  const site = paths.imageSite(hostDir, normaliseImage(image));
  rmSync(site, { recursive: true, force: true });
  const { python, ...packages } = versions;
  for (const [name, version] of Object.entries(packages)) {
    const info = join(site, `${name}-${version}.dist-info`);
    mkdirSync(info, { recursive: true });
    writeFileSync(join(info, 'METADATA'), `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`);
  }
  writeFileSync(
    join(site, 'sitecustomize.py'),
    `import sys\nsys.version = ${JSON.stringify(python)} + sys.version[len(sys.version.split()[0]):]\n`,
  );
}

/** logind as the reference hosts have it: RemoveIPC=yes (systemd's default), the session's user root. */
export const referenceLogind = { removeIpc: true, uid: 0, name: 'root', linger: false };

export function writeLogind(hostDir: string, state: typeof referenceLogind): void {
  writeFileSync(
    paths.logind(hostDir),
    [
      `RemoveIPC=${state.removeIpc ? 'yes' : 'no'}`,
      `UID=${state.uid}`,
      `Name=${state.name}`,
      `Linger=${state.linger ? 'yes' : 'no'}`,
      '',
    ].join('\n'),
  );
}

/** Runs a simulated tool as if on the host (its namespaces, its env). */
export type HostRunner = (args: string[]) => Promise<RunResult>;

export const referenceUnits = [
  'vllm-cluster.service',
  'vllm-proxy.service',
  'vllm-embeddings.service',
  'vllm-reranker.service',
];

/**
 * The command line each reference unit shows as its ExecStart, as on the reference site: the multi-node model, a
 * LiteLLM proxy in front of it, an embeddings server and a reranker, each a `docker run` of its container.
 */
export const referenceUnitCommandLines: Record<string, string[]> = {
  'vllm-cluster.service': [
    ...'/usr/bin/docker run --rm --name vllm_node --gpus all --network host --ipc host --shm-size 64g'.split(
      ' ',
    ),
    ...'-v /home/aurora/.cache/huggingface:/root/.cache/huggingface hellohal2064/vllm-qwen3.5-gb10'.split(
      ' ',
    ),
    ...'vllm serve Qwen/Qwen3.5-122B-A10B-FP8 --tensor-parallel-size 2 --distributed-executor-backend ray'.split(
      ' ',
    ),
    ...'--port 30000 --gpu-memory-utilization 0.85'.split(' '),
  ],
  'vllm-proxy.service': [
    ...'/usr/bin/docker run --rm --name vllm_proxy --network host --entrypoint litellm'.split(' '),
    ...'-v /home/aurora/litellm/config.yaml:/app/config.yaml:ro ghcr.io/berriai/litellm:main-stable'.split(
      ' ',
    ),
    ...'--config /app/config.yaml --port 4000'.split(' '),
  ],
  'vllm-embeddings.service': [
    ...'/usr/bin/docker run --rm --name vllm_embeddings --gpus all --network host'.split(' '),
    ...'-v /home/aurora/.cache/huggingface:/root/.cache/huggingface vllm/vllm-openai:latest'.split(' '),
    ...'vllm serve BAAI/bge-m3 --port 8001 --gpu-memory-utilization 0.05'.split(' '),
  ],
  'vllm-reranker.service': [
    ...'/usr/bin/docker run --rm --name reranker --gpus all --network host'.split(' '),
    ...'-v /home/aurora/.cache/huggingface:/root/.cache/huggingface vllm/vllm-openai:latest'.split(' '),
    ...'vllm serve BAAI/bge-reranker-v2-m3 --port 8002 --gpu-memory-utilization 0.04'.split(' '),
  ],
};

export interface SeedContainer {
  name: string;
  image: string;
  mib: number;
}

/** vllm_node holds most of the GPU; the two small models sit beside it, as on the reference hosts. */
export function referenceContainers(flavour: GpuFlavour): SeedContainer[] {
  const total = gpuMemoryMiB(flavour);
  return [
    { name: 'vllm_node', image: 'hellohal2064/vllm-qwen3.5-gb10', mib: Math.round(total * 0.7) },
    { name: 'reranker', image: 'vllm/vllm-openai:latest', mib: 6144 },
    { name: 'vllm_embeddings', image: 'vllm/vllm-openai:latest', mib: 4096 },
  ];
}

function check(what: string, res: RunResult): void {
  if (res.code !== 0)
    throw new Error(`seeding: ${what} exited ${res.code}: ${(res.stderr || res.stdout).trim()}`);
}

/**
 * Units are installed by writing their state (what a unit file on disk would be), then started with
 * the simulated systemctl; containers are started with the simulated docker, so their processes are
 * real process groups on the host.
 */
export async function seedReferenceState(
  hostDir: string,
  config: HostConfig,
  runOnHost: HostRunner,
  runFlags: string[] = ['--gpus', 'all'],
): Promise<void> {
  for (const unit of referenceUnits) {
    writeJson(join(paths.units(hostDir), `${unit}.json`), {
      active: false,
      enabled: true,
      execStart: 'exec sleep infinity',
      ...(referenceUnitCommandLines[unit] ? { commandLine: referenceUnitCommandLines[unit] } : {}),
    });
  }
  check('systemctl start', await runOnHost(['systemctl', 'start', ...referenceUnits]));
  for (const c of referenceContainers(config.flavour)) {
    // Every GPU: a tensor-parallel server holds memory on each device it spans.
    const entry = ['gpu-hog', '--mib', String(c.mib), '--name', 'python3', '--gpu', 'all'];
    check(
      `docker run ${c.name}`,
      await runOnHost(['docker', 'run', '-d', '--name', c.name, ...runFlags, c.image, ...entry]),
    );
  }
}
