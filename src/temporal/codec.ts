// Optional end-to-end encryption of Temporal payloads (workflow and activity inputs, results, memos, query
// answers, failure details, and failure messages and stack traces): AES-256-GCM with a key that only the CLI
// and the workers hold, so neither the Temporal server nor anyone who reads its database or an exported history
// sees a deploy spec, its results or the log tails in its failures. Each ciphertext is bound to the namespace
// and workflow id it was written for. Off unless LIFTOFF_PAYLOAD_KEY is set. Search attributes are not payloads
// and stay readable.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { DataConverter, Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import proto from '@temporalio/proto';
import { PayloadKeyError } from './errors.js';

export const PAYLOAD_KEY_ENV = 'LIFTOFF_PAYLOAD_KEY';
export const PAYLOAD_KEY_ID_ENV = 'LIFTOFF_PAYLOAD_KEY_ID';
export const REQUIRE_ENCRYPTED_ENV = 'LIFTOFF_REQUIRE_ENCRYPTED';
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
export const NAMESPACE_METADATA = 'liftoff-namespace';
export const WORKFLOW_ID_METADATA = 'liftoff-workflow-id';

/** The failure converter that puts messages and stack traces into a payload (so the codec encrypts them). */
export const encodedFailureConverterPath = fileURLToPath(
  new URL('./encoded-failure-converter.cjs', import.meta.url),
);

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const GENERATE_HINT = 'generate one with `openssl rand -base64 32`';

export interface PayloadKey {
  /** Names the key in each payload's metadata, so a reader can tell which key it needs. */
  id: string;
  key: Buffer;
}

/** An encrypted payload that cannot be read: no key, another key, the bytes were altered, or another workflow's. */
export class PayloadDecryptError extends Error {
  override name = 'PayloadDecryptError';
}

/** A plaintext payload reached a worker that runs with LIFTOFF_REQUIRE_ENCRYPTED=1. */
export class PlaintextPayloadError extends Error {
  override name = 'PlaintextPayloadError';
}

/** The namespace and workflow a ciphertext belongs to; authenticated with it, so it cannot be moved. */
export interface PayloadBinding {
  namespace: string;
  /** Absent only when the SDK does not know it (an activity context without its workflow). */
  workflowId?: string;
}

/** The binding of a payload from the SDK's serialization context (SDK 1.24 gives one to codecs). */
function bindingOf(context: SerializationContext | undefined): PayloadBinding | undefined {
  return context && { namespace: context.namespace, workflowId: context.workflowId };
}

/** The key from the environment; undefined when LIFTOFF_PAYLOAD_KEY is unset or empty (encryption off). */
export function payloadKeyFromEnv(env: NodeJS.ProcessEnv = process.env): PayloadKey | undefined {
  const text = env[PAYLOAD_KEY_ENV]?.trim();
  if (!text) return undefined;
  // Buffer.from(…, 'base64') skips what it cannot read, so check the alphabet first.
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) {
    throw new PayloadKeyError(
      `${PAYLOAD_KEY_ENV} is not base64 (expected the base64 of ${KEY_BYTES} random bytes); ${GENERATE_HINT}`,
    );
  }
  const key = Buffer.from(text, 'base64');
  if (key.length !== KEY_BYTES) {
    throw new PayloadKeyError(
      `${PAYLOAD_KEY_ENV} decodes to ${key.length} bytes, expected ${KEY_BYTES} (AES-256); ${GENERATE_HINT}`,
    );
  }
  const explicitId = env[PAYLOAD_KEY_ID_ENV]?.trim();
  if (explicitId !== undefined && explicitId !== '' && !/^[\x21-\x7e]{1,128}$/.test(explicitId)) {
    throw new PayloadKeyError(
      `${PAYLOAD_KEY_ID_ENV} must be 1-128 printable ASCII characters without spaces, got ${JSON.stringify(explicitId)}`,
    );
  }
  return { id: explicitId || defaultKeyId(key), key };
}

// A one-way fingerprint: tells keys apart in error messages without revealing anything usable about them.
function defaultKeyId(key: Buffer): string {
  return `sha256:${createHash('sha256').update('liftoff-payload-key-id\0').update(key).digest('hex').slice(0, 16)}`;
}

const PayloadMessage = proto.temporal.api.common.v1.Payload;
const utf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));
const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

export function payloadEncoding(payload: Payload): string | undefined {
  return text(payload.metadata?.encoding);
}

export function isEncryptedPayload(payload: Payload): boolean {
  return payloadEncoding(payload) === ENCRYPTED_ENCODING;
}

// The key id is authenticated too, so a payload cannot be relabelled as another key's; so are the namespace
// and workflow id (v2), so a payload cannot be copied into another workflow's history or input. v1 (unbound)
// payloads, written before binding, are still read where no context is known (a history file).
function associatedData(keyId: string, binding: PayloadBinding | undefined): Buffer {
  if (!binding) return Buffer.from(`liftoff-payload-v1\0${keyId}`, 'utf8');
  const fields = JSON.stringify([keyId, binding.namespace, binding.workflowId ?? null]);
  return Buffer.from(`liftoff-payload-v2\0${fields}`, 'utf8');
}

/** The binding an encrypted payload's metadata claims (authenticated by the AAD when it is decrypted). */
function payloadBinding(payload: Payload): PayloadBinding | undefined {
  const namespace = text(payload.metadata?.[NAMESPACE_METADATA]);
  return namespace === undefined
    ? undefined
    : { namespace, workflowId: text(payload.metadata?.[WORKFLOW_ID_METADATA]) };
}

/**
 * The whole payload (metadata and data) encrypted; a fresh random IV each time. Layout: IV ‖ ciphertext ‖ tag.
 * With a binding, the namespace and workflow id are written in the metadata and authenticated.
 */
export function encryptPayload(payload: Payload, key: PayloadKey, binding?: PayloadBinding): Payload {
  const plaintext = PayloadMessage.encode({ metadata: payload.metadata, data: payload.data }).finish();
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(associatedData(key.id, binding));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return {
    metadata: {
      encoding: utf8(ENCRYPTED_ENCODING),
      [KEY_ID_METADATA]: utf8(key.id),
      ...(binding ? { [NAMESPACE_METADATA]: utf8(binding.namespace) } : {}),
      ...(binding?.workflowId !== undefined ? { [WORKFLOW_ID_METADATA]: utf8(binding.workflowId) } : {}),
    },
    data: new Uint8Array(Buffer.concat([iv, body, cipher.getAuthTag()])),
  };
}

// A schedule's client encodes the action's input for the workflow id it names, and the server starts the run as
// `<that id>-<RFC 3339 time>`: a payload bound to the schedule's id belongs to its runs too.
const SCHEDULED_RUN_SUFFIX = /^-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

function sameWorkflow(bound: string, reader: string): boolean {
  return (
    bound === reader || (reader.startsWith(bound) && SCHEDULED_RUN_SUFFIX.test(reader.slice(bound.length)))
  );
}

/** Why a payload bound to `bound` may not be read where `expected` is; undefined when it may. */
function bindingMismatch(bound: PayloadBinding | undefined, expected: PayloadBinding): string | undefined {
  const where = (b: PayloadBinding) =>
    `namespace ${JSON.stringify(b.namespace)}` +
    (b.workflowId === undefined ? '' : `, workflow ${JSON.stringify(b.workflowId)}`);
  if (!bound) return `it is not bound to a workflow, and is read for ${where(expected)}`;
  const workflowMatches =
    expected.workflowId === undefined ||
    (bound.workflowId !== undefined && sameWorkflow(bound.workflowId, expected.workflowId));
  if (bound.namespace === expected.namespace && workflowMatches) return undefined;
  return `it belongs to ${where(bound)}, not ${where(expected)}`;
}

/**
 * The original payload of an encrypted one; any other payload is returned as it is. With `expected` (the
 * reader's namespace and workflow), a payload bound elsewhere, or not bound at all, is refused.
 */
export function decryptPayload(
  payload: Payload,
  key: PayloadKey | undefined,
  expected?: PayloadBinding,
): Payload {
  if (!isEncryptedPayload(payload)) return payload;
  const keyId = text(payload.metadata?.[KEY_ID_METADATA]) ?? '(none)';
  const bound = payloadBinding(payload);
  const mismatch = expected ? bindingMismatch(bound, expected) : undefined;
  if (mismatch) {
    throw new PayloadDecryptError(
      `refusing an encrypted payload (key id ${keyId}) moved from elsewhere: ${mismatch}`,
    );
  }
  if (!key) {
    throw new PayloadDecryptError(
      `this payload is encrypted (key id ${keyId}) and ${PAYLOAD_KEY_ENV} is not set: set it to the key the deploy ran with`,
    );
  }
  const data = Buffer.from(payload.data ?? new Uint8Array());
  if (data.length < IV_BYTES + TAG_BYTES) {
    throw new PayloadDecryptError(`encrypted payload (key id ${keyId}) is truncated: ${data.length} bytes`);
  }
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, data.subarray(0, IV_BYTES));
    decipher.setAAD(associatedData(keyId, bound));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    plaintext = Buffer.concat([
      decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
      decipher.final(),
    ]);
  } catch {
    const which =
      keyId === key.id
        ? 'the payload was altered or the key is not the one it was encrypted with'
        : `it was encrypted with key id ${keyId}, ${PAYLOAD_KEY_ENV} is key id ${key.id}`;
    throw new PayloadDecryptError(`cannot decrypt a payload with ${PAYLOAD_KEY_ENV}: ${which}`);
  }
  const inner = PayloadMessage.decode(plaintext);
  return { metadata: inner.metadata, data: inner.data };
}

/**
 * Encrypts with the key when there is one, bound to the namespace and workflow of the SDK's serialization
 * context. Without a key it encodes nothing, and decoding an encrypted payload fails with an error naming
 * LIFTOFF_PAYLOAD_KEY instead of the SDK's "Unknown encoding: binary/encrypted".
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  constructor(
    readonly key: PayloadKey | undefined,
    /** Refuse plaintext payloads on decode (LIFTOFF_REQUIRE_ENCRYPTED=1 on a worker). */
    readonly requireEncrypted = false,
  ) {}

  encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const key = this.key;
    const binding = bindingOf(context);
    return Promise.resolve(key ? payloads.map((p) => encryptPayload(p, key, binding)) : payloads);
  }

  decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const expected = bindingOf(context);
    // An error thrown in the executor rejects the promise.
    return new Promise((resolve) => resolve(payloads.map((p) => this.decodeOne(p, expected))));
  }

  private decodeOne(payload: Payload, expected: PayloadBinding | undefined): Payload {
    if (this.requireEncrypted && !isEncryptedPayload(payload)) {
      const where =
        expected?.workflowId === undefined ? '' : ` for workflow ${JSON.stringify(expected.workflowId)}`;
      throw new PlaintextPayloadError(
        `refusing a plaintext payload${where} (encoding ${JSON.stringify(payloadEncoding(payload) ?? '')}): this ` +
          `worker runs with ${REQUIRE_ENCRYPTED_ENV}=1, so inputs must come from a client with ${PAYLOAD_KEY_ENV} ` +
          `set (the CLI), not the Temporal UI's plain form; unset ${REQUIRE_ENCRYPTED_ENV} to accept them`,
      );
    }
    return decryptPayload(payload, this.key, expected);
  }
}

/** LIFTOFF_REQUIRE_ENCRYPTED: "1" (or "true") on, unset/empty/"0"/"false" off; anything else is refused. */
export function requireEncryptedFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[REQUIRE_ENCRYPTED_ENV]?.trim().toLowerCase() ?? '';
  if (value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new PayloadKeyError(
    `${REQUIRE_ENCRYPTED_ENV} must be 1 or 0, got ${JSON.stringify(env[REQUIRE_ENCRYPTED_ENV])}`,
  );
}

/**
 * The one data converter of every production client and worker: when LIFTOFF_PAYLOAD_KEY is set, payloads are
 * encrypted and failure messages and stack traces encoded into a payload so they are encrypted too; otherwise
 * both are left as the SDK writes them. A malformed key throws PayloadKeyError here, at startup.
 */
export function liftoffDataConverter(
  env: NodeJS.ProcessEnv = process.env,
  /** A worker honours LIFTOFF_REQUIRE_ENCRYPTED; clients read whatever they find. */
  opts: { role?: 'client' | 'worker' } = {},
): DataConverter {
  const key = payloadKeyFromEnv(env);
  const requireEncrypted = opts.role === 'worker' && requireEncryptedFromEnv(env);
  if (requireEncrypted && !key) {
    throw new PayloadKeyError(
      `${REQUIRE_ENCRYPTED_ENV}=1 needs ${PAYLOAD_KEY_ENV}: a worker cannot require encrypted inputs it cannot read; ${GENERATE_HINT}`,
    );
  }
  return {
    payloadCodecs: [new AesGcmPayloadCodec(key, requireEncrypted)],
    ...(key ? { failureConverterPath: encodedFailureConverterPath } : {}),
  };
}
