// The one output renderer: every command hands it a result and a text form; `--json` prints the result instead.
// Results carry text from hosts (log lines, error messages, key types): before a text form sees them, every
// C0 and C1 control character but newline and tab becomes a visible escape, so a host cannot move the
// cursor, retitle the terminal or write the clipboard (OSC 52). So do the invisible characters that change what
// a reader sees without being seen: bidi controls (a line that reads in another order than it runs) and
// zero-width characters (a name that looks like another). JSON escapes the control characters by itself.
import pc from 'picocolors';

// eslint-disable-next-line no-control-regex
const controlCharacters = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
// Bidi: LRM, RLM, ALM, the embeddings and overrides (U+202A-E), the isolates (U+2066-9); zero width: ZWSP, ZWNJ,
// ZWJ, word joiner, BOM. Line and paragraph separators too: a terminal shows no break, an editor does.
const invisibleCharacters = /[\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\u061c\ufeff\u2028\u2029]/g;

/**
 * `\x1b` for ESC, `\u202e` for RIGHT-TO-LEFT OVERRIDE, and so on: the text with every control character but
 * newline and tab, and every bidi control and zero-width character, made visible.
 */
export function terminalText(text: string): string {
  return text
    .replace(controlCharacters, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
    .replace(invisibleCharacters, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** terminalText applied to every string inside plain objects and arrays; other values are kept as they are. */
export function terminalSafe<T>(value: T): T {
  if (typeof value === 'string') return terminalText(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => terminalSafe(v)) as T;
  if (value !== null && typeof value === 'object' && isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, terminalSafe(v)])) as T;
  }
  return value;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Writes text that no renderer colours (a report, a progress line) with its control characters escaped. */
export function print(text: string, stream: NodeJS.WritableStream = process.stdout): void {
  stream.write(terminalText(text));
}

export interface OutputOptions {
  json?: boolean;
}

export function emit<T>(opts: OutputOptions, result: T, text: (r: T) => string): void {
  if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else process.stdout.write(`${text(terminalSafe(result))}\n`);
}

/** Errors go to stderr as text, or to stdout as `{ "error": … }` under --json so scripts read one document. */
export function emitError(opts: OutputOptions, err: unknown, code: number): void {
  const message = err instanceof Error ? err.message : String(err);
  const name = err instanceof Error ? err.name : 'Error';
  if (opts.json)
    process.stdout.write(`${JSON.stringify({ error: { name, message, exitCode: code } }, null, 2)}\n`);
  else process.stderr.write(`${pc.red('error')}: ${terminalText(message)}\n`);
}

export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export const colors = pc;
