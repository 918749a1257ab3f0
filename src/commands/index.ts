// Builds the `liftoff` command tree; src/client.ts runs it.
import { Command } from 'commander';
import { devCommand } from './dev.js';
import { workerCommand } from './worker.js';
import { probeCommand } from './probe.js';
import { validateCommand } from './validate.js';
import { planCommand } from './plan.js';
import { initCommand } from './init.js';
import { deployCommand } from './deploy.js';
import { statusCommand } from './status.js';
import { cancelCommand } from './cancel.js';
import { historyCommand } from './history.js';
import { postmortemCommand } from './postmortem.js';
import { scheduleCommand } from './schedule/index.js';
import { trustCommand } from './trust.js';
import { superviseCommand } from './supervise/index.js';

export function buildProgram(): Command {
  const program = new Command('liftoff')
    .description('launch a multi-node vLLM server over Ray as a durable Temporal workflow')
    .showHelpAfterError()
    .exitOverride();
  for (const cmd of [
    validateCommand,
    planCommand,
    initCommand,
    deployCommand,
    statusCommand,
    cancelCommand,
    historyCommand,
    postmortemCommand,
    scheduleCommand,
    superviseCommand,
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
