// The one output renderer: every command hands it a result and a text form; `--json` prints the result instead.
import pc from 'picocolors';

export interface OutputOptions {
  json?: boolean;
}

export function emit<T>(opts: OutputOptions, result: T, text: (r: T) => string): void {
  if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else process.stdout.write(`${text(result)}\n`);
}

/** Errors go to stderr as text, or to stdout as `{ "error": … }` under --json so scripts read one document. */
export function emitError(opts: OutputOptions, err: unknown, code: number): void {
  const message = err instanceof Error ? err.message : String(err);
  const name = err instanceof Error ? err.name : 'Error';
  if (opts.json)
    process.stdout.write(`${JSON.stringify({ error: { name, message, exitCode: code } }, null, 2)}\n`);
  else process.stderr.write(`${pc.red('error')}: ${message}\n`);
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
