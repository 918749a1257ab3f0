// A duration field of the spec with its bounds: every duration is finite, at least 1 ms once rounded, and
// within the range its field makes sense in; an error says what was given, the bound, and a value to write.
// Pure: workflows validate with it.
import { z } from 'zod';
import { formatDuration, maxDurationChars, readDuration } from './duration.js';
import { problemCheck, shown } from './errors.js';

export interface DurationBounds {
  /** Shortest allowed, in ms (at least 1). */
  minMs: number;
  /** How the shortest reads in an error; default formatDuration's. */
  minText?: string;
  /** Longest allowed, in ms. */
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
        return `${shown(text)} is shorter than ${bounds.minText ?? formatDuration(bounds.minMs)}; ${fix}`;
      if (reading.ms > bounds.maxMs)
        return `${shown(text)} is longer than ${bounds.maxText ?? formatDuration(bounds.maxMs)}, the most this field allows; ${fix}`;
      return undefined;
    }),
  );
}
