// `liftoff metrics targets`: the fleet's records (and specs) to Prometheus file_sd target groups.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  scrapeAddress,
  scrapeTargets,
  targetSpecSchema,
  targetsFileText,
  type TargetSource,
} from '../../src/commands/metrics-targets.js';

const hosts = [
  { name: 'spark1', address: '192.168.1.11' },
  { name: 'spark2', address: '192.168.1.12' },
];
const spec = targetSpecSchema.parse({
  hosts: [
    { name: 'spark1', role: 'head', clusterIp: '10.0.0.1', address: '192.168.1.11', user: 'x' },
    { name: 'spark2', role: 'worker', clusterIp: '10.0.0.2' },
  ],
  companions: [
    { name: 'reranker', host: 'spark2', port: 8002, command: ['vllm', 'serve', 'r'] },
    { name: 'embeddings', host: 'spark1', port: 8001 },
  ],
  serve: { port: 8000 },
});

const source = (cluster: string, state: string, extra: Partial<TargetSource> = {}): TargetSource => ({
  record: {
    cluster,
    state: state as TargetSource['record']['state'],
    endpoint: 'http://10.0.0.1:8000/v1',
    hosts,
  },
  ...extra,
});

describe('scrapeTargets', () => {
  it("names a multi-node cluster's head (from its spec) and each companion with its host and name", () => {
    assert.deepEqual(scrapeTargets([source('big', 'serving', { spec })]), [
      { targets: ['10.0.0.1:8000'], labels: { cluster: 'big', host: 'spark1' } },
      { targets: ['10.0.0.1:8001'], labels: { cluster: 'big', host: 'spark1', companion: 'embeddings' } },
      { targets: ['10.0.0.2:8002'], labels: { cluster: 'big', host: 'spark2', companion: 'reranker' } },
    ]);
  });

  it('keeps a lost, relaunching or degraded cluster (its endpoint should serve), drops the others', () => {
    const states = [
      'serving',
      'lost',
      'relaunching',
      'degraded',
      'deploying',
      'failed',
      'down',
      'handed over',
    ];
    const groups = scrapeTargets(states.map((s) => source(s.replace(' ', '-'), s)));
    assert.deepEqual(
      groups.map((g) => g.labels.cluster),
      ['degraded', 'lost', 'relaunching', 'serving'],
    );
  });

  it("without a spec (no worker answered): the host whose address is the endpoint's, and no companions", () => {
    const byAddress = scrapeTargets([
      { record: { cluster: 'a', state: 'serving', endpoint: 'http://192.168.1.12:30000/v1', hosts } },
    ]);
    assert.deepEqual(byAddress, [
      { targets: ['192.168.1.12:30000'], labels: { cluster: 'a', host: 'spark2' } },
    ]);
    const unknown = scrapeTargets([source('b', 'serving')]);
    assert.deepEqual(unknown, [{ targets: ['10.0.0.1:8000'], labels: { cluster: 'b', host: '10.0.0.1' } }]);
    const single = scrapeTargets([
      { record: { cluster: 'c', state: 'serving', endpoint: 'http://10.9.9.9:8000/v1', hosts: [hosts[0]!] } },
    ]);
    assert.equal(single[0]?.labels.host, 'spark1');
  });

  it('skips a cluster with no endpoint or one that is not an http URL, and sorts by cluster', () => {
    const groups = scrapeTargets([
      source('z', 'serving'),
      { record: { cluster: 'y', state: 'serving', hosts } },
      { record: { cluster: 'x', state: 'serving', endpoint: 'file:///etc/passwd', hosts } },
      { record: { cluster: 'w', state: 'serving', endpoint: 'not a url', hosts } },
      source('a', 'serving'),
    ]);
    assert.deepEqual(
      groups.map((g) => g.labels.cluster),
      ['a', 'z'],
    );
  });

  it('writes host:port with IPv6 in brackets and the default port of the scheme', () => {
    assert.equal(scrapeAddress('http://[fd00::1]:8000/v1'), '[fd00::1]:8000');
    assert.equal(scrapeAddress('http://10.0.0.1/v1'), '10.0.0.1:80');
    assert.equal(scrapeAddress('https://vllm.example/v1'), 'vllm.example:443');
    assert.equal(scrapeAddress('ftp://10.0.0.1/'), undefined);
    const v6 = targetSpecSchema.parse({
      hosts: [{ name: 'h', clusterIp: 'fd00::2' }],
      companions: [{ name: 'e', host: 'h', port: 9 }],
    });
    const groups = scrapeTargets([
      {
        record: { cluster: 'v', state: 'serving', endpoint: 'http://[fd00::2]:8000/v1', hosts: [] },
        spec: v6,
      },
    ]);
    assert.deepEqual(
      groups.map((g) => [g.targets[0], g.labels.host]),
      [
        ['[fd00::2]:8000', 'h'],
        ['[fd00::2]:9', 'h'],
      ],
    );
  });

  it('an empty fleet is an empty array (Prometheus then scrapes nothing), as JSON with a final newline', () => {
    assert.equal(targetsFileText(scrapeTargets([])), '[]\n');
    const text = targetsFileText(scrapeTargets([source('a', 'serving')]));
    assert.deepEqual(JSON.parse(text), [
      { targets: ['10.0.0.1:8000'], labels: { cluster: 'a', host: '10.0.0.1' } },
    ]);
    assert.ok(text.endsWith(']\n'));
  });
});
