import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isSecretEnvName, redact, redactedMarker, secretEnvValues } from '../../src/shared/redact.js';
import { sh } from '../../src/ssh/quote.js';

describe('secretEnvValues', () => {
  it('picks the values of variables whose names look like credentials, whatever their case', () => {
    const env = {
      HF_TOKEN: 'hf_abcdef123',
      OPENAI_API_KEY: 'sk-xyz',
      aws_secret_access_key: 'AKIA/secret',
      DB_PASSWORD: 'hunter2',
      NCCL_SOCKET_IFNAME: 'enp1s0f1np1',
      RAY_memory_monitor_refresh_ms: '0',
      VLLM_ENGINE_READY_TIMEOUT_S: '1800',
      EMPTY_TOKEN: '',
    };
    assert.deepEqual(secretEnvValues(env).sort(), ['AKIA/secret', 'hf_abcdef123', 'hunter2', 'sk-xyz']);
  });

  it('tolerates no env', () => {
    assert.deepEqual(secretEnvValues(undefined), []);
    assert.deepEqual(secretEnvValues({}), []);
  });

  it('names', () => {
    assert.equal(isSecretEnvName('HUGGING_FACE_HUB_TOKEN'), true);
    assert.equal(isSecretEnvName('SSH_PASSWD'), true);
    assert.equal(isSecretEnvName('GLOO_SOCKET_IFNAME'), false);
  });
});

describe('redact', () => {
  it('replaces every occurrence of each secret', () => {
    const text = 'HF_TOKEN=hf_abc123 failed; retry with hf_abc123 and sk-1';
    assert.equal(
      redact(text, ['hf_abc123', 'sk-1']),
      `HF_TOKEN=${redactedMarker} failed; retry with ${redactedMarker} and ${redactedMarker}`,
    );
  });

  it('leaves text alone without secrets, and ignores empty ones', () => {
    assert.equal(redact('nothing to hide', []), 'nothing to hide');
    assert.equal(redact('nothing to hide', ['']), 'nothing to hide');
  });

  it('replaces a secret that contains another whole, and never rewrites the marker', () => {
    assert.equal(redact('key=abcdef', ['abc', 'abcdef']), `key=${redactedMarker}`);
    assert.equal(redact('x=redact', ['red', 'redact']), `x=${redactedMarker}`);
    assert.equal(redact('a red fox', ['red', 'act']), `a ${redactedMarker} fox`);
  });

  it('treats regex metacharacters in secrets literally', () => {
    assert.equal(redact('p=a.b*c(d)$1 and axbbc', ['a.b*c(d)$1']), `p=${redactedMarker} and axbbc`);
  });

  it('finds a secret inside a shell-quoted command and inside JSON', () => {
    const secret = `it's "quoted" \\ here`;
    const command = sh`docker run -e ${`HF_TOKEN=${secret}`} image`.text;
    assert.ok(!command.includes(secret), 'the shell form differs from the raw value');
    assert.ok(!redact(command, [secret]).includes("it'\\''s"));
    assert.match(redact(command, [secret]), /\[redacted\]/);
    const json = JSON.stringify({ env: { HF_TOKEN: secret } });
    assert.equal(redact(json, [secret]), `{"env":{"HF_TOKEN":"${redactedMarker}"}}`);
  });

  it('never leaves a secret in the output (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 12 }),
        fc.string({ maxLength: 20 }),
        fc.string({ maxLength: 20 }),
        (secret, before, after) => {
          // A secret made of the marker's characters could be recreated by markers side by side.
          fc.pre(![...secret].some((ch) => redactedMarker.includes(ch)));
          const out = redact(`${before}${secret}${after}${secret}`, [secret]);
          return !out.includes(secret);
        },
      ),
    );
  });
});
