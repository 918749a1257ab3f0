// What a spec may do to a host, beyond the schema cases in schema.test.ts: the sudoers rule liftoff suggests
// allows exactly the systemctl commands it runs, and the protected units are told apart from look-alikes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sudoersRule } from '../../src/steps/stop-services.js';
import { protectedUnitProblem } from '../../src/config/host-guards.js';

describe('the suggested sudoers rule', () => {
  it('names `systemctl stop` (and `disable`) of the units, as liftoff runs them, and nothing wider', () => {
    assert.equal(
      sudoersRule('aurora', ['vllm-a.service', 'vllm-b.service'], true),
      'aurora ALL=(root) NOPASSWD: /usr/bin/systemctl stop -- vllm-a.service vllm-b.service, /usr/bin/systemctl disable -- vllm-a.service vllm-b.service',
    );
    assert.equal(
      sudoersRule('aurora', ['vllm.service'], false),
      'aurora ALL=(root) NOPASSWD: /usr/bin/systemctl stop -- vllm.service',
    );
  });

  it("escapes what sudoers would read as its own syntax in a unit's name", () => {
    assert.equal(
      sudoersRule('u', ['a:b@c\\x2d.service'], false),
      'u ALL=(root) NOPASSWD: /usr/bin/systemctl stop -- a\\:b@c\\\\x2d.service',
    );
  });
});

describe('protected units', () => {
  it('refuses the units a host needs, whatever their suffix or instance, and only those', () => {
    for (const unit of [
      'sshd',
      'ssh.socket',
      'sshd@1-10.0.0.1:22.service',
      'docker',
      'systemd-logind.service',
    ])
      assert.ok(protectedUnitProblem(unit), unit);
    for (const unit of ['sshd-keygen.service', 'dockerd-proxy.service', 'vllm.service', 'my-systemd.service'])
      assert.equal(protectedUnitProblem(unit), undefined, unit);
  });
});
