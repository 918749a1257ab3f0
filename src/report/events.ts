// One reading of a workflow history, whichever way it arrived: the proto JSON that `temporal workflow show
// --output json` (and the UI's download) writes, or the protobuf messages `handle.fetchHistory()` returns.
// Everything after this file sees only HistoryEventView.
import proto from '@temporalio/proto';
import { isObject as isRecord } from '../shared/secrets.js';
import {
  decryptPayload,
  ENCRYPTED_ENCODING,
  PAYLOAD_KEY_ENV,
  PayloadDecryptError,
  payloadKeyFromEnv,
  type PayloadKey,
} from '../temporal/codec.js';

export { isRecord };

/** One history event: its id, time, and the `…EventAttributes` object that says what happened. */
export interface HistoryEventView {
  eventId: number;
  timeMs: number;
  /** The attributes' key without the suffix, e.g. `activityTaskScheduled`. */
  kind: string;
  attrs: Record<string, unknown>;
}

export class HistoryFormatError extends Error {
  override name = 'HistoryFormatError';
}

// toObject with these options gives the same shape as proto JSON, except timestamps ({seconds, nanos}).
const protoJsonLike = { longs: String, enums: String, bytes: String } as const;

/**
 * Reads a history: an object with `events` (proto JSON, or protobuf messages from the client). The JSON
 * export's enum spelling does not matter: events are told apart by their attributes' key. Encrypted payloads
 * come back decrypted (`payloadKey`, default LIFTOFF_PAYLOAD_KEY, is the key the codec in src/temporal/codec.ts
 * encrypted them with); without the key they raise PayloadDecryptError naming LIFTOFF_PAYLOAD_KEY.
 */
export function readHistoryEvents(
  history: unknown,
  opts: { payloadKey?: PayloadKey } = {},
): HistoryEventView[] {
  const { HistoryEvent } = proto.temporal.api.history.v1;
  let key: PayloadKey | undefined | null = opts.payloadKey ?? null;
  const keyWhenNeeded = () => (key === null ? (key = payloadKeyFromEnv()) : key);
  if (!isRecord(history) || !Array.isArray(history.events)) {
    throw new HistoryFormatError(
      'not a workflow history: expected an object with "events" (from `temporal workflow show --output json`)',
    );
  }
  return history.events.map((raw: unknown, index) => {
    if (!isRecord(raw)) throw new HistoryFormatError(`history event #${index + 1} is not an object`);
    // toObject reads the message's fields only; a plain object with the same fields reads the same.
    const message = raw as unknown as proto.temporal.api.history.v1.HistoryEvent;
    const event = typeof raw.eventTime === 'string' ? raw : HistoryEvent.toObject(message, protoJsonLike);
    const key = Object.keys(event).find((k) => k.endsWith('EventAttributes') && isRecord(event[k]));
    if (!key) throw new HistoryFormatError(`history event #${index + 1} has no …EventAttributes`);
    const timeMs = timestampMs(event.eventTime);
    if (timeMs === undefined) throw new HistoryFormatError(`history event #${index + 1} has no eventTime`);
    return {
      eventId: Number(event.eventId ?? index + 1),
      timeMs,
      kind: key.slice(0, -'EventAttributes'.length),
      attrs: decryptPayloadsIn(event[key], keyWhenNeeded, index + 1) as Record<string, unknown>,
    };
  });
}

// Payloads hide at many depths (input, result, memo fields, failure details and causes, lastFailure…), so
// every object shaped like an encrypted payload is swapped for the payload it holds.
function decryptPayloadsIn(value: unknown, key: () => PayloadKey | undefined, eventNumber: number): unknown {
  if (Array.isArray(value)) return value.map((v) => decryptPayloadsIn(v, key, eventNumber));
  if (!isRecord(value)) return value;
  if (isRecord(value.metadata) && base64Text(value.metadata.encoding) === ENCRYPTED_ENCODING) {
    return decryptJsonPayload(value, key(), eventNumber);
  }
  const out = Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, decryptPayloadsIn(v, key, eventNumber)]),
  );
  return isRecord(out.encodedAttributes) ? withEncodedAttributes(out, out.encodedAttributes) : out;
}

// Payload's fromObject and toObject read and write the export's base64 bytes.
function decryptJsonPayload(
  payload: Record<string, unknown>,
  key: PayloadKey | undefined,
  eventNumber: number,
): Record<string, unknown> {
  const { Payload } = proto.temporal.api.common.v1;
  try {
    return Payload.toObject(Payload.create(decryptPayload(Payload.fromObject(payload), key)), protoJsonLike);
  } catch (err) {
    if (!(err instanceof PayloadDecryptError)) throw err;
    throw new PayloadDecryptError(
      `history event #${eventNumber}: ${err.message}` +
        (key ? '' : ` (this history was written with payload encryption on; ${PAYLOAD_KEY_ENV} reads it)`),
    );
  }
}

// A failure converter that encodes common attributes leaves "Encoded failure" as the message and puts the
// real message and stack trace in a payload; put them back so reports read the same either way.
function withEncodedAttributes(
  failure: Record<string, unknown>,
  encoded: Record<string, unknown>,
): Record<string, unknown> {
  const attrs = payloadValue(encoded);
  if (!isRecord(attrs) || typeof attrs.message !== 'string') return failure;
  return {
    ...failure,
    message: attrs.message,
    ...(typeof attrs.stack_trace === 'string' ? { stackTrace: attrs.stack_trace } : {}),
  };
}

function base64Text(value: unknown): string | undefined {
  return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

/** Milliseconds since the epoch from an RFC 3339 string or a {seconds, nanos} Timestamp. */
function timestampMs(value: unknown): number | undefined {
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  if (isRecord(value) && value.seconds !== undefined) {
    return Number(value.seconds) * 1000 + Math.floor(Number(value.nanos ?? 0) / 1e6);
  }
  return undefined;
}

/** A payload's value: JSON payloads decoded; null payloads undefined; anything else described, not decoded. */
function payloadValue(payload: unknown): unknown {
  if (!isRecord(payload)) return undefined;
  const metadata = isRecord(payload.metadata) ? payload.metadata : {};
  const encoding = base64Text(metadata.encoding) ?? '';
  const data = base64Text(payload.data) ?? '';
  if (encoding === 'json/plain') {
    try {
      return JSON.parse(data) as unknown;
    } catch {
      return data;
    }
  }
  if (encoding === 'binary/null' || encoding === '') return undefined;
  return { undecodedPayload: encoding };
}

/** The decoded values of a Payloads object ({ payloads: [...] }). */
export function payloadValues(payloads: unknown): unknown[] {
  if (!isRecord(payloads) || !Array.isArray(payloads.payloads)) return [];
  return payloads.payloads.map(payloadValue);
}

/** Search attributes ({ indexedFields: { NAME: payload } }) or a memo ({ fields: { NAME: payload } }) decoded. */
export function fieldValues(holder: unknown, key: 'indexedFields' | 'fields'): Record<string, unknown> {
  const fields = isRecord(holder) ? holder[key] : undefined;
  if (!isRecord(fields)) return {};
  return Object.fromEntries(Object.entries(fields).map(([name, p]) => [name, payloadValue(p)]));
}
