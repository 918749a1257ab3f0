// liftoff init's companions (issue 31): the command lines read from a unit's ExecStart and a container's inspect,
// the companions proposed from them, the questions, and the spec written with them. Pure functions over what hosts
// printed, real-shaped and hostile.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import {
  parseDockerRun,
  parseExecStart,
  readContainerCommandLine,
  readUnitCommandLine,
  shellWords,
} from '../../src/init/command-line.js';
import {
  companionNameOf,
  probeKindOf,
  proposeCompanions,
  type FoundService,
} from '../../src/init/companions.js';
import { confirmCompanions, keepAnswer } from '../../src/init/confirm.js';
import { chooseSpec } from '../../src/init/choose.js';
import { parseGpus, parseMemTotalMiB, type HostFacts } from '../../src/init/probe.js';
import { writeSpecText } from '../../src/init/write-spec.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { referenceUnitCommandLines } from '../../sim/seed.js';
import { rerankerCommand } from '../helpers/companions.js';

/** `systemctl show -p ExecStart --value UNIT` on systemd 255 for a unit running `argv`. */
const execStart = (argv: string[]): string =>
  `{ path=${argv[0]} ; argv[]=${argv.join(' ')} ; ignore_errors=no ; start_time=[Mon 2026-12-07 09:12:01 UTC] ; stop_time=[n/a] ; pid=4242 ; code=(null) ; status=0/0 }\n`;

const embeddingsUnit = referenceUnitCommandLines['vllm-embeddings.service'] ?? [];
const rerankerUnit = referenceUnitCommandLines['vllm-reranker.service'] ?? [];
const proxyUnit = referenceUnitCommandLines['vllm-proxy.service'] ?? [];
const clusterUnit = referenceUnitCommandLines['vllm-cluster.service'] ?? [];

/** `docker inspect --format containerCommandLineFormat` of a container. */
const inspected = (
  image: string,
  entrypoint: string[] | null,
  cmd: string[] | null,
  binds: string[] | null,
) =>
  [image, entrypoint, cmd, binds, [{ Driver: '', Count: -1 }]].map((v) => JSON.stringify(v)).join('\n') +
  '\n';

describe('init reads command lines', () => {
  it("reads a unit's docker run: the image, the command after it, its mounts and GPUs", () => {
    const read = readUnitCommandLine(execStart(embeddingsUnit));
    assert.deepEqual(read?.argv, embeddingsUnit);
    assert.deepEqual(read?.container, {
      image: 'vllm/vllm-openai:latest',
      name: 'vllm_embeddings',
      command: ['vllm', 'serve', 'BAAI/bge-m3', '--port', '8001', '--gpu-memory-utilization', '0.05'],
      entrypointKnown: true,
      volumes: ['/home/aurora/.cache/huggingface:/root/.cache/huggingface'],
      gpus: true,
      env: false,
    });
    // ExecStart= without --value, and --entrypoint: the program comes first.
    const proxy = readUnitCommandLine(`ExecStart=${execStart(proxyUnit)}`);
    assert.deepEqual(proxy?.container?.command, [
      'litellm',
      '--config',
      '/app/config.yaml',
      '--port',
      '4000',
    ]);
    assert.equal(proxy?.container?.gpus, false);
  });

  it('reads a shell -c script as the shell would, and docker run options in their forms', () => {
    const argv = parseExecStart(
      execStart([
        '/bin/bash',
        '-c',
        `exec docker run -d --rm --name=emb -e HF_TOKEN -v/data:/data --gpus=all vllm/vllm-openai:v0.11.0 vllm serve "BAAI/bge-m3" --served-model-name 'bge m3' --port=8001`,
      ]),
    );
    assert.deepEqual(argv?.slice(0, 3), ['docker', 'run', '-d']);
    const run = argv && parseDockerRun(argv);
    assert.equal(run?.name, 'emb');
    assert.equal(run?.env, true);
    assert.deepEqual(run?.volumes, ['/data:/data']);
    assert.deepEqual(run?.command, [
      'vllm',
      'serve',
      'BAAI/bge-m3',
      '--served-model-name',
      'bge m3',
      '--port=8001',
    ]);
    assert.deepEqual(shellWords(`a\\ b "c\\"d" 'e\\f' g\\\nh`), ['a b', 'c"d', 'e\\f', 'gh']);
    assert.equal(shellWords(`"unterminated`), undefined);
  });

  it("reads a container's entrypoint and command from docker inspect", () => {
    const read = readContainerCommandLine(
      'emb',
      inspected('vllm/vllm-openai:latest', ['vllm', 'serve'], ['BAAI/bge-m3', '--port', '8001'], null),
    );
    assert.deepEqual(read?.argv, ['vllm', 'serve', 'BAAI/bge-m3', '--port', '8001']);
    assert.equal(read?.container?.gpus, true);
    assert.deepEqual(read?.container?.volumes, []);
  });

  it('reads nothing from hostile output, within bounds', () => {
    assert.equal(parseExecStart(''), undefined);
    assert.equal(parseExecStart('{ path=/x ; argv[]= ; ignore_errors=no }'), undefined);
    assert.equal(parseExecStart(`{ path=/x ; argv[]=${'a '.repeat(5000)}; ignore_errors=no }`), undefined);
    assert.equal(parseExecStart(`{ path=/x ; argv[]=${'x'.repeat(5000)} ; ignore_errors=no }`), undefined);
    assert.equal(readContainerCommandLine('c', '"img"\n{"a":1}\nnull\nnull\nnull\n'), undefined);
    assert.equal(readContainerCommandLine('c', '"img"\n[1]\nnull\nnull\nnull\n'), undefined);
    assert.equal(readContainerCommandLine('c', '"img"\nnull\nnull\nnull\nnull\n'), undefined);
    assert.equal(readContainerCommandLine('c', `${'['.repeat(100_000)}`), undefined);
    assert.equal(parseDockerRun(['docker', 'run', '--name']), undefined);
    assert.equal(parseDockerRun(['docker', 'ps']), undefined);
    // Adversarial shapes for the regexes run in linear time.
    const long = `{ path=/x ; argv[]=${' ;'.repeat(20_000)}`;
    const start = process.hrtime.bigint();
    parseExecStart(long);
    shellWords('"\\'.repeat(8_000));
    companionNameOf('-'.repeat(50_000));
    assert.ok(Number(process.hrtime.bigint() - start) / 1e6 < 500);
    assert.equal(parseMemTotalMiB('MemTotal:       127535616 kB\n'), 124546);
    assert.equal(parseMemTotalMiB('MemTotal: 99999999999999999 kB'), null);
  });
});

const found = (host: string, kind: FoundService['kind'], name: string, text: string): FoundService => ({
  host,
  kind,
  name,
  read: kind === 'unit' ? readUnitCommandLine(text) : readContainerCommandLine(name, text),
});
const hosts = [
  { name: 'spark1', role: 'head' as const },
  { name: 'spark2', role: 'worker' as const },
];
const memory = [
  { host: 'spark1', mib: 124546, what: "spark1's MemTotal, unified memory" },
  { host: 'spark2', mib: null, what: 'unknown' },
];
const opts = { mainModel: 'Qwen/Qwen3.5-122B-A10B-FP8', hosts, memory, rayContainer: 'liftoff_ray' };

describe('init proposes companions', () => {
  it("offers the site's embeddings, reranker and proxy, not the main model, each unit's container once", () => {
    const choices = proposeCompanions(
      [
        found('spark1', 'unit', 'vllm-cluster.service', execStart(clusterUnit)),
        found('spark1', 'unit', 'vllm-embeddings.service', execStart(embeddingsUnit)),
        found('spark1', 'unit', 'vllm-proxy.service', execStart(proxyUnit)),
        found('spark2', 'unit', 'vllm-reranker.service', execStart(rerankerUnit)),
        // The unit's own container: offered through the unit.
        found(
          'spark1',
          'container',
          'vllm_embeddings',
          inspected('vllm/vllm-openai:latest', null, ['x'], null),
        ),
        // A container that runs no vLLM: cleanup's business only.
        found('spark1', 'container', 'llm-ui', inspected('open-webui:main', ['bash'], ['start.sh'], null)),
      ],
      opts,
    );
    assert.deepEqual(
      choices.proposals.map((p) => p.companion),
      [
        {
          name: 'embeddings',
          host: 'spark1',
          image: 'vllm/vllm-openai:latest',
          command: ['vllm', 'serve', 'BAAI/bge-m3', '--port', '8001', '--gpu-memory-utilization', '0.05'],
          port: 8001,
          memoryMiB: 6228,
          probe: 'embeddings',
          gpus: true,
          volumes: ['/home/aurora/.cache/huggingface:/root/.cache/huggingface'],
        },
        {
          name: 'proxy',
          host: 'spark1',
          image: 'ghcr.io/berriai/litellm:main-stable',
          command: ['litellm', '--config', '/app/config.yaml', '--port', '4000'],
          port: 4000,
          memoryMiB: 4096,
          probe: 'health',
          gpus: false,
          volumes: ['/home/aurora/litellm/config.yaml:/app/config.yaml:ro'],
        },
        {
          name: 'reranker',
          host: 'spark2',
          image: 'vllm/vllm-openai:latest',
          command: rerankerCommand,
          port: 8002,
          memoryMiB: 4096,
          probe: 'rerank',
          gpus: true,
          volumes: ['/home/aurora/.cache/huggingface:/root/.cache/huggingface'],
        },
      ],
    );
    assert.match(
      choices.proposals[1]?.memory.reason ?? '',
      /^PLACEHOLDER: its command sets no --gpu-memory-utilization/,
    );
    assert.match(
      choices.proposals[2]?.memory.reason ?? '',
      /^PLACEHOLDER: the memory of spark2 is not known/,
    );
    assert.deepEqual(
      choices.notOffered.map((n) => [n.source.name, n.reason]),
      [['vllm-cluster.service', 'it serves the main model (Qwen/Qwen3.5-122B-A10B-FP8)']],
    );
  });

  it('keeps credentials out, and refuses what would not validate', () => {
    const choices = proposeCompanions(
      [
        found(
          'spark1',
          'unit',
          'vllm-chat.service',
          execStart([
            '/opt/vllm/bin/vllm',
            'serve',
            'Qwen/Qwen3-8B',
            '--api-key',
            'sk-abcdefghijklmnop1234',
            '--port',
            '8003',
          ]),
        ),
        // On the head, on serve.port: not offered.
        found('spark1', 'unit', 'vllm-main2.service', execStart(['/usr/bin/vllm', 'serve', 'Org/Other'])),
        found('spark1', 'unit', 'vllm-sleep.service', execStart(['/bin/sh', '-c', 'exec sleep infinity'])),
        found('spark1', 'unit', 'vllm-bad.service', 'garbage\n'),
        found('spark2', 'unit', 'vllm-embeddings.service', execStart(embeddingsUnit)),
        found('spark1', 'unit', 'vllm-embeddings.service', execStart(embeddingsUnit)),
      ],
      opts,
    );
    const chat = choices.proposals[0];
    assert.deepEqual(chat?.companion.command, ['vllm', 'serve', 'Qwen/Qwen3-8B', '--port', '8003']);
    assert.equal(chat?.companion.probe, 'chat');
    assert.equal(chat?.companion.image, undefined, "the cluster's image");
    assert.match(chat?.commandLine ?? '', /--api-key \[redacted\] --port 8003$/);
    assert.ok(chat?.notes.some((n) => /left out --api-key/.test(n)));
    assert.deepEqual(
      choices.proposals.map((p) => p.companion.name),
      ['chat', 'embeddings', 'embeddings-spark1'],
    );
    assert.deepEqual(
      choices.notOffered.map((n) => n.source.name),
      ['vllm-main2.service', 'vllm-sleep.service', 'vllm-bad.service'],
    );
    assert.match(
      choices.notOffered[0]?.reason ?? '',
      /would not validate: .*8000 is serve\.port on the head/,
    );
    assert.match(choices.notOffered[1]?.reason ?? '', /runs sleep, neither vLLM nor a container/);
  });

  it('tells the probe from the flags and the name, and the name from the unit', () => {
    const v = (...rest: string[]) => ['vllm', 'serve', ...rest];
    assert.equal(probeKindOf(v('m', '--runner', 'pooling', '--convert', 'embed'), 'm'), 'embeddings');
    assert.equal(probeKindOf(v('m', '--convert', 'classify'), 'm'), 'rerank');
    assert.equal(probeKindOf(v('m', '--task', 'score'), 'm'), 'rerank');
    assert.equal(probeKindOf(v('intfloat/e5-large'), 'intfloat/e5-large'), 'embeddings');
    assert.equal(probeKindOf(v('Qwen/Qwen3-8B'), 'Qwen/Qwen3-8B'), 'chat');
    assert.equal(probeKindOf(['litellm', '--port', '4000'], undefined), 'health');
    assert.equal(companionNameOf('vllm-embeddings.service'), 'embeddings');
    assert.equal(companionNameOf('vllm_embeddings'), 'embeddings');
    assert.equal(companionNameOf('My_Reranker-VLLM.service'), 'my-reranker');
    assert.equal(companionNameOf('vllm-.service'), 'companion');
    assert.equal(companionNameOf(`${'x'.repeat(40)}.service`).length, 24);
  });
});

function host(name: string, more: Partial<HostFacts>): HostFacts {
  return {
    name,
    address: `10.0.0.${name.slice(-1)}`,
    gpus: parseGpus('0, NVIDIA GB10, [N/A]\n'),
    addresses: [],
    rdma: [],
    images: [{ ref: 'vllm/vllm-openai:latest', id: 'aaaa' }],
    models: [{ id: 'Qwen/Qwen3.5-122B-A10B-FP8', cacheDir: '/home/aurora/.cache/huggingface' }],
    units: [],
    containers: [],
    memTotalMiB: 124546,
    commandLines: [],
    ...more,
  };
}

describe('init writes and confirms companions', () => {
  const spark1 = host('spark1', {
    units: ['vllm-cluster.service', 'vllm-embeddings.service', 'vllm-proxy.service'],
    commandLines: [
      { kind: 'unit', name: 'vllm-cluster.service', read: readUnitCommandLine(execStart(clusterUnit)) },
      { kind: 'unit', name: 'vllm-embeddings.service', read: readUnitCommandLine(execStart(embeddingsUnit)) },
      { kind: 'unit', name: 'vllm-proxy.service', read: readUnitCommandLine(execStart(proxyUnit)) },
    ],
  });
  const spark2 = host('spark2', {
    units: ['vllm-cluster.service', 'vllm-reranker.service'],
    commandLines: [
      { kind: 'unit', name: 'vllm-reranker.service', read: readUnitCommandLine(execStart(rerankerUnit)) },
    ],
  });
  const ssh = { user: 'aurora', knownHostsPath: '~/.ssh/known_hosts' };

  it('writes each companion after its found comment, keeps the units in cleanup, and validates', () => {
    const choices = chooseSpec([spark1, spark2], undefined);
    const text = writeSpecText({ cluster: 'lab', ssh, choices, facts: [spark1, spark2], probedAt: 'now' });
    const spec = deploySpecSchema.parse(parse(text));
    assert.deepEqual(
      spec.companions.map((c) => [c.name, c.host, c.port, c.probe, c.memoryMiB]),
      [
        ['embeddings', 'spark1', 8001, 'embeddings', 6228],
        ['proxy', 'spark1', 4000, 'health', 4096],
        ['reranker', 'spark2', 8002, 'rerank', 4982],
      ],
    );
    assert.deepEqual(spec.cleanup.services, [
      'vllm-cluster.service',
      'vllm-embeddings.service',
      'vllm-proxy.service',
      'vllm-reranker.service',
    ]);
    assert.match(
      text,
      /^ {2}# found: unit vllm-embeddings\.service on spark1 running \/usr\/bin\/docker run --rm --name vllm_embeddings .* --gpu-memory-utilization 0\.05; confirm before deploying\n {2}- name: "embeddings"$/m,
    );
    assert.match(
      text,
      /^# not offered: unit vllm-cluster\.service on spark1 running .*: it serves the main model/m,
    );
    assert.match(
      text,
      /^ {4}# PLACEHOLDER: its command sets no --gpu-memory-utilization; set what it takes\n {4}memoryMiB: 4096$/m,
    );
    assert.match(text, /^# WARNING: companion proxy: memoryMiB is a placeholder/m);
  });

  it("takes --gpu-memory-utilization of one GPU's memory on a discrete GPU", () => {
    const h200 = { ...spark1, gpus: parseGpus('0, NVIDIA H200, 143771\n1, NVIDIA H200, 143771\n') };
    const { companions } = chooseSpec([h200], undefined);
    assert.equal(companions.proposals[0]?.companion.memoryMiB, Math.ceil(0.05 * 143771));
    assert.equal(
      companions.proposals[0]?.memory.reason,
      "--gpu-memory-utilization 0.05 of 143771 MiB (spark1's GPU memory)",
    );
  });

  it('asks per service: the default keeps it, "s" only stops it; --no-companions keeps none', async () => {
    const { companions } = chooseSpec([spark1, spark2], undefined);
    const asked: string[] = [];
    const answers = ['', 'maybe', 's', 'yes'];
    const kept = await confirmCompanions(companions, {
      keep: 'ask',
      ask: (q) => {
        asked.push(q);
        return Promise.resolve(answers.shift() ?? '');
      },
    });
    assert.equal(asked.length, 4, 'an answer neither way is asked again');
    assert.match(
      asked[0] ?? '',
      /^found unit vllm-embeddings\.service on spark1 running:\n {2}\/usr\/bin\/docker run .*\nkeep it as companion embeddings \(port 8001, 6228 MiB, probe embeddings\), or only stop it\? \[K\/s\] $/,
    );
    assert.deepEqual(
      kept.proposals.map((p) => p.companion.name),
      ['embeddings', 'reranker'],
    );
    assert.match(kept.notOffered.at(-1)?.reason ?? '', /only stopped/);
    const none = await confirmCompanions(companions, { keep: 'none' });
    assert.deepEqual(none.proposals, []);
    const text = writeSpecText({
      cluster: 'lab',
      ssh,
      choices: { ...chooseSpec([spark1, spark2], undefined), companions: none },
      facts: [spark1, spark2],
      probedAt: 'now',
    });
    assert.deepEqual(deploySpecSchema.parse(parse(text)).companions, []);
    assert.match(text, /^companions: \[\]$/m);
    assert.equal(keepAnswer(' K '), true);
    assert.equal(keepAnswer('no'), false);
    assert.equal(keepAnswer('?'), undefined);
  });
});
