// The worker's SSH idle time from its environment (src/config/ssh-idle.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defaultSshIdleMs, sshIdleEnv, sshIdleMsFromEnv } from '../../src/config/ssh-idle.js';

describe('LIFTOFF_SSH_IDLE_TIMEOUT', () => {
  it('defaults to 5 minutes', () => {
    assert.equal(defaultSshIdleMs, 300_000);
    assert.equal(sshIdleMsFromEnv({}), defaultSshIdleMs);
    assert.equal(sshIdleMsFromEnv({ [sshIdleEnv]: ' ' }), defaultSshIdleMs);
  });
  it('reads a duration, and 0 for closing at once', () => {
    assert.equal(sshIdleMsFromEnv({ [sshIdleEnv]: '90s' }), 90_000);
    assert.equal(sshIdleMsFromEnv({ [sshIdleEnv]: '1h30m' }), 5_400_000);
    assert.equal(sshIdleMsFromEnv({ [sshIdleEnv]: '0s' }), 0);
    assert.equal(sshIdleMsFromEnv({ [sshIdleEnv]: '0' }), 0);
  });
  it('refuses what is not a duration, naming the variable', () => {
    assert.throws(
      () => sshIdleMsFromEnv({ [sshIdleEnv]: '5 minutes' }),
      /LIFTOFF_SSH_IDLE_TIMEOUT="5 minutes" is not a duration/,
    );
    assert.throws(() => sshIdleMsFromEnv({ [sshIdleEnv]: '-1s' }), /not a duration/);
  });
});
