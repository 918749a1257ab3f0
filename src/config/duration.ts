// Durations in the spec ("25m", "10s", "1h30m", "500ms"). Pure: workflows use it to compute deadlines.
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The longest duration text read: "1h30m15s500ms" is 13 characters; more is a number nobody meant. */
export const maxDurationChars = 32;

/** What a duration text is: its length in whole milliseconds, or why it is none. */
export type DurationReading =
  { ms: number } | { problem: 'syntax' | 'too long a text' | 'zero' | 'not finite' };

export function readDuration(text: string): DurationReading {
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
