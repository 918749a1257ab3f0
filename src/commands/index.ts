// Builds the `liftoff` command tree; src/client.ts runs it. A command's module is imported only when the command
// line needs it: `liftoff validate` loads the spec checks and not the Temporal client, ssh2 or the workflow code
// that other commands import, so it starts in a fraction of the time. Help without a command loads them all.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { projectRoot } from '../temporal/cli-path.js';

/** Each command by its name (the name it is given in its module), in the order help lists them. */
export const commandLoaders: Readonly<Record<string, () => Promise<Command>>> = {
  validate: async () => (await import('./validate.js')).validateCommand,
  plan: async () => (await import('./plan.js')).planCommand,
  init: async () => (await import('./init.js')).initCommand,
  deploy: async () => (await import('./deploy.js')).deployCommand,
  status: async () => (await import('./status.js')).statusCommand,
  cancel: async () => (await import('./cancel.js')).cancelCommand,
  down: async () => (await import('./down.js')).downCommand,
  revisions: async () => (await import('./revisions.js')).revisionsCommand,
  rollback: async () => (await import('./rollback.js')).rollbackCommand,
  history: async () => (await import('./history.js')).historyCommand,
  postmortem: async () => (await import('./postmortem.js')).postmortemCommand,
  schedule: async () => (await import('./schedule/index.js')).scheduleCommand,
  supervise: async () => (await import('./supervise/index.js')).superviseCommand,
  dev: async () => (await import('./dev.js')).devCommand,
  worker: async () => (await import('./worker.js')).workerCommand,
  probe: async () => (await import('./probe.js')).probeCommand,
  metrics: async () => (await import('./metrics.js')).metricsCommand,
  trust: async () => (await import('./trust.js')).trustCommand,
};

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/** The commands `args` (the command line after `liftoff`) can reach: the one it names, or all of them for help. */
function needed(args: readonly string[]): (() => Promise<Command>)[] {
  const first = args.find((a) => !a.startsWith('-'));
  if (first !== undefined && Object.hasOwn(commandLoaders, first)) return [commandLoaders[first]!];
  if (first === undefined && args.length > 0 && args.every((a) => a === '-V' || a === '--version')) return [];
  return Object.values(commandLoaders);
}

/** The program for `args` (default: every command, as `liftoff --help` shows them). */
export async function buildProgram(args?: readonly string[]): Promise<Command> {
  const program = new Command('liftoff')
    .description('launch a multi-node vLLM server over Ray as a durable Temporal workflow')
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride();
  for (const cmd of await Promise.all(
    (args ? needed(args) : Object.values(commandLoaders)).map((load) => load()),
  ))
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
