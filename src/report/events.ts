// One reading of a workflow history, whichever way it arrived: the proto JSON that `temporal workflow show
// --output json` (and the UI's download) writes, or the protobuf messages `handle.fetchHistory()` returns.
// Everything after this file sees only HistoryEventView.
import proto from '@temporalio/proto';

/** One history event: its id, time, and the `…EventAttributes` object that says what happened. */
export interface HistoryEventView {
  eventId: number;
  timeMs: number;
  /** The attributes' key without the suffix, e.g. `activityTaskScheduled`. */
  kind: string;
  attrs: Record<string, unknown>;
}

/** A payload in proto JSON form: metadata values and data base64-encoded. */
export interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export class HistoryFormatError extends Error {
  override name = 'HistoryFormatError';
}

// toObject with these options gives the same shape as proto JSON, except timestamps ({seconds, nanos}).
const protoJsonLike = { longs: String, enums: String, bytes: String } as const;

/**
 * Reads a history: an object with `events` (proto JSON, or protobuf messages from the client). The JSON
 * export's enum spelling does not matter: events are told apart by their attributes' key.
 */
export function readHistoryEvents(history: unknown): HistoryEventView[] {
  if (!isRecord(history) || !Array.isArray(history.events)) {
    throw new HistoryFormatError(
      'not a workflow history: expected an object with "events" (from `temporal workflow show --output json`)',
    );
  }
  return history.events.map((raw: unknown, index) => {
    if (!isRecord(raw)) throw new HistoryFormatError(`history event #${index + 1} is not an object`);
    const event = typeof raw.eventTime === 'string' ? raw : toPlain(raw);
    const key = Object.keys(event).find((k) => k.endsWith('EventAttributes') && isRecord(event[k]));
    if (!key) throw new HistoryFormatError(`history event #${index + 1} has no …EventAttributes`);
    const timeMs = timestampMs(event.eventTime);
    if (timeMs === undefined) throw new HistoryFormatError(`history event #${index + 1} has no eventTime`);
    return {
      eventId: Number(event.eventId ?? index + 1),
      timeMs,
      kind: key.slice(0, -'EventAttributes'.length),
      attrs: event[key] as Record<string, unknown>,
    };
  });
}

function toPlain(message: Record<string, unknown>): Record<string, unknown> {
  const HistoryEvent = proto.temporal.api.history.v1.HistoryEvent;
  // toObject reads the message's fields only; a plain object with the same fields reads the same.
  const event = message as unknown as proto.temporal.api.history.v1.HistoryEvent;
  return HistoryEvent.toObject(event, protoJsonLike);
}

/** Milliseconds since the epoch from an RFC 3339 string or a {seconds, nanos} Timestamp. */
export function timestampMs(value: unknown): number | undefined {
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
export function payloadValue(payload: unknown): unknown {
  if (!isRecord(payload)) return undefined;
  const metadata = isRecord(payload.metadata) ? payload.metadata : {};
  const encoding = typeof metadata.encoding === 'string' ? fromBase64(metadata.encoding) : '';
  const data = typeof payload.data === 'string' ? fromBase64(payload.data) : '';
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

/** Search attributes ({ indexedFields: { NAME: payload } }) decoded to plain values. */
export function searchAttributeValues(searchAttributes: unknown): Record<string, unknown> {
  const fields = isRecord(searchAttributes) ? searchAttributes.indexedFields : undefined;
  if (!isRecord(fields)) return {};
  return Object.fromEntries(Object.entries(fields).map(([name, p]) => [name, payloadValue(p)]));
}

/** Memo fields ({ fields: { NAME: payload } }) decoded. */
export function memoValues(memo: unknown): Record<string, unknown> {
  const fields = isRecord(memo) ? memo.fields : undefined;
  if (!isRecord(fields)) return {};
  return Object.fromEntries(Object.entries(fields).map(([name, p]) => [name, payloadValue(p)]));
}

function fromBase64(text: string): string {
  return Buffer.from(text, 'base64').toString('utf8');
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
