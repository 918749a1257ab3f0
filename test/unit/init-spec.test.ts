// liftoff init's choices and the spec it writes: pure functions over what hosts printed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { chooseSpec } from '../../src/init/choose.js';
import { parseGpus, parseModels, type HostFacts } from '../../src/init/probe.js';
import { writeSpecText } from '../../src/init/write-spec.js';
import { parseIbdev2netdev, parseIpv4Addresses } from '../../src/parsers/ip-addr.js';
import { deploySpecSchema } from '../../src/config/schema.js';

function host(name: string, address: string, more: Partial<HostFacts> = {}): HostFacts {
  return {
    name,
    address,
    gpus: parseGpus('0, NVIDIA GB10, [N/A]\n'),
    addresses: [],
    rdma: [],
    images: [{ ref: 'vllm/vllm-openai:v0.11.0', id: 'aaaa' }],
    models: [{ id: 'Qwen/Qwen3-8B', cacheDir: '/home/ops/.cache/huggingface' }],
    units: [],
    containers: [],
    memTotalMiB: null,
    commandLines: [],
    ...more,
  };
}

const ip = (text: string) => parseIpv4Addresses(text);
const ssh = { user: 'ops', knownHostsPath: '~/.ssh/known_hosts' };

describe('init parsers', () => {
  it('reads GB10 and H200 GPUs, RDMA links and HF cache folders', () => {
    assert.deepEqual(parseGpus('0, NVIDIA GB10, [N/A]\n'), [
      { index: 0, name: 'NVIDIA GB10', memoryTotalMiB: null },
    ]);
    assert.equal(parseGpus('0, NVIDIA H200, 143771\n')[0]?.memoryTotalMiB, 143771);
    assert.deepEqual(
      parseIbdev2netdev('mlx5_0 port 1 ==> enp1s0f0np0 (Up)\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Down)\n'),
      [
        { device: 'mlx5_0', port: 1, iface: 'enp1s0f0np0', up: true },
        { device: 'rocep1s0f1', port: 1, iface: 'enp1s0f1np1', up: false },
      ],
    );
    assert.deepEqual(parseModels('/home/ops/.cache/huggingface/hub/models--Qwen--Qwen3-8B\nnot a path\n'), [
      { id: 'Qwen/Qwen3-8B', cacheDir: '/home/ops/.cache/huggingface' },
    ]);
  });
});

describe('init choices', () => {
  const a = host('a', '192.168.1.11', {
    addresses: ip(
      '1: lo    inet 127.0.0.1/8 scope host lo\n2: eno1    inet 192.168.1.11/24 brd 192.168.1.255 scope global eno1\n3: enp1s0f0np0    inet 10.0.0.1/24 scope global enp1s0f0np0\n4: enp1s0f1np1    inet 10.0.1.1/24 scope global enp1s0f1np1\n5: docker0    inet 172.17.0.1/16 scope global docker0\n',
    ),
    rdma: parseIbdev2netdev('mlx5_0 port 1 ==> enp1s0f0np0 (Up)\n'),
  });
  const b = host('b', '192.168.1.12', {
    addresses: ip(
      '2: eno1    inet 192.168.1.12/24 scope global eno1\n3: enp1s0f0np0    inet 10.0.0.2/24 scope global enp1s0f0np0\n4: enp1s0f1np1    inet 10.0.1.2/24 scope global enp1s0f1np1\n',
    ),
    rdma: parseIbdev2netdev('mlx5_0 port 1 ==> enp1s0f0np0 (Up)\n'),
  });

  it('prefers the RoCE interface, then a network every host shares, and keeps the rest as alternatives', () => {
    const c = chooseSpec([a, b], undefined);
    assert.deepEqual(c.hosts[0]?.cluster?.value, { iface: 'enp1s0f0np0', ip: '10.0.0.1' });
    assert.deepEqual(c.hosts[1]?.cluster?.value, { iface: 'enp1s0f0np0', ip: '10.0.0.2' });
    assert.match(c.hosts[0]?.cluster?.reason ?? '', /RDMA \(mlx5_0, ibdev2netdev\)/);
    // docker0 and lo are never candidates; the two others are listed with why not.
    assert.deepEqual(
      c.hosts[0]?.cluster?.alternatives.map((x) => x.split(' ')[0]),
      ['eno1', 'enp1s0f1np1'],
    );
    assert.equal(c.iface, 'enp1s0f0np0');
  });

  it('without RDMA, a shared network beats the SSH address', () => {
    const noRdma = (h: HostFacts): HostFacts => ({
      ...h,
      rdma: [],
      addresses: h.addresses.filter((x) => x.iface !== 'enp1s0f0np0'),
    });
    const c = chooseSpec([noRdma(a), noRdma(b)], undefined);
    assert.equal(c.hosts[0]?.cluster?.value.iface, 'enp1s0f1np1');
    assert.match(c.hosts[0]?.cluster?.alternatives[0] ?? '', /^eno1 .*the address SSH uses/);
  });

  it('picks the image a running container uses among those on every host, and warns when none is common', () => {
    const images = [
      { ref: 'vllm/vllm-openai:latest', id: '1111' },
      { ref: 'ours/vllm:gb10', id: '2222' },
    ];
    const c = chooseSpec(
      [
        host('a', '10.0.0.1', { images, containers: [{ name: 'vllm_node', image: 'ours/vllm:gb10' }] }),
        host('b', '10.0.0.2', { images }),
      ],
      undefined,
    );
    assert.equal(c.image.value, 'ours/vllm:gb10');
    assert.match(c.image.reason, /running container vllm_node on a/);
    assert.deepEqual(c.image.alternatives, ['vllm/vllm-openai:latest: also on every host']);
    assert.deepEqual(c.containers, [{ name: 'vllm_node', hosts: ['a'] }]);

    const none = chooseSpec([host('a', '10.0.0.1'), host('b', '10.0.0.2', { images: [] })], undefined);
    assert.ok(none.warnings.some((w) => /no image is on every host/.test(w)));
  });

  it('warns when the same tag is a different image on two hosts', () => {
    const c = chooseSpec(
      [
        host('a', '10.0.0.1'),
        host('b', '10.0.0.2', { images: [{ ref: 'vllm/vllm-openai:v0.11.0', id: 'bbbb' }] }),
      ],
      undefined,
    );
    assert.ok(
      c.warnings.some((w) => /different images under vllm\/vllm-openai:v0\.11\.0: a aaaa, b bbbb/.test(w)),
    );
  });
});

describe('init spec writer', () => {
  it('writes a spec that validates, with every ambiguous choice as a comment', () => {
    const a = host('a', '192.168.1.11', {
      addresses: ip(
        '2: eno1    inet 192.168.1.11/24 scope global eno1\n3: eth1    inet 10.0.0.1/24 scope global eth1\n',
      ),
      units: ['vllm-cluster.service'],
      containers: [{ name: 'vllm_node', image: 'vllm/vllm-openai:v0.11.0' }],
    });
    const b = host('b', '10.0.0.2', { addresses: ip('3: eth1    inet 10.0.0.2/24 scope global eth1\n') });
    const choices = chooseSpec([a, b], 'a');
    const text = writeSpecText({
      cluster: 'lab',
      ssh,
      choices,
      facts: [a, b],
      probedAt: '2026-12-04T00:00:00Z',
    });
    const spec = deploySpecSchema.parse(parse(text));
    assert.equal(spec.hosts[1]?.jumpHost, 'a');
    assert.equal(spec.hosts[0]?.clusterIp, '10.0.0.1');
    assert.deepEqual(spec.cleanup.services, ['vllm-cluster.service']);
    assert.deepEqual(spec.ray.volumes, ['/home/ops/.cache/huggingface:/root/.cache/huggingface']);
    assert.equal(spec.serve.logPath, '/home/ops/liftoff-vllm-serve.log');
    assert.equal(spec.serve.tensorParallelSize, 2);
    assert.match(
      text,
      /# clusterIp: picked eth1 10\.0\.0\.1\/24: .*\n {4}# {3}not picked: eno1 192\.168\.1\.11\/24/,
    );
    assert.match(text, /# a: 1 GPU \(NVIDIA GB10, unified memory/);
  });

  it('keeps host text that YAML cannot hold out of the file', () => {
    const evil = host('a', '10.0.0.1', {
      addresses: ip(
        '3: eth1\u001b[2J    inet 10.0.0.1/24 scope global eth1\n4: eth2    inet 10.0.5.1/24 scope global eth2\n',
      ),
    });
    const text = writeSpecText({
      cluster: 'lab',
      ssh,
      choices: chooseSpec([evil], undefined),
      facts: [evil],
      probedAt: 'now',
    });
    assert.ok(!text.includes('\u001b'), 'no ESC in the file');
    deploySpecSchema.parse(parse(text));
  });

  it('writes only printable ASCII: a hostile GPU name cannot add lines for a YAML 1.1 reader, nor hide in bidi', () => {
    // U+2028 and U+2029 (and U+0085) are line breaks to PyYAML: after one, "- name: evil" would be a host.
    const gpuName =
      'GB10\u2028  - name: "evil"\u2029    address: "6.6.6.6"\u0085\u202eevil\u202c\u2066x\u2069\u200b';
    const evil = host('a', '10.0.0.1', {
      gpus: [{ index: 0, name: gpuName, memoryTotalMiB: null }],
      addresses: ip('3: eth1\u2028x    inet 10.0.0.1/24 scope global eth1\u2028x\n'),
      models: [{ id: 'Qwen/Qwen3-8B', cacheDir: '/home/ops\u2028\u202e/.cache/huggingface' }],
    });
    const b = host('b', '10.0.0.2');
    const text = writeSpecText({
      cluster: 'lab',
      ssh,
      choices: chooseSpec([evil, b], undefined),
      facts: [evil, b],
      probedAt: 'now',
    });
    assert.doesNotMatch(text, /[\u0085\u2028\u2029]/, 'no YAML 1.1 line break but newline');
    assert.match(text, /^[\x20-\x7e\n]*$/, 'printable ASCII and newlines only');
    assert.match(
      text,
      /# a: 1 GPU \(GB10\\u2028 {2}- name: "evil"\\u2029 .*\\u202eevil\\u202c\\u2066x\\u2069\\u200b, /,
    );
    // Read as a YAML 1.1 tool would, splitting lines at U+0085, U+2028 and U+2029 too: the same two hosts.
    const asYaml11 = text.split(/\r\n|[\n\r\u0085\u2028\u2029]/).join('\n');
    const spec = deploySpecSchema.parse(parse(asYaml11));
    assert.deepEqual(
      spec.hosts.map((h) => [h.name, h.address]),
      [
        ['a', '10.0.0.1'],
        ['b', '10.0.0.2'],
      ],
    );
    // Values keep what the host said, escaped in the file and read back exactly.
    assert.equal(spec.ray.volumes[0], '/home/ops\u2028\u202e/.cache/huggingface:/root/.cache/huggingface');
    assert.equal(spec.hosts[0]?.clusterIp, '10.0.0.1');
  });

  it('suggests for cleanup only what looks like vLLM, says which host reported each, and flags partial ones', () => {
    const a = host('a', '10.0.0.1', {
      // systemctl's pattern is the host's to apply: a host that lists sshd.service gets no sshd suggested.
      units: ['vllm-cluster.service', 'sshd.service', 'vllm-extra.service'],
      containers: [
        { name: 'vllm_node', image: 'vllm/vllm-openai:v0.11.0' },
        { name: 'postgres', image: 'postgres:16' },
      ],
    });
    const b = host('b', '10.0.0.2', {
      units: ['vllm-cluster.service', 'nginx.service'],
      containers: [{ name: 'vllm_node', image: 'vllm/vllm-openai:v0.11.0' }],
    });
    const choices = chooseSpec([a, b], undefined);
    assert.deepEqual(choices.services, [
      { name: 'vllm-cluster.service', hosts: ['a', 'b'] },
      { name: 'vllm-extra.service', hosts: ['a'] },
    ]);
    assert.deepEqual(choices.containers, [{ name: 'vllm_node', hosts: ['a', 'b'] }]);
    const text = writeSpecText({ cluster: 'lab', ssh, choices, facts: [a, b], probedAt: 'now' });
    assert.match(text, /^ {2}# {3}vllm-cluster\.service: reported by every host \(a, b\)$/m);
    assert.match(text, /^ {2}# {3}vllm-extra\.service: ONLY SOME HOSTS: reported by a, not by b$/m);
    assert.match(
      text,
      /^ {2}# {3}vllm_node: reported by every host \(a, b\)\n {2}containers: \["vllm_node"\]$/m,
    );
    const spec = deploySpecSchema.parse(parse(text));
    assert.deepEqual(spec.cleanup.services, ['vllm-cluster.service', 'vllm-extra.service']);
    assert.doesNotMatch(text, /sshd|nginx/);
  });

  it('still validates when the hosts have no model and no image', () => {
    const bare = host('a', '10.0.0.1', { images: [], models: [], gpus: [] });
    const choices = chooseSpec([bare], undefined);
    const text = writeSpecText({ cluster: 'lab', ssh, choices, facts: [bare], probedAt: 'now' });
    const spec = deploySpecSchema.parse(parse(text));
    assert.equal(spec.serve.model, 'Org/Model-Name');
    assert.match(text, /# WARNING: no model is in the Hugging Face cache of every host/);
    assert.match(text, /# WARNING: a: nvidia-smi lists no GPU/);
  });
});
