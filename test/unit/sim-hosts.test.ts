// How many hosts one simulated cluster may have (sim/network.ts maxSimHosts) and that each of them gets addresses,
// MACs and link names the kernel takes: pure, no namespace is made.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostNet, maxSimHosts, netLayout, simHostsProblem } from '../../sim/network.js';

describe('simulated cluster size', () => {
  it('takes 1..128 hosts and says for more which field and what to do instead', () => {
    assert.equal(maxSimHosts, 128);
    for (const n of [1, 2, 64, 128]) assert.equal(simHostsProblem(n), undefined);
    const more = simHostsProblem(129);
    assert.match(more ?? '', /^hosts must be 1\.\.128, got 129: /);
    assert.match(more ?? '', /maxSimHosts/);
    assert.match(more ?? '', /several clusters side by side, each with its own netIndex/);
    for (const n of [0, -1, 2.5, Number.NaN])
      assert.match(simHostsProblem(n) ?? '', /^hosts must be 1\.\.128, got /);
  });

  it('gives each of 128 hosts its own addresses within its /24s, MACs and link names of the kernel’s length', () => {
    for (const index of [0, 30, 99]) {
      const layout = netLayout(index);
      const nets = Array.from({ length: maxSimHosts }, (_, i) =>
        hostNet(layout, `spark${i + 1}`, i + 1, true),
      );
      for (const key of [
        'mgmtIp',
        'clusterIp',
        'mgmtMac',
        'clusterMac',
        'rootVeth',
        'fabricVeth',
        'netns',
      ] as const)
        assert.equal(
          new Set(nets.map((n) => n[key])).size,
          maxSimHosts,
          `${key} unique at net index ${index}`,
        );
      for (const n of nets) {
        for (const ip of [n.mgmtIp ?? '', n.clusterIp]) {
          const octets = ip.split('.').map(Number);
          assert.equal(octets.length, 4, ip);
          assert.ok(
            octets.every((o) => Number.isInteger(o) && o >= 0 && o <= 255),
            ip,
          );
          // Neither the subnet's own address nor its broadcast, nor the gateway's .1.
          assert.ok((octets[3] ?? 0) > 1 && (octets[3] ?? 255) < 255, ip);
        }
        for (const mac of [n.mgmtMac, n.clusterMac]) assert.match(mac, /^02(:[0-9a-f]{2}){5}$/);
        // IFNAMSIZ: 15 characters and the NUL.
        for (const link of [n.rootVeth, n.fabricVeth]) assert.ok(link.length <= 15, link);
      }
    }
    assert.throws(
      () => hostNet(netLayout(0), 'spark129', 129, true),
      /host number must be 1\.\.128, got 129/,
    );
  });
});
