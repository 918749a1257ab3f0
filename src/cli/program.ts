// Builds the `liftoff` command tree; src/client.ts runs it.
import { Command } from 'commander';
import { devCommand } from '../commands/dev.js';
import { workerCommand } from '../commands/worker.js';
import { probeCommand } from '../commands/probe.js';
import { validateCommand } from '../commands/validate.js';
import { deployCommand } from '../commands/deploy.js';
import { statusCommand } from '../commands/status.js';
import { cancelCommand } from '../commands/cancel.js';

export function buildProgram(): Command {
  const program = new Command('liftoff')
    .description('launch a multi-node vLLM server over Ray as a durable Temporal workflow')
    .showHelpAfterError()
    .exitOverride();
  for (const cmd of [
    validateCommand,
    deployCommand,
    statusCommand,
    cancelCommand,
    devCommand,
    workerCommand,
    probeCommand,
  ])
    program.addCommand(cmd);
  return program;
}
