// What ends a watch (src/activities/cluster-watch.ts): any round that is not wholly healthy goes back to the
// workflow at once, for it to judge; only rounds where everything passed are counted in the worker.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { whollyHealthy } from '../../src/activities/cluster-watch.js';
import type { HostProbe } from '../../src/activities/cluster-probe.js';

const host = (name: string, ok = true): HostProbe => ({
  host: name,
  ok: true,
  checks: [{ name: 'container', host: name, ok }],
});

describe('whollyHealthy', () => {
  it('holds when every host answered with every check passed and every companion passed', () => {
    assert.equal(whollyHealthy({ hosts: [host('a'), host('b')] }), true);
    assert.equal(
      whollyHealthy({
        hosts: [host('a')],
        companions: [{ name: 'emb', host: 'a', ok: true, latencyMs: 3, detail: '1024 dims' }],
      }),
      true,
    );
  });

  it('fails on a failed check, a host that did not answer, or a companion that failed or was unreachable', () => {
    assert.equal(whollyHealthy({ hosts: [host('a'), host('b', false)] }), false);
    assert.equal(whollyHealthy({ hosts: [host('a'), { host: 'b', ok: false, error: 'timed out' }] }), false);
    assert.equal(
      whollyHealthy({
        hosts: [host('a')],
        companions: [{ name: 'emb', host: 'a', ok: false, running: true, error: 'HTTP 500' }],
      }),
      false,
    );
    assert.equal(
      whollyHealthy({
        hosts: [host('a')],
        companions: [{ name: 'emb', host: 'a', unreachable: true, error: 'refused' }],
      }),
      false,
    );
  });
});
