// The spec schema: the reference example validates as it stands; errors name the field path and the fix.
import { describe, it } from 'node:test';
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access -- the cases mutate untyped YAML on purpose, including keys the schema must refuse. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { deploySpecSchema } from '../../src/config/schema.js';
import { refusalOf } from '../helpers/spec-refusal.js';
import { modelPathFor } from '../../src/config/derive.js';

const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;

function errorsFor(mutate: (spec: Record<string, any>) => void): string {
  const spec = structuredClone(example) as Record<string, any>;
  mutate(spec);
  return refusalOf(spec);
}

describe('deploy spec schema', () => {
  it('accepts the reference example and applies defaults', () => {
    const spec = deploySpecSchema.parse(example);
    assert.equal(spec.ssh.port, 22);
    assert.equal(spec.hosts[1]?.jumpHost, 'spark1');
    assert.equal(spec.serve.stallTimeout, '5m');
    assert.equal(spec.onFailure, 'leave');
    assert.equal(
      modelPathFor(spec),
      '/home/aurora/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8',
    );
  });

  const cases: [string, (s: Record<string, any>) => void, RegExp][] = [
    [
      'a short IP',
      (s) => (s.hosts[1].clusterIp = '192.168.200'),
      /hosts\[1\]\.clusterIp: "192\.168\.200" is not an IPv4 address/,
    ],
    [
      'two heads',
      (s) => (s.hosts[1].role = 'head'),
      /hosts: expected exactly one host with role: head, found 2/,
    ],
    ['no head', (s) => (s.hosts[0].role = 'worker'), /found 0/],
    [
      'a duplicate name',
      (s) => (s.hosts[1].name = 'spark1'),
      /hosts\[1\]\.name: "spark1" is already used by hosts\[0\]/,
    ],
    [
      'an unknown jump host',
      (s) => (s.hosts[1].jumpHost = 'spark9'),
      /hosts\[1\]\.jumpHost: "spark9" is not another host/,
    ],
    [
      'a jump loop',
      (s) => (s.hosts[0].jumpHost = 'spark2'),
      /jump hosts form a loop: spark\d -> spark\d -> spark\d/,
    ],
    [
      'tp beyond the GPUs',
      (s) => (s.serve.tensorParallelSize = 4),
      /serve\.tensorParallelSize: 4 needs more GPUs than the cluster has \(2 hosts/,
    ],
    [
      'a bad duration',
      (s) => (s.serve.loadTimeout = '25 minutes'),
      /serve\.loadTimeout: "25 minutes" is not a duration/,
    ],
    ['a port out of range', (s) => (s.serve.port = 70000), /serve\.port: expected a port from 1 to 65535/],
    [
      'a bad container name',
      (s) => (s.ray.container = 'vllm qwen'),
      /ray\.container: expected a docker container name/,
    ],
    [
      'a bad unit name',
      (s) => (s.cleanup.services = ['vllm;rm -rf /']),
      /cleanup\.services\[0\]: expected a systemd unit name/,
    ],
    [
      'an unknown field',
      (s) => (s.serve.tensorParalelSize = 2),
      /serve: Unrecognized key: "tensorParalelSize"/,
    ],
    ['no model path', (s) => (s.ray.volumes = []), /serve\.modelPath: not set/],
    [
      'an IPv4 address with leading zeros',
      (s) => (s.hosts[0].clusterIp = '010.1.2.3'),
      /hosts\[0\]\.clusterIp: "010\.1\.2\.3" is not an IPv4 address/,
    ],
    ['the server on the Ray port', (s) => (s.serve.port = 6379), /serve\.port: 6379 is also ray\.port/],
    [
      'a secret written into the spec',
      (s) => (s.serve.env = { HF_TOKEN: 'hf_abc123' }),
      /serve\.env\.HF_TOKEN: looks like a secret; .*HF_TOKEN: \{ fromEnv: HF_TOKEN \}/,
    ],
    [
      'an --api-key in the serve args',
      (s) => (s.serve.args = ['--max-model-len', '32768', '--api-key', 'sk-1']),
      /serve\.args\[2\]: "--api-key" takes a credential, which would be stored in Temporal's history\. .*serve\.env\.VLLM_API_KEY: \{ fromEnv: VLLM_API_KEY \}.*fromFile/,
    ],
    [
      'a one-character container name (docker needs two)',
      (s) => (s.ray.container = 'v'),
      /ray\.container: expected a docker container name/,
    ],
    [
      'a NUL byte in a serve arg',
      (s) => (s.serve.args = ['--max-model-len', '32768\u0000']),
      /serve\.args\[1\]: contains a NUL byte/,
    ],
    [
      'a NUL byte in an env value',
      (s) => (s.ray.env.NCCL_DEBUG = 'INFO\u0000'),
      /ray\.env\.NCCL_DEBUG: contains a NUL byte/,
    ],
    [
      'a NUL byte in a path',
      (s) => (s.serve.logPath = '/home/aurora/x\u0000.log'),
      /serve\.logPath: contains a NUL byte/,
    ],
    [
      'a served model name vllm would read as an option',
      (s) => (s.serve.servedModelName = '--trust-remote-code'),
      /serve\.servedModelName: expected a non-empty name not starting with "-"/,
    ],
    [
      'an env name that is not one, naming it',
      (s) => (s.serve.env = { 'BAD-NAME': '1' }),
      /serve\.env\.BAD-NAME: "BAD-NAME" is not an environment variable name/,
    ],
    [
      'a secret reference that is neither fromEnv nor fromFile',
      (s) => (s.ray.env.HF_TOKEN = { fromVault: 'x' }),
      /ray\.env\.HF_TOKEN/,
    ],
    // Values shaped like credentials, whatever their name: refused wherever they are written, never echoed.
    [
      'a Hugging Face token under an ordinary env name',
      (s) => (s.serve.env = { MODEL_SRC: 'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345' }),
      /serve\.env\.MODEL_SRC: looks like a Hugging Face token \(hf_…\); a credential written in the spec is stored in Temporal's history and shows in ps and docker inspect on the hosts\. Reference it instead: MODEL_SRC: \{ fromEnv: MODEL_SRC \}.*MODEL_SRC: \{ fromFile: /,
    ],
    [
      'an sk- key as a plain serve arg',
      (s) => (s.serve.args = ['--served-model-name', 'sk-proj-0123456789abcdefXYZ']),
      /serve\.args\[1\]: looks like an API key \(sk-…\).*Pass it through serve\.env with a reference instead: serve\.env\.NAME: \{ fromEnv: NAME \}.*\{ fromFile: /,
    ],
    [
      'a password in a URL under ray.env',
      (s) => (s.ray.env.MIRROR = 'https://bob:hunter2@mirror.example.com/simple'),
      /ray\.env\.MIRROR: looks like a password in a URL \(scheme:\/\/user:password@host\).*MIRROR: \{ fromEnv: MIRROR \}/,
    ],
    [
      'a password in a notify URL',
      (s) => (s.notify = { webhooks: [{ url: 'https://u:p4ss@hooks.example.com/x' }] }),
      /notify\.webhooks\[0\]\.url: looks like a password in a URL.*url: \{ fromEnv: NAME \}/,
    ],
    [
      'a Hugging Face token as the model',
      (s) => (s.serve.model = 'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345'),
      /serve\.model: looks like a Hugging Face token.*\{ fromEnv: NAME \} or \{ fromFile: /,
    ],
    // Secret flags, whatever their spelling vllm's parser accepts.
    [
      '--api_key=S',
      (s) => (s.serve.args = ['--api_key=S']),
      /serve\.args\[0\]: "--api_key" takes a credential/,
    ],
    [
      '--hf_token S',
      (s) => (s.serve.args = ['--hf_token', 'S']),
      /serve\.args\[0\]: "--hf_token" takes a credential/,
    ],
    ['--api-k=S', (s) => (s.serve.args = ['--api-k=S']), /serve\.args\[0\]: "--api-k" takes a credential/],
    // Guard rails on what a spec may do to a host.
    [
      'a serve log that is a system file',
      (s) => (s.serve.logPath = '/etc/passwd'),
      /serve\.logPath: "\/etc\/passwd" lies under \/etc, a system folder: .*e\.g\. \/var\/log\/vllm\/serve\.log/,
    ],
    ...['/usr/lib/x.log', '/bin/sh', '/boot/vmlinuz', '/proc/1/mem', '/sys/kernel/x', '/dev/sda'].map(
      (path): [string, (s: Record<string, any>) => void, RegExp] => [
        `a serve log at ${path}`,
        (s) => (s.serve.logPath = path),
        /serve\.logPath: .* a system folder/,
      ],
    ),
    [
      'a serve log that climbs out with ..',
      (s) => (s.serve.logPath = '/home/aurora/../../etc/shadow'),
      /serve\.logPath: .* contains "\.\."/,
    ],
    [
      'a serve log under ~/',
      (s) => (s.serve.logPath = '~/vllm.log'),
      /serve\.logPath: "~\/vllm\.log" starts with ~, which is not expanded on the hosts .*write the absolute path, e\.g\. \/home\/USER\/vllm\.log/,
    ],
    [
      'a model path under ~/',
      (s) => (s.serve.modelPath = '~/models/qwen'),
      /serve\.modelPath: "~\/models\/qwen" starts with ~/,
    ],
    [
      'a volume whose host side starts with ~/',
      (s) => (s.ray.volumes = ['~/models:/root/.cache/huggingface']),
      /ray\.volumes\[0\]: "~\/models:\/root\/\.cache\/huggingface" starts with ~, which is not expanded on the hosts/,
    ],
    ...[
      'sshd',
      'ssh.service',
      'docker.service',
      'docker.socket',
      'containerd',
      'systemd-networkd',
      'networking.service',
    ].map((unit): [string, (s: Record<string, any>) => void, RegExp] => [
      `cleanup.services listing ${unit}`,
      (s) => (s.cleanup.services = ['vllm-cluster.service', unit]),
      /cleanup\.services\[1\]: .* liftoff never stops or disables it\. Remove it from cleanup\.services/,
    ]),
    [
      'a volume of the host root',
      (s) => (s.ray.volumes = [...(s.ray.volumes as string[]), '/:/host']),
      /ray\.volumes\[1\]: mounts the host's root filesystem .* set ray\.allowDangerousMounts: true/,
    ],
    [
      'a volume of the docker socket',
      (s) => (s.ray.volumes = [...(s.ray.volumes as string[]), '/var/run/docker.sock:/var/run/docker.sock']),
      /ray\.volumes\[1\]: mounts the container runtime socket.* ray\.allowDangerousMounts: true/,
    ],
    [
      'a volume of the folder holding the docker socket',
      (s) => (s.ray.volumes = [...(s.ray.volumes as string[]), '/run:/host-run:ro']),
      /ray\.volumes\[1\]: mounts \/run, which holds the container runtime socket/,
    ],
  ];
  it('allows the dangerous mounts with allowDangerousMounts: true, and a serve log in a folder of its own', () => {
    const spec = structuredClone(example) as Record<string, any>;
    spec.ray.volumes = [
      ...(spec.ray.volumes as string[]),
      '/:/host:ro',
      '/var/run/docker.sock:/var/run/docker.sock',
    ];
    spec.ray.allowDangerousMounts = true;
    spec.serve.logPath = '/var/log/vllm/serve.log';
    spec.cleanup.services = ['vllm-cluster.service', 'sshd-keygen-helper.service', 'docker-cleanup.timer'];
    const parsed = deploySpecSchema.parse(spec);
    assert.equal(parsed.ray.allowDangerousMounts, true);
    // Not set, it stays out of the spec: runs recorded before it existed carry the same shape.
    assert.equal(deploySpecSchema.parse(example).ray.allowDangerousMounts, undefined);
  });
  it('accepts secrets as references, and flags that only look like secret ones', () => {
    const spec = structuredClone(example) as Record<string, any>;
    spec.serve.env = {
      HF_TOKEN: { fromEnv: 'HF_TOKEN' },
      VLLM_API_KEY: { fromFile: '/etc/liftoff/api-key' },
    };
    spec.serve.args = [
      '--tokenizer',
      'Qwen/Qwen3.5-122B-A10B-FP8',
      '--ssl-certfile',
      '/etc/ssl/c.pem',
      '--max-num-batched-tokens',
      '8192',
      '--allow-credentials',
    ];
    const parsed = deploySpecSchema.parse(spec);
    assert.deepEqual(parsed.serve.env.HF_TOKEN, { fromEnv: 'HF_TOKEN' });
  });
  it('a refused credential-shaped value is not echoed in the error', () => {
    const token = 'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345';
    const errors = errorsFor((s) => {
      s.serve.env = { MODEL_SRC: token };
      s.serve.args = ['--served-model-name', 'sk-proj-0123456789abcdefXYZ'];
      s.ray.env.MIRROR = 'https://bob:hunter2@mirror.example.com/simple';
    });
    assert.equal(errors.match(/looks like/g)?.length, 3, errors);
    for (const secret of [token, 'sk-proj-0123456789abcdefXYZ', 'hunter2'])
      assert.ok(!errors.includes(secret), errors);
  });

  it('accepts model names, paths, flags and URLs that only resemble credentials', () => {
    const spec = structuredClone(example) as Record<string, any>;
    spec.serve.model = 'hf-internal-testing/tiny-random-gpt2';
    spec.serve.servedModelName = 'risk-sk-model';
    spec.serve.env = {
      HF_HUB_ENABLE_HF_TRANSFER: '1',
      HF_HOME: '/data/hf_cache/huggingface_hub_cache',
      MIRROR: 'https://pypi.example.com:8443/simple',
      PROXY: 'http://proxy-user@proxy.example.com:3128',
      VLLM_API_KEY: { fromEnv: 'VLLM_API_KEY' },
    };
    spec.serve.args = [
      '--tokenizer',
      'Org/hf_tokenizer-v2',
      '--task-sk-x',
      'sk-short',
      '--max-model-len',
      '32768',
    ];
    spec.ray.volumes = ['/data/hf_transfer_cache:/root/.cache/huggingface'];
    assert.equal(deploySpecSchema.safeParse(spec).error?.message, undefined);
  });

  for (const [name, mutate, expected] of cases) {
    it(`refuses ${name}, naming the field`, () => {
      assert.match(errorsFor(mutate), expected);
    });
  }
});
