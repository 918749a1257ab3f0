// Redact first, then cut: a tail cut across a secret keeps the secret's end, which no longer matches it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { redactedTail, redactText } from '../../src/shared/secrets.js';
import { tail } from '../../src/shared/text.js';

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
