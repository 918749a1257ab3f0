// liftoff's multiproc rank command against the launch that works with the real vLLM (test/helpers/vllm-multiproc.ts,
// found in test/real/real-multinode.test.ts): the same flags, the same env.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { interfaceOf, rankArgv, rankEnv } from '../../src/host-commands/multiproc.js';
import { multiprocRankCommand } from '../helpers/vllm-multiproc.js';

const common = {
  model: 'Org/Model',
  nnodes: 2,
  tensorParallelSize: 2,
  masterAddr: '10.1.0.11',
  masterPort: 29501,
  distributedTimeoutSeconds: 60,
};

describe('multiproc rank command', () => {
  for (const rank of [0, 1]) {
    it(`rank ${rank}: the argv and env of the real launch`, () => {
      const hostIp = `10.1.0.1${rank + 1}`;
      const real = multiprocRankCommand({
        ...common,
        nodeRank: rank,
        hostIp,
        clusterIface: 'veth-c',
        apiPort: 30000,
        args: ['--max-model-len', '256'],
      });
      const ours = rankArgv({ ...common, rank, port: 30000, args: ['--max-model-len', '256'] });
      assert.deepEqual(['vllm', ...ours], real.argv);
      assert.deepEqual(rankEnv(hostIp, 'veth-c'), real.env);
    });
  }

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
