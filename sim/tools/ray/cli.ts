// What every `ray` subcommand shares: output as the CLI writes it (one line at a time).

export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function err(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}
