// Builds the `liftoff` command tree; src/client.ts runs it.
import { Command } from 'commander';
import { devCommand } from '../commands/dev.js';
import { workerCommand } from '../commands/worker.js';
import { probeCommand } from '../commands/probe.js';
import { validateCommand } from '../commands/validate.js';
import { deployCommand } from '../commands/deploy.js';
import { statusCommand } from '../commands/status.js';
import { cancelCommand } from '../commands/cancel.js';
import { historyCommand } from '../commands/history.js';
import { postmortemCommand } from '../commands/postmortem.js';
import { scheduleCommand } from '../commands/schedule/index.js';
import { trustCommand } from '../commands/trust.js';

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
    historyCommand,
    postmortemCommand,
    scheduleCommand,
    devCommand,
    workerCommand,
    probeCommand,
    trustCommand,
  ])
    program.addCommand(cmd);
  // exitOverride does not reach commands added with addCommand: without it commander exits 1 on a usage
  // error itself, where liftoff promises exit code 2.
  const override = (cmd: Command): void => {
    cmd.exitOverride();
    cmd.commands.forEach(override);
  };
  override(program);
  return program;
}
