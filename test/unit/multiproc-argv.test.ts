// liftoff's multiproc rank command: the argv and env of the launch that works with the real vLLM 0.32 CPU build
// (test/real/real-multinode.test.ts deploys it through liftoff; src/host-commands/multiproc.ts says why each flag
// and variable is there), written out here so a change to it is a visible one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { interfaceOf, rankArgv, rankEnv } from '../../src/host-commands/multiproc.js';

const common = {
  model: 'Org/Model',
  nnodes: 2,
  tensorParallelSize: 2,
  masterAddr: '10.1.0.11',
  masterPort: 29501,
  distributedTimeoutSeconds: 60,
};

const realLaunch = (rank: number): string[] => [
  'serve',
  'Org/Model',
  '--nnodes',
  '2',
  '--node-rank',
  String(rank),
  '--master-addr',
  '10.1.0.11',
  '--master-port',
  '29501',
  '--tensor-parallel-size',
  '2',
  '--distributed-executor-backend',
  'mp',
  '--distributed-timeout-seconds',
  '60',
  ...(rank === 0 ? ['--port', '30000'] : ['--headless']),
  '--max-model-len',
  '256',
];

describe('multiproc rank command', () => {
  for (const rank of [0, 1]) {
    it(`rank ${rank}: the argv and env of the real launch`, () => {
      const hostIp = `10.1.0.1${rank + 1}`;
      const ours = rankArgv({ ...common, rank, port: 30000, args: ['--max-model-len', '256'] });
      assert.deepEqual(ours, realLaunch(rank));
      assert.deepEqual(rankEnv(hostIp, 'veth-c'), { VLLM_HOST_IP: hostIp, GLOO_SOCKET_IFNAME: 'veth-c' });
    });
  }

  it("the spec's env comes after the rank's own, and wins", () => {
    const env = rankEnv('10.1.0.12', 'veth-c', { GLOO_SOCKET_IFNAME: 'bond0', HF_HOME: '/hf' });
    assert.deepEqual(Object.entries(env), [
      ['VLLM_HOST_IP', '10.1.0.12'],
      ['GLOO_SOCKET_IFNAME', 'bond0'],
      ['HF_HOME', '/hf'],
    ]);
  });

  it('passes the served model name to every rank, and the API port to rank 0 only', () => {
    const r1 = rankArgv({ ...common, rank: 1, port: 30000, servedModelName: 'qwen', args: [] });
    assert.ok(r1.includes('--headless') && !r1.includes('--port'));
    assert.deepEqual(r1.slice(-2), ['--served-model-name', 'qwen']);
  });

  it("finds the interface carrying the host's cluster address in `ip -o -4 addr show`", () => {
    const out = [
      '1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever',
      '2: eth0@if7    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0',
      '3: enp1s0f1np1    inet 192.168.200.12/24 brd 192.168.200.255 scope global enp1s0f1np1',
    ].join('\n');
    assert.equal(interfaceOf(out, '192.168.200.12'), 'enp1s0f1np1');
    assert.equal(interfaceOf(out, '10.0.0.5'), 'eth0');
    assert.equal(interfaceOf(out, '10.0.0.6'), undefined);
    assert.deepEqual(rankEnv('10.0.0.6', undefined), { VLLM_HOST_IP: '10.0.0.6' });
  });
});
