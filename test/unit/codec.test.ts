import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  ApplicationFailure,
  defaultPayloadConverter,
  type DefaultFailureConverter,
  type Payload,
} from '@temporalio/common';
import {
  AesGcmPayloadCodec,
  decryptPayload,
  ENCRYPTED_ENCODING,
  encryptPayload,
  isEncryptedPayload,
  KEY_ID_METADATA,
  liftoffDataConverter,
  NAMESPACE_METADATA,
  PayloadDecryptError,
  PlaintextPayloadError,
  WORKFLOW_ID_METADATA,
  payloadKeyFromEnv,
  type PayloadKey,
} from '../../src/temporal/codec.js';
import { PayloadKeyError } from '../../src/temporal/errors.js';
import { readHistoryEvents } from '../../src/report/events.js';
import { payloadValues } from '../../src/report/events.js';

const newKey = (id = 'test-key'): PayloadKey => ({ id, key: randomBytes(32) });
const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('utf8');

const spec = { cluster: 'gx10', model: 'Qwen/Qwen3-235B-A22B', hosts: [{ clusterIp: '10.213.0.1' }] };
const jsonPayload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);

function assertSamePayload(actual: Payload, expected: Payload) {
  assert.deepEqual(
    Object.fromEntries(Object.entries(actual.metadata ?? {}).map(([k, v]) => [k, text(v)])),
    Object.fromEntries(Object.entries(expected.metadata ?? {}).map(([k, v]) => [k, text(v)])),
  );
  assert.deepEqual(Buffer.from(actual.data ?? []), Buffer.from(expected.data ?? []));
}

describe('payload encryption', () => {
  it('round-trips a JSON payload, and the ciphertext hides its text and encoding', () => {
    const key = newKey();
    const plain = jsonPayload(spec);
    const sealed = encryptPayload(plain, key);
    assert.equal(text(sealed.metadata?.encoding), ENCRYPTED_ENCODING);
    assert.equal(text(sealed.metadata?.[KEY_ID_METADATA]), 'test-key');
    assert.deepEqual(Object.keys(sealed.metadata ?? {}).sort(), ['encoding', KEY_ID_METADATA].sort());
    assert.equal(isEncryptedPayload(sealed), true);
    const raw = Buffer.from(sealed.data ?? []).toString('latin1');
    for (const needle of ['Qwen', '10.213.0.1', 'gx10', 'json/plain'])
      assert.ok(!raw.includes(needle), needle);
    assertSamePayload(decryptPayload(sealed, key), plain);
    assert.deepEqual(defaultPayloadConverter.fromPayload(decryptPayload(sealed, key)), spec);
  });

  it('uses a fresh IV each time', () => {
    const key = newKey();
    const plain = jsonPayload('same');
    const a = Buffer.from(encryptPayload(plain, key).data ?? []);
    const b = Buffer.from(encryptPayload(plain, key).data ?? []);
    assert.notDeepEqual(a.subarray(0, 12), b.subarray(0, 12));
    assert.notDeepEqual(a, b);
  });

  it('detects any altered byte of IV, ciphertext or tag, and a relabelled key id', () => {
    const key = newKey();
    const sealed = encryptPayload(jsonPayload(spec), key);
    const data = Buffer.from(sealed.data ?? []);
    for (let i = 0; i < data.length; i += 1) {
      const altered = Buffer.from(data);
      altered[i] = (altered[i] ?? 0) ^ 0x01;
      assert.throws(
        () => decryptPayload({ ...sealed, data: new Uint8Array(altered) }, key),
        PayloadDecryptError,
        `byte ${i}`,
      );
    }
    assert.throws(
      () => decryptPayload({ ...sealed, data: new Uint8Array(data.subarray(0, 20)) }, key),
      /truncated/,
    );
    const relabelled = { ...sealed, metadata: { ...sealed.metadata, [KEY_ID_METADATA]: bytes('other') } };
    assert.throws(() => decryptPayload(relabelled, { ...key, id: 'other' }), PayloadDecryptError);
  });

  it('refuses a wrong key or no key, naming LIFTOFF_PAYLOAD_KEY', () => {
    const sealed = encryptPayload(jsonPayload(spec), newKey('k1'));
    assert.throws(
      () => decryptPayload(sealed, newKey('k1')),
      (err: Error) =>
        err instanceof PayloadDecryptError &&
        /LIFTOFF_PAYLOAD_KEY/.test(err.message) &&
        /altered|not the one/.test(err.message),
    );
    assert.throws(
      () => decryptPayload(sealed, newKey('k2')),
      (err: Error) =>
        /LIFTOFF_PAYLOAD_KEY/.test(err.message) && /key id k1/.test(err.message) && /k2/.test(err.message),
    );
    assert.throws(
      () => decryptPayload(sealed, undefined),
      (err: Error) =>
        err instanceof PayloadDecryptError && /LIFTOFF_PAYLOAD_KEY is not set/.test(err.message),
    );
  });

  it('passes plain payloads through, with or without a key', async () => {
    const key = newKey();
    const plain = [
      jsonPayload({ from: 'the UI' }),
      defaultPayloadConverter.toPayload(undefined),
      jsonPayload('x'),
    ];
    for (const p of plain) {
      assert.equal(decryptPayload(p, key), p);
      assert.equal(decryptPayload(p, undefined), p);
    }
    assert.deepEqual(await new AesGcmPayloadCodec(key).decode(plain), plain);
  });

  it('round-trips any payload through the codec (property)', async () => {
    const key = newKey();
    const codec = new AesGcmPayloadCodec(key);
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.uint8Array({ maxLength: 40 }), {
          maxKeys: 4,
        }),
        fc.uint8Array({ maxLength: 2000 }),
        async (metadata, data) => {
          const original: Payload = { metadata, data };
          const [sealed] = await codec.encode([original]);
          assert.ok(sealed && isEncryptedPayload(sealed));
          const [opened] = await codec.decode([sealed]);
          assert.ok(opened);
          assertSamePayload(opened, original);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('without a key encodes nothing and refuses encrypted payloads by name', async () => {
    const keyless = new AesGcmPayloadCodec(undefined);
    const plain = [jsonPayload(spec)];
    assert.deepEqual(await keyless.encode(plain), plain);
    const [sealed] = await new AesGcmPayloadCodec(newKey()).encode(plain);
    assert.ok(sealed);
    await assert.rejects(keyless.decode([sealed]), /LIFTOFF_PAYLOAD_KEY is not set/);
  });

  it('rejects from decode (not throws synchronously) when the key is wrong', async () => {
    const [sealed] = await new AesGcmPayloadCodec(newKey()).encode([jsonPayload(1)]);
    assert.ok(sealed);
    await assert.rejects(new AesGcmPayloadCodec(newKey()).decode([sealed]), PayloadDecryptError);
  });
});

describe('payloadKeyFromEnv', () => {
  const good = randomBytes(32).toString('base64');

  it('is off when unset or empty', () => {
    assert.equal(payloadKeyFromEnv({}), undefined);
    assert.equal(payloadKeyFromEnv({ LIFTOFF_PAYLOAD_KEY: '  ' }), undefined);
    const plainCodec = liftoffDataConverter({}).payloadCodecs?.[0];
    assert.ok(plainCodec instanceof AesGcmPayloadCodec);
    assert.equal(plainCodec.key, undefined);
  });

  it('reads a key, with a fingerprint id by default or the given id', () => {
    const key = payloadKeyFromEnv({ LIFTOFF_PAYLOAD_KEY: good });
    assert.equal(key?.key.length, 32);
    assert.match(key?.id ?? '', /^sha256:[0-9a-f]{16}$/);
    assert.equal(payloadKeyFromEnv({ LIFTOFF_PAYLOAD_KEY: good })?.id, key?.id);
    assert.ok(!(key?.id ?? '').includes(good));
    assert.equal(
      payloadKeyFromEnv({ LIFTOFF_PAYLOAD_KEY: good, LIFTOFF_PAYLOAD_KEY_ID: 'prod-2026' })?.id,
      'prod-2026',
    );
    const codec = liftoffDataConverter({ LIFTOFF_PAYLOAD_KEY: good }).payloadCodecs?.[0];
    assert.ok(codec instanceof AesGcmPayloadCodec);
    assert.deepEqual(codec.key, key);
  });

  for (const [why, value] of [
    ['too short', randomBytes(16).toString('base64')],
    ['too long', randomBytes(48).toString('base64')],
    ['not base64', 'not a key at all!'],
    ['hex instead of base64', randomBytes(32).toString('hex') + '!'],
  ] as const) {
    it(`refuses a malformed key (${why}) naming the variable and the fix`, () => {
      assert.throws(
        () => liftoffDataConverter({ LIFTOFF_PAYLOAD_KEY: value }),
        (err: Error) =>
          err instanceof PayloadKeyError &&
          err.message.includes('LIFTOFF_PAYLOAD_KEY') &&
          err.message.includes('openssl rand -base64 32') &&
          !err.message.includes(value),
      );
    });
  }

  it('refuses a key id with spaces', () => {
    assert.throws(
      () => payloadKeyFromEnv({ LIFTOFF_PAYLOAD_KEY: good, LIFTOFF_PAYLOAD_KEY_ID: 'a b' }),
      /LIFTOFF_PAYLOAD_KEY_ID/,
    );
  });
});

describe('reading an encrypted history', () => {
  const toJson = (p: Payload) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? []).toString('base64'),
  });
  const key = newKey();
  const history = {
    events: [
      {
        eventId: '1',
        eventTime: '2026-01-01T00:00:00Z',
        workflowExecutionStartedEventAttributes: {
          input: {
            payloads: [
              toJson(encryptPayload(jsonPayload(spec), key)),
              toJson(jsonPayload({ trigger: 'ui' })),
            ],
          },
          searchAttributes: { indexedFields: { LiftoffCluster: toJson(jsonPayload('gx10')) } },
        },
      },
      {
        eventId: '2',
        eventTime: '2026-01-01T00:00:01Z',
        workflowExecutionFailedEventAttributes: {
          failure: {
            message: 'Encoded failure',
            encodedAttributes: toJson(
              encryptPayload(jsonPayload({ message: 'host 10.213.0.1 down', stack_trace: 'at x' }), key),
            ),
            applicationFailureInfo: {
              details: { payloads: [toJson(encryptPayload(jsonPayload({ step: 'load' }), key))] },
            },
          },
        },
      },
    ],
  };

  it('decrypts every payload at any depth with the key, and leaves plain ones as they are', () => {
    const [start, failed] = readHistoryEvents(history, { payloadKey: key });
    assert.deepEqual(payloadValues(start?.attrs.input), [spec, { trigger: 'ui' }]);
    const failure = failed?.attrs.failure as Record<string, unknown>;
    assert.equal(failure.message, 'host 10.213.0.1 down');
    assert.equal(failure.stackTrace, 'at x');
    assert.deepEqual(payloadValues((failure.applicationFailureInfo as Record<string, unknown>).details), [
      { step: 'load' },
    ]);
  });

  it('fails clearly without the key or with another', () => {
    const saved = process.env.LIFTOFF_PAYLOAD_KEY;
    delete process.env.LIFTOFF_PAYLOAD_KEY;
    try {
      assert.throws(
        () => readHistoryEvents(history),
        /history event #1: .*LIFTOFF_PAYLOAD_KEY is not set.*encryption on/,
      );
    } finally {
      if (saved !== undefined) process.env.LIFTOFF_PAYLOAD_KEY = saved;
    }
    assert.throws(
      () => readHistoryEvents(history, { payloadKey: newKey('other') }),
      /cannot decrypt.*key id test-key/,
    );
  });

  it('reads the key from LIFTOFF_PAYLOAD_KEY by default', () => {
    const saved = process.env.LIFTOFF_PAYLOAD_KEY;
    const savedId = process.env.LIFTOFF_PAYLOAD_KEY_ID;
    process.env.LIFTOFF_PAYLOAD_KEY = key.key.toString('base64');
    process.env.LIFTOFF_PAYLOAD_KEY_ID = key.id;
    try {
      assert.deepEqual(payloadValues(readHistoryEvents(history)[0]?.attrs.input)[0], spec);
    } finally {
      if (saved === undefined) delete process.env.LIFTOFF_PAYLOAD_KEY;
      else process.env.LIFTOFF_PAYLOAD_KEY = saved;
      if (savedId === undefined) delete process.env.LIFTOFF_PAYLOAD_KEY_ID;
      else process.env.LIFTOFF_PAYLOAD_KEY_ID = savedId;
    }
  });
});

describe('ciphertexts bound to their namespace and workflow (SDK serialization context)', () => {
  const key = newKey();
  const codec = new AesGcmPayloadCodec(key);
  const wf = (workflowId: string, namespace = 'default') => ({
    type: 'workflow' as const,
    namespace,
    workflowId,
  });
  const activity = (workflowId: string | undefined) => ({
    type: 'activity' as const,
    namespace: 'default',
    isLocal: false,
    activityId: '3',
    ...(workflowId === undefined ? {} : { workflowId }),
  });

  it('writes the binding in the metadata and reads it back in the same workflow (and its activities)', async () => {
    const [sealed] = await codec.encode([jsonPayload(spec)], wf('liftoff-deploy-gx10'));
    assert.ok(sealed);
    assert.equal(text(sealed.metadata?.[NAMESPACE_METADATA]), 'default');
    assert.equal(text(sealed.metadata?.[WORKFLOW_ID_METADATA]), 'liftoff-deploy-gx10');
    const [opened] = await codec.decode([sealed], wf('liftoff-deploy-gx10'));
    assert.ok(opened);
    assert.deepEqual(defaultPayloadConverter.fromPayload(opened), spec);
    const [fromActivity] = await codec.encode([jsonPayload(1)], activity('liftoff-deploy-gx10'));
    assert.ok(fromActivity);
    assert.ok(await codec.decode([fromActivity], wf('liftoff-deploy-gx10')));
    // Without a context (a history file), the binding in the metadata is what the AAD checks.
    assert.deepEqual(defaultPayloadConverter.fromPayload(decryptPayload(sealed, key)), spec);
  });

  it("refuses another workflow's or namespace's ciphertext, and an unbound one where the reader knows its workflow", async () => {
    const [sealed] = await codec.encode([jsonPayload(spec)], wf('liftoff-deploy-gx10'));
    assert.ok(sealed);
    await assert.rejects(
      codec.decode([sealed], wf('liftoff-deploy-other')),
      /belongs to .*liftoff-deploy-gx10/,
    );
    await assert.rejects(codec.decode([sealed], wf('liftoff-deploy-gx10', 'prod')), /namespace "default"/);
    await assert.rejects(codec.decode([sealed], activity('liftoff-deploy-other')), PayloadDecryptError);
    await assert.rejects(codec.decode([encryptPayload(jsonPayload(spec), key)], wf('x')), /not bound/);
  });

  it('refuses a relabelled binding: the metadata is authenticated', async () => {
    const [sealed] = await codec.encode([jsonPayload(spec)], wf('liftoff-deploy-gx10'));
    assert.ok(sealed);
    const relabelled = {
      ...sealed,
      metadata: { ...sealed.metadata, [WORKFLOW_ID_METADATA]: bytes('victim') },
    };
    await assert.rejects(codec.decode([relabelled], wf('victim')), /altered/);
    assert.throws(() => decryptPayload(relabelled, key), /altered/);
  });

  it("reads a schedule's input in its runs (`<id>-<time>`), nothing else with that prefix", async () => {
    const [sealed] = await codec.encode([jsonPayload(spec)], wf('liftoff-schedule-gx10'));
    assert.ok(sealed);
    assert.ok(await codec.decode([sealed], wf('liftoff-schedule-gx10-2026-03-01T04:00:00Z')));
    await assert.rejects(codec.decode([sealed], wf('liftoff-schedule-gx10-evil')), PayloadDecryptError);
  });
});

describe('failure messages and stack traces encrypted with the key', () => {
  it('the data converter with a key encodes common attributes; the codec then encrypts them', async () => {
    const key = newKey();
    const converter = liftoffDataConverter({ LIFTOFF_PAYLOAD_KEY: key.key.toString('base64') });
    assert.ok(converter.failureConverterPath);
    assert.equal(liftoffDataConverter({}).failureConverterPath, undefined, 'off without a key');
    const { failureConverter } = (await import(converter.failureConverterPath)) as {
      failureConverter: DefaultFailureConverter;
    };
    const tail = 'serve.log: CUDA out of memory on 10.213.0.1';
    const failure = failureConverter.errorToFailure(
      ApplicationFailure.nonRetryable(tail, 'ServeFailed'),
      defaultPayloadConverter,
    );
    assert.equal(failure.message, 'Encoded failure');
    assert.equal(failure.stackTrace, '');
    assert.ok(failure.encodedAttributes);
    const context = { type: 'workflow' as const, namespace: 'default', workflowId: 'w' };
    const codec = converter.payloadCodecs?.[0];
    assert.ok(codec);
    const [sealed] = await codec.encode([failure.encodedAttributes], context);
    assert.ok(sealed && isEncryptedPayload(sealed));
    assert.ok(
      !Buffer.from(sealed.data ?? [])
        .toString('latin1')
        .includes('CUDA'),
    );
    const [opened] = await codec.decode([sealed], context);
    assert.ok(opened);
    const back = failureConverter.failureToError(
      { ...failure, encodedAttributes: opened },
      defaultPayloadConverter,
    );
    assert.equal(back.message, tail);
  });
});

describe('LIFTOFF_REQUIRE_ENCRYPTED', () => {
  const good = randomBytes(32).toString('base64');

  it('off by default: a worker accepts the UI’s plain input', async () => {
    const codec = liftoffDataConverter({ LIFTOFF_PAYLOAD_KEY: good }, { role: 'worker' }).payloadCodecs?.[0];
    assert.ok(codec);
    const [read] = await codec.decode([jsonPayload({ from: 'the UI' })]);
    assert.ok(read);
    assert.deepEqual(defaultPayloadConverter.fromPayload(read), { from: 'the UI' });
  });

  it('=1 on a worker refuses plaintext inputs naming the variable, and still reads encrypted ones', async () => {
    const env = { LIFTOFF_PAYLOAD_KEY: good, LIFTOFF_REQUIRE_ENCRYPTED: '1' };
    const codec = liftoffDataConverter(env, { role: 'worker' }).payloadCodecs?.[0];
    assert.ok(codec);
    const context = { type: 'workflow' as const, namespace: 'default', workflowId: 'liftoff-deploy-x' };
    await assert.rejects(
      codec.decode([jsonPayload({ from: 'the UI' })], context),
      (err: Error) =>
        err instanceof PlaintextPayloadError &&
        err.message.includes('LIFTOFF_REQUIRE_ENCRYPTED=1') &&
        err.message.includes('liftoff-deploy-x'),
    );
    const [sealed] = await codec.encode([jsonPayload(spec)], context);
    assert.ok(sealed);
    assert.ok(await codec.decode([sealed], context));
    // A client (the CLI) does not enforce it: it reads old plain results.
    const client = liftoffDataConverter(env).payloadCodecs?.[0];
    assert.ok(client);
    assert.ok(await client.decode([jsonPayload(1)]));
  });

  it('needs a key, and refuses a value other than 1/0', () => {
    assert.throws(
      () => liftoffDataConverter({ LIFTOFF_REQUIRE_ENCRYPTED: '1' }, { role: 'worker' }),
      /LIFTOFF_REQUIRE_ENCRYPTED=1 needs LIFTOFF_PAYLOAD_KEY/,
    );
    assert.throws(
      () =>
        liftoffDataConverter(
          { LIFTOFF_PAYLOAD_KEY: good, LIFTOFF_REQUIRE_ENCRYPTED: 'yes' },
          { role: 'worker' },
        ),
      /LIFTOFF_REQUIRE_ENCRYPTED must be 1 or 0/,
    );
  });
});
