// The `liftoff` CLI: parses arguments, talks to Temporal, renders. No deploy logic lives here.
import { CommanderError } from 'commander';
import { buildProgram } from './commands/index.js';
import { ExitCode } from './cli/exit-codes.js';

async function main(): Promise<void> {
  try {
    await (await buildProgram(process.argv.slice(2))).parseAsync(process.argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; anything else commander rejects is a usage error.
      process.exitCode = err.exitCode === 0 ? ExitCode.ok : ExitCode.invalidInput;
      return;
    }
    throw err;
  }
}

await main();
