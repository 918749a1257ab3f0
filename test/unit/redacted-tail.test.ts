// Redact first, then cut: a tail cut across a secret keeps the secret's end, which no longer matches it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { redactedTail, redactText } from '../../src/shared/secrets.js';
import { tail } from '../../src/shared/text.js';
import { RemoteCommandError, RemoteTimeoutError } from '../../src/ssh/errors.js';

describe('redactedTail', () => {
  const secret = 'S3cr3t-value-0123456789abcdefghij';
  // The secret starts 20 bytes before the last 1024: the cut falls inside it.
  const text = `${'x'.repeat(3000)}${secret}${'y'.repeat(1024 + 20 - secret.length)}`;

  it('the old order (cut, then redact) leaves the end of a secret that straddles the cut', () => {
    const leaked = redactText(tail(text, 1024), [secret]);
    assert.ok(leaked.includes(secret.slice(20)), 'the end of the secret survives');
  });

  it('redacts before it cuts: nothing of the straddling secret is left', () => {
    const out = redactedTail(text, [secret], 1024);
    for (let n = 8; n <= secret.length; n++) assert.ok(!out.includes(secret.slice(-n)), `last ${n} chars`);
    assert.match(out, /earlier bytes cut/);
    assert.ok(Buffer.byteLength(out) < 1100);
  });
});

describe("the executor's command errors redact before they cut", () => {
  const endpoint = { host: 'spark1', address: '10.0.0.1', port: 22, user: 'aurora' };
  const secret = 'S3cr3t-value-0123456789abcdefghij';
  // The secret straddles the 4 KiB cut of each tail: 20 of its characters fall before it, the rest after.
  const stream = `${'x'.repeat(6000)}${secret}${'y'.repeat(4096 + 20 - secret.length)}`;
  const shapeless = `sk-${'Z'.repeat(40)}`;
  const patterned = `${'x'.repeat(6000)} ${shapeless} ${'y'.repeat(4096 - 30)}`;

  function shown(err: RemoteCommandError | RemoteTimeoutError): string {
    return `${err.message}\n${JSON.stringify(err.data())}`;
  }

  it('RemoteCommandError: a secret the command handled, and one known by its shape, leave nothing', () => {
    const withSecret = new RemoteCommandError(
      endpoint,
      { command: 'docker run …', exitCode: 125, stdout: stream, stderr: stream, durationMs: 5 },
      [secret],
    );
    const byShape = new RemoteCommandError(endpoint, {
      command: 'curl …',
      exitCode: 22,
      stdout: patterned,
      stderr: patterned,
      durationMs: 5,
    });
    for (let n = 8; n <= secret.length; n++) assert.ok(!shown(withSecret).includes(secret.slice(-n)), `${n}`);
    assert.ok(!shown(byShape).includes(shapeless.slice(-20)), 'the end of an sk- key');
    assert.match(withSecret.message, /earlier bytes cut/);
  });

  it('RemoteTimeoutError: the same', () => {
    const err = new RemoteTimeoutError(
      endpoint,
      { command: 'curl …', timeoutMs: 1000, stdout: stream, stderr: stream },
      [secret],
    );
    for (let n = 8; n <= secret.length; n++) assert.ok(!shown(err).includes(secret.slice(-n)), `${n}`);
  });
});
