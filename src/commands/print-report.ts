// The action of the commands that ask Temporal for one report about the cluster or schedule they name and print
// it (status, schedule describe, schedule delete): as text, or as JSON with --json.
import type { Client } from '@temporalio/client';
import { withClient } from '../temporal/connection.js';
import { emit, type OutputOptions } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';

export function printReport<T>(
  report: (client: Client, ref: string) => Promise<T>,
  render: (report: T) => string,
): (ref: string, opts: OutputOptions) => Promise<void> {
  return (ref, opts) =>
    runCommand(opts, async () => {
      emit(opts, await withClient((client) => report(client, ref)), render);
    });
}
