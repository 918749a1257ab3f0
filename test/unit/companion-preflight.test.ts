// Preflight's companion checks (issue 31), pure: the main model's share of a host's memory plus its companions'
// budgets must fit it, a companion's own --gpu-memory-utilization must fit its budget, and each companion's port
// must be free or held by what the deploy stops first. Host answers are shaped as real hosts print them (GB10:
// memory.total [N/A], MemTotal in /proc/meminfo; H200: device memory). A host without companions reads and reports
// exactly what it did before.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { deploySpecSchema, type DeploySpec } from '../../src/config/schema.js';
import { gpuMemoryUtilizationOf } from '../../src/config/companions.js';
import type { ExecResult } from '../../src/ssh/executor.js';
import {
  companionsOnHost,
  preflightInputOf,
  type CompanionsOnHost,
  type PreflightInput,
} from '../../src/steps/preflight-input.js';
import {
  companionImageReads,
  hostMemoryOf,
  judgeCompanionImages,
  judgeCompanionMemory,
  judgeCompanionPorts,
  judgeCompanionVolumes,
} from '../../src/steps/companion-preflight.js';
import { preflightCommands, preflightPlan } from '../../src/steps/preflight.js';
import type { PlanHost } from '../../src/steps/plan-entry.js';
import { failed, ok } from '../helpers/exec-answers.js';

const ref = (name: string) => ({
  target: { name, host: '10.0.0.1', port: 22, user: 'aurora' },
  auth: { privateKeyPath: '/k', knownHostsPath: '/kh' },
});

/** A GB10 (DGX Spark) as driver 580 prints it: no device memory, the GPU's memory is the system's. */
const gb10Gpus = ok('0, NVIDIA GB10, [N/A], [N/A]\n');
const gb10Meminfo = ok(
  [
    'MemTotal:       124610560 kB',
    'MemFree:        118420212 kB',
    'MemAvailable:   120610560 kB',
    'Buffers:          120000 kB',
    'Cached:          2400000 kB',
    'SwapTotal:             0 kB',
    'HugePages_Total:       0',
    '',
  ].join('\n'),
);
/** An 8-GPU H200 tray: 143771 MiB each, one slightly smaller as a mixed host might show. */
const h200Gpus = ok(
  `${Array.from({ length: 8 }, (_, i) => `${i}, NVIDIA H200, 0, ${i === 3 ? 143000 : 143771}`).join('\n')}\n`,
);
const gb10MiB = 121690;

const ssLine = (port: number, pid = 4242, name = 'python3') =>
  `LISTEN 0      4096         0.0.0.0:${port}       0.0.0.0:*    users:(("${name}",pid=${pid},fd=3))\n`;

function inputWith(companions: CompanionsOnHost): PreflightInput {
  return {
    host: ref('spark1'),
    clusterIp: '10.0.2.11',
    image: 'img:1',
    modelPath: '/m',
    volumes: [],
    minFreeDiskGiB: 1,
    companions,
  };
}

const embeddings = {
  index: 0,
  name: 'embeddings',
  port: 8001,
  memoryMiB: 8192,
  utilization: 0.05,
  image: 'img:1',
  volumeHostPaths: [],
};
const onHost = (over: Partial<CompanionsOnHost> = {}): CompanionsOnHost => ({
  cluster: 'prod',
  mainUtilization: { value: 0.85, fromArgs: true },
  cleanupListed: false,
  companions: [embeddings],
  ...over,
});

const memoryAnswers =
  (gpus: ExecResult, meminfo: ExecResult = gb10Meminfo) =>
  (name: string): ExecResult => {
    if (name === 'companion-gpus') return gpus;
    if (name === 'companion-meminfo') return meminfo;
    throw new Error(`not a memory read: ${name}`);
  };

describe('gpuMemoryUtilizationOf', () => {
  it('reads `--gpu-memory-utilization X` and `=X`, the last one winning, and nothing vLLM would refuse', () => {
    assert.equal(gpuMemoryUtilizationOf(['--gpu-memory-utilization', '0.85']), 0.85);
    assert.equal(gpuMemoryUtilizationOf(['--gpu-memory-utilization=0.05', '--port', '8001']), 0.05);
    assert.equal(
      gpuMemoryUtilizationOf(['--gpu-memory-utilization', '0.5', '--gpu-memory-utilization=.7']),
      0.7,
    );
    assert.equal(gpuMemoryUtilizationOf(['--max-model-len', '32768']), undefined);
    assert.equal(gpuMemoryUtilizationOf(['--gpu-memory-utilization']), undefined);
    assert.equal(gpuMemoryUtilizationOf(['--gpu-memory-utilization', 'lots']), undefined);
    assert.equal(gpuMemoryUtilizationOf(['--gpu-memory-utilization', '1.5']), undefined);
    // vLLM's parser takes the underscore spelling as well.
    assert.equal(gpuMemoryUtilizationOf(['--gpu_memory_utilization', '0.3']), 0.3);
    assert.equal(
      gpuMemoryUtilizationOf(['--gpu_memory_utilization=0.2', '--gpu-memory-utilization', '0.4']),
      0.4,
    );
  });
});

describe('the companions preflight input', () => {
  const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;
  const withCompanions = (serveArgs?: string[]): DeploySpec => {
    const spec = deploySpecSchema.parse({
      ...example,
      companions: [
        {
          name: 'embeddings',
          host: 'spark1',
          command: ['vllm', 'serve', 'BAAI/bge-m3', '--port', '8001', '--gpu-memory-utilization', '0.05'],
          port: 8001,
          memoryMiB: 8192,
          probe: 'embeddings',
        },
        {
          name: 'proxy',
          host: 'spark1',
          image: 'litellm:main-stable',
          command: ['litellm', '--config', '/app/config.yaml'],
          volumes: ['/srv/litellm/config.yaml:/app/config.yaml:ro'],
          port: 4000,
          memoryMiB: 1024,
          gpus: false,
        },
      ],
    });
    return serveArgs ? { ...spec, serve: { ...spec.serve, args: serveArgs } } : spec;
  };
  const planHost = (name: string, role: 'head' | 'worker'): PlanHost => ({
    name,
    role,
    clusterIp: '10.0.2.11',
    ref: ref(name),
  });

  it('is there only for a host that runs companions, with the main model share from serve.args', () => {
    const spec = withCompanions();
    assert.deepEqual(companionsOnHost(spec, 'spark1'), {
      cluster: spec.cluster,
      mainUtilization: { value: 0.85, fromArgs: true },
      cleanupListed: true,
      companions: [
        {
          index: 0,
          name: 'embeddings',
          port: 8001,
          memoryMiB: 8192,
          utilization: 0.05,
          image: spec.ray.image,
          volumeHostPaths: [],
        },
        {
          index: 1,
          name: 'proxy',
          port: 4000,
          memoryMiB: 1024,
          image: 'litellm:main-stable',
          volumeHostPaths: ['/srv/litellm/config.yaml'],
        },
      ],
    });
    assert.equal(companionsOnHost(spec, 'spark2'), undefined);
    assert.deepEqual(
      companionsOnHost(withCompanions(['--max-model-len', '8192']), 'spark1')?.mainUtilization,
      {
        value: 0.9,
        fromArgs: false,
      },
    );
  });

  it("adds reads and checks to a companion host's trip only; a spec without companions reads as before", () => {
    const plain = deploySpecSchema.parse({ ...example, companions: [] });
    const spec = withCompanions();
    const head = planHost('spark1', 'head');
    const worker = planHost('spark2', 'worker');
    const names = (s: DeploySpec, h: PlanHost) =>
      preflightCommands(preflightInputOf(s, h, head)).map((c) => c.name);
    assert.equal('companions' in preflightInputOf(plain, head, head), false);
    assert.deepEqual(names(spec, worker), names(plain, worker));
    assert.deepEqual(
      names(spec, head).filter((n) => !names(plain, head).includes(n)),
      [
        'companion-image-0',
        'companion-missing-paths',
        'companion-gpus',
        'companion-meminfo',
        'companion-port-8001',
        'companion-port-4000',
        'companion-containers',
      ],
    );
    assert.match(
      preflightPlan(preflightInputOf(spec, head, head)).intent?.[0] ?? '',
      /companionImages, companionVolumes, companionMemory, companionPorts/,
    );
    assert.doesNotMatch(preflightPlan(preflightInputOf(plain, head, head)).intent?.[0] ?? '', /companion/);
    const containers = preflightCommands(preflightInputOf(spec, head, head)).find(
      (c) => c.name === 'companion-containers',
    );
    assert.equal(
      containers?.command.text,
      `docker ps --filter 'label=liftoff.cluster=${spec.cluster}' --filter label=liftoff.role=companion --format '{{.Label "liftoff.companion"}}'`,
    );
  });
});

describe('the host memory the share is taken of', () => {
  it('is MemTotal on unified memory, where nvidia-smi says [N/A]', () => {
    assert.deepEqual(hostMemoryOf(gb10Gpus, gb10Meminfo), {
      mib: gb10MiB,
      source: 'MemTotal (unified memory)',
    });
  });
  it("is the GPU's memory.total on a discrete GPU, the smallest of several", () => {
    assert.deepEqual(hostMemoryOf(h200Gpus, failed(1, 'not read')), {
      mib: 143000,
      source: "the GPU's memory.total",
    });
  });
  it('cannot be told from a failed nvidia-smi, one that lists no GPU, or a meminfo without MemTotal', () => {
    /** Why the memory cannot be told; fails the test if it could. */
    const why = (gpus: ExecResult, meminfo: ExecResult): string => {
      const memory = hostMemoryOf(gpus, meminfo);
      assert.equal(typeof memory, 'string', JSON.stringify(memory));
      return memory as string;
    };
    assert.match(
      why(
        failed(9, 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'),
        gb10Meminfo,
      ),
      /^nvidia-smi --query-gpu exited with code 9: NVIDIA-SMI has failed/,
    );
    assert.equal(why(ok(''), gb10Meminfo), 'nvidia-smi lists no GPU');
    assert.match(why(gb10Gpus, ok('MemFree: 1 kB\n')), /no MemTotal line/);
    assert.match(why(ok('0, NVIDIA GB10, [N/A], -5\n'), gb10Meminfo), /memory\.total/);
  });
});

describe('companionMemory', () => {
  it('passes when the main share and the budgets fit, with the figures', () => {
    const verdict = judgeCompanionMemory(memoryAnswers(gb10Gpus), inputWith(onHost()));
    assert.equal(verdict?.ok, true, verdict?.detail);
    assert.equal(
      verdict?.detail,
      "the main model's share, 103437 MiB (serve.args --gpu-memory-utilization 0.85, of 121690 MiB, MemTotal (unified memory)) and the companions' 8192 MiB (embeddings 8192 MiB (companions[0].memoryMiB)) fit, 10062 MiB to spare",
    );
  });

  it('refuses budgets that do not fit beside the main share: CompanionsDoNotFit naming the host, the MiB and the fields', () => {
    const big = {
      index: 2,
      name: 'reranker',
      port: 8002,
      memoryMiB: 12288,
      image: 'img:1',
      volumeHostPaths: [],
    };
    const verdict = judgeCompanionMemory(
      memoryAnswers(gb10Gpus),
      inputWith(onHost({ companions: [embeddings, big] })),
    );
    assert.equal(verdict?.ok, false);
    assert.equal(verdict?.failureType, 'CompanionsDoNotFit');
    assert.equal(
      verdict?.detail,
      "on spark1, the main model's share, 103437 MiB (serve.args --gpu-memory-utilization 0.85, of 121690 MiB, MemTotal (unified memory)) and the companions' budgets, 20480 MiB (embeddings 8192 MiB (companions[0].memoryMiB), reranker 12288 MiB (companions[2].memoryMiB)), come to 123917 MiB, 2227 MiB more than the host's 121690 MiB: lower serve.args --gpu-memory-utilization (to at most 0.83 here), or companions[0].memoryMiB, companions[2].memoryMiB",
    );
  });

  it("counts vLLM's default 0.9 when serve.args gives none, and says so", () => {
    const verdict = judgeCompanionMemory(
      memoryAnswers(gb10Gpus),
      inputWith(
        onHost({
          mainUtilization: { value: 0.9, fromArgs: false },
          companions: [{ ...embeddings, memoryMiB: 16384 }],
        }),
      ),
    );
    assert.equal(verdict?.failureType, 'CompanionsDoNotFit');
    assert.match(
      verdict?.detail ?? '',
      /--gpu-memory-utilization 0\.9, vLLM's default as serve\.args gives none/,
    );
  });

  it('uses device memory on a discrete GPU', () => {
    const verdict = judgeCompanionMemory(
      memoryAnswers(h200Gpus, failed(1, '')),
      inputWith(onHost({ mainUtilization: { value: 0.9, fromArgs: true } })),
    );
    assert.equal(verdict?.ok, true, verdict?.detail);
    assert.match(verdict?.detail ?? '', /of 143000 MiB, the GPU's memory\.total/);
  });

  it("refuses a companion whose own --gpu-memory-utilization reserves more than its budget (the issue's 0.05 of a GB10 in 4096 MiB)", () => {
    const small = { ...embeddings, memoryMiB: 4096 };
    const verdict = judgeCompanionMemory(memoryAnswers(gb10Gpus), inputWith(onHost({ companions: [small] })));
    assert.equal(verdict?.ok, false);
    assert.equal(verdict?.failureType, 'CompanionsDoNotFit');
    assert.equal(
      verdict?.detail,
      "on spark1, companion embeddings's own command gives vLLM --gpu-memory-utilization 0.05, 6085 MiB of the host's 121690 MiB, more than its budget companions[0].memoryMiB 4096: raise companions[0].memoryMiB to at least 6085, or lower --gpu-memory-utilization in companions[0].command",
    );
  });

  it('fails untyped (PreflightFailed) when the memory cannot be read', () => {
    const verdict = judgeCompanionMemory(
      memoryAnswers(failed(127, 'bash: nvidia-smi: command not found')),
      inputWith(onHost()),
    );
    assert.equal(verdict?.ok, false);
    assert.equal(verdict?.failureType, undefined);
    assert.match(
      verdict?.detail ?? '',
      /^could not tell the memory of spark1: nvidia-smi --query-gpu exited with code 127/,
    );
  });

  it('is not judged on a host without companions', () => {
    const { companions: _c, ...plain } = inputWith(onHost());
    assert.equal(judgeCompanionMemory(memoryAnswers(gb10Gpus), plain), undefined);
    assert.equal(
      judgeCompanionPorts(() => ok(''), plain),
      undefined,
    );
  });
});

describe('companionPorts', () => {
  const proxy = { index: 1, name: 'proxy', port: 4000, memoryMiB: 1024, image: 'img:1', volumeHostPaths: [] };
  const portAnswers =
    (held: Record<number, string>, running = '') =>
    (name: string): ExecResult => {
      if (name === 'companion-containers') return ok(running);
      const port = /^companion-port-(\d+)$/.exec(name)?.[1];
      if (port === undefined) throw new Error(`not a port read: ${name}`);
      return ok(held[Number(port)] ?? '');
    };

  it('passes free ports', () => {
    const verdict = judgeCompanionPorts(
      portAnswers({}),
      inputWith(onHost({ companions: [embeddings, proxy] })),
    );
    assert.deepEqual(verdict, {
      ok: true,
      detail: "embeddings's port 8001 is free; proxy's port 4000 is free",
    });
  });

  it('passes a port its own running container holds, saying it is checked again after the stop', () => {
    const verdict = judgeCompanionPorts(
      portAnswers({ 8001: ssLine(8001) }, 'embeddings\n'),
      inputWith(onHost()),
    );
    assert.equal(verdict?.ok, true);
    assert.match(
      verdict?.detail ?? '',
      /^embeddings's port 8001 is in use now \(LISTEN .*0\.0\.0\.0:8001 .*\); its own container \(companion embeddings of cluster prod\) runs there and is replaced, and the port is checked again after the stop, when embeddings starts$/,
    );
  });

  it('passes a held port when spec.cleanup lists what the deploy stops', () => {
    const verdict = judgeCompanionPorts(
      portAnswers({ 8001: ssLine(8001) }, 'reranker\n'),
      inputWith(onHost({ cleanupListed: true })),
    );
    assert.equal(verdict?.ok, true);
    assert.match(verdict?.detail ?? '', /in use now .*the deploy stops what spec\.cleanup lists first/);
  });

  it('refuses a port held by something the deploy does not stop: CompanionPortInUse naming the field, host and listener', () => {
    const verdict = judgeCompanionPorts(
      portAnswers({ 4000: ssLine(4000, 777, 'node') }, 'embeddings\n'),
      inputWith(onHost({ companions: [embeddings, proxy] })),
    );
    assert.equal(verdict?.ok, false);
    assert.equal(verdict?.failureType, 'CompanionPortInUse');
    assert.match(
      verdict?.detail ?? '',
      /^companions\[1\]\.port 4000 is in use on spark1 \(LISTEN .*0\.0\.0\.0:4000 .*users:\(\("node",pid=777,fd=3\)\)\), and the deploy stops nothing that could hold it .*: stop what listens on it, list its service or container in spec\.cleanup, or pick another companions\[1\]\.port$/,
    );
  });

  it('fails untyped when ss cannot tell', () => {
    const verdict = judgeCompanionPorts(
      (name) => (name === 'companion-containers' ? ok('') : failed(127, 'bash: ss: command not found')),
      inputWith(onHost()),
    );
    assert.equal(verdict?.ok, false);
    assert.equal(verdict?.failureType, undefined);
    assert.match(
      verdict?.detail ?? '',
      /could not tell whether companions\[0\]\.port 8001 is free on spark1/,
    );
  });
});

describe('companionImages and companionVolumes', () => {
  const proxy = {
    index: 1,
    name: 'proxy',
    port: 4000,
    memoryMiB: 1024,
    image: 'litellm:main-stable',
    volumeHostPaths: ['/srv/litellm/config.yaml'],
  };
  const reranker = { ...embeddings, index: 2, name: 'reranker', port: 8002, image: 'litellm:main-stable' };

  it('reads each image other than ray.image once, and nothing where every companion uses ray.image', () => {
    assert.deepEqual(
      companionImageReads(inputWith(onHost({ companions: [embeddings, proxy, reranker] }))).map((r) => [
        r.name,
        r.command.text,
      ]),
      [['companion-image-0', "docker image inspect --format '{{.Id}}' -- litellm:main-stable"]],
    );
    assert.deepEqual(companionImageReads(inputWith(onHost())), []);
    assert.equal(
      judgeCompanionImages(() => ok(''), inputWith(onHost())),
      undefined,
    );
  });

  it('refuses a missing companion image, naming every field that uses it and the fix', () => {
    const verdict = judgeCompanionImages(
      () => failed(1, 'Error: No such image: litellm:main-stable'),
      inputWith(onHost({ companions: [embeddings, proxy, reranker] })),
    );
    assert.equal(verdict?.ok, false);
    assert.equal(
      verdict?.detail,
      'image litellm:main-stable (companions[1].image, companions[2].image) is not on spark1 (Error: No such image: litellm:main-stable): run docker pull litellm:main-stable there, or docker load it, or fix companions[1].image, companions[2].image',
    );
    assert.equal(
      judgeCompanionImages(() => ok('sha256:ab\n'), inputWith(onHost({ companions: [proxy] })))?.ok,
      true,
    );
  });

  it('refuses a missing volume host path, naming the companion and its field', () => {
    const answers = (stdout: string) => (name: string) => {
      assert.equal(name, 'companion-missing-paths');
      return ok(stdout);
    };
    const input = inputWith(onHost({ companions: [embeddings, proxy] }));
    const verdict = judgeCompanionVolumes(answers('/srv/litellm/config.yaml\n'), input);
    assert.equal(verdict?.ok, false);
    assert.equal(
      verdict?.detail,
      'missing on spark1: /srv/litellm/config.yaml (companions[1].volumes of proxy). Create them (mkdir -p) or fix companions[1].volumes; docker would create an empty root-owned folder instead',
    );
    assert.equal(judgeCompanionVolumes(answers(''), input)?.ok, true);
    assert.equal(judgeCompanionVolumes(answers(''), inputWith(onHost())), undefined);
  });
});
