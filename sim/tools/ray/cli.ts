// What every `ray` subcommand shares: output as the CLI writes it (one line at a time).
import { toolIo } from '../io.js';

export function out(text: string): void {
  toolIo().stdout(text.endsWith('\n') ? text : `${text}\n`);
}

export function err(text: string): void {
  toolIo().stderr(text.endsWith('\n') ? text : `${text}\n`);
}
