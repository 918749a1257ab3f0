// Durations in the spec ("25m", "10s", "1h30m", "500ms"), and the spec's duration fields: every duration is finite,
// at least 1 ms once rounded, and within the range its field makes sense in; an error says what was given, the
// bound, and a value to write. Pure: workflows use it to compute deadlines, and validate with it.
import { z } from 'zod';
import { problemCheck, shown } from './errors.js';
import { maxTimeoutMs } from './limits.js';

const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The longest duration text read: "1h30m15s500ms" is 13 characters; more is a number nobody meant. */
const maxDurationChars = 32;

/** What a duration text is: its length in whole milliseconds, or why it is none. */
type DurationReading = { ms: number } | { problem: 'syntax' | 'too long a text' | 'zero' | 'not finite' };

function readDuration(text: string): DurationReading {
  const trimmed = text.trim();
  // Checked first, so the patterns below only ever see a short text.
  if (trimmed.length > maxDurationChars) return { problem: 'too long a text' };
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(trimmed)) return { problem: 'syntax' };
  let total = 0;
  for (const m of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g))
    total += Number(m[1]) * (unitMs[m[2] ?? ''] ?? 0);
  // A timer of Infinity never fires (or fires at once), and 0.1ms would be a poll loop without a pause.
  if (!Number.isFinite(total)) return { problem: 'not finite' };
  const ms = Math.round(total);
  return ms > 0 ? { ms } : { problem: 'zero' };
}

/** Whole milliseconds (at least 1, finite), or undefined when the text is not such a duration. */
export function parseDuration(text: string): number | undefined {
  const reading = readDuration(text);
  return 'ms' in reading ? reading.ms : undefined;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s - m * 60);
  return rest ? `${m}m${rest}s` : `${m}m`;
}

interface DurationBounds {
  /** At least 1. */
  minMs: number;
  maxMs: number;
  /** How the longest reads in an error, e.g. "168h (7 days)"; default formatDuration's. */
  maxText?: string;
  /** A sensible value for the field, offered in every error. */
  example: string;
}

const problems = {
  syntax: 'is not a duration',
  'too long a text': `is not a duration: longer than ${maxDurationChars} characters`,
  zero: 'is not a duration: 0 ms once rounded to whole milliseconds',
  'not finite': 'is not a duration: too large to be a number of milliseconds',
} as const;

/** A spec field holding a duration such as "30s", "10m" or "1h30m", kept as text and parsed where used. */
export function boundedDuration(bounds: DurationBounds) {
  return z.string().superRefine(
    problemCheck((text) => {
      const reading = readDuration(text);
      const fix = `use e.g. "${bounds.example}"`;
      if ('problem' in reading)
        return `${shown(text)} ${problems[reading.problem]} (expected e.g. "${bounds.example}")`;
      if (reading.ms < bounds.minMs)
        return `${shown(text)} is shorter than ${formatDuration(bounds.minMs)}; ${fix}`;
      if (reading.ms > bounds.maxMs)
        return `${shown(text)} is longer than ${bounds.maxText ?? formatDuration(bounds.maxMs)}, the most this field allows; ${fix}`;
      return undefined;
    }),
  );
}

/** A timeout or wait of the spec: at most a week (limits.ts says why). */
export function specTimeout(example: string, minMs = 1) {
  return boundedDuration({ minMs, maxMs: maxTimeoutMs, maxText: '168h (7 days)', example });
}
