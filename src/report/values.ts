// Reading the untyped values a history holds (decoded payloads, memo and search attribute fields).
import { isRecord } from './events.js';

export function stringOr(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function numberOr(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function stringArray(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Ids are strings in proto JSON and after toObject (longs as strings); numbers are accepted too. */
export function idText(v: unknown): string {
  return typeof v === 'string' || typeof v === 'number' ? String(v) : '';
}

/** The name of an `activityType` / `workflowType` ({ name }). */
export function nameOf(v: unknown): string | undefined {
  return isRecord(v) && typeof v.name === 'string' ? v.name : undefined;
}

export function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

export function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}

/** The object without its undefined fields, so the JSON report has no `"x": undefined` holes to explain. */
export function dropUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}
