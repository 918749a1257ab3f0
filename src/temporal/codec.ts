// Optional end-to-end encryption of Temporal payloads (workflow and activity inputs, results, memos, query
// answers, failure details): AES-256-GCM with a key that only the CLI and the workers hold, so neither the
// Temporal server nor anyone who reads its database or an exported history sees a deploy spec or its results.
// Off unless LIFTOFF_PAYLOAD_KEY is set. Search attributes are not payloads and stay readable.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

export const PAYLOAD_KEY_ENV = 'LIFTOFF_PAYLOAD_KEY';
export const PAYLOAD_KEY_ID_ENV = 'LIFTOFF_PAYLOAD_KEY_ID';
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const GENERATE_HINT = 'generate one with `openssl rand -base64 32`';

export interface PayloadKey {
  /** Names the key in each payload's metadata, so a reader can tell which key it needs. */
  id: string;
  key: Buffer;
}

/** LIFTOFF_PAYLOAD_KEY (or its id) is set but unusable; raised at startup, before anything is sent. */
export class PayloadKeyError extends Error {
  override name = 'PayloadKeyError';
}

/** An encrypted payload that cannot be read: no key, another key, or the bytes were altered. */
export class PayloadDecryptError extends Error {
  override name = 'PayloadDecryptError';
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

// The key id is authenticated too, so a payload cannot be relabelled as another key's.
function associatedData(keyId: string): Buffer {
  return Buffer.from(`liftoff-payload-v1\0${keyId}`, 'utf8');
}

/** The whole payload (metadata and data) encrypted; a fresh random IV each time. Layout: IV ‖ ciphertext ‖ tag. */
export function encryptPayload(payload: Payload, key: PayloadKey): Payload {
  const plaintext = PayloadMessage.encode({ metadata: payload.metadata, data: payload.data }).finish();
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(associatedData(key.id));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return {
    metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(key.id) },
    data: new Uint8Array(Buffer.concat([iv, body, cipher.getAuthTag()])),
  };
}

/** The original payload of an encrypted one; any other payload is returned as it is. */
export function decryptPayload(payload: Payload, key: PayloadKey | undefined): Payload {
  if (!isEncryptedPayload(payload)) return payload;
  const keyId = text(payload.metadata?.[KEY_ID_METADATA]) ?? '(none)';
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
    decipher.setAAD(associatedData(keyId));
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
 * Encrypts with the key when there is one. Without a key it encodes nothing, and decoding an encrypted payload
 * fails with an error naming LIFTOFF_PAYLOAD_KEY instead of the SDK's "Unknown encoding: binary/encrypted".
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  constructor(readonly key: PayloadKey | undefined) {}

  encode(payloads: Payload[]): Promise<Payload[]> {
    const key = this.key;
    return Promise.resolve(key ? payloads.map((p) => encryptPayload(p, key)) : payloads);
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    try {
      return Promise.resolve(payloads.map((p) => decryptPayload(p, this.key)));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }
}

/**
 * The one data converter of every production client and worker: payloads encrypted when LIFTOFF_PAYLOAD_KEY is
 * set, left as the SDK writes them otherwise. A malformed key throws PayloadKeyError here, at startup.
 */
export function liftoffDataConverter(env: NodeJS.ProcessEnv = process.env): DataConverter {
  return { payloadCodecs: [new AesGcmPayloadCodec(payloadKeyFromEnv(env))] };
}
