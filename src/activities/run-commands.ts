// The one runner of a step's remote commands. It runs them in their order as one round trip (host-commands/
// sections.ts frames each command's output as its own section) and hands back each command's answer by name, so
// the step's judge reads exactly what its own commands printed: nothing is matched by command text, nothing is
// kept for a later activity. A command whose section came back unreadable is run again on its own. A lone
// command runs as it is, with no framing.
import type { ExecResult, SshSession } from '../ssh/executor.js';
import { RemoteCommandError } from '../ssh/errors.js';
import { endpointOf } from '../ssh/target.js';
import { batchCommand, type SectionedCommand } from '../host-commands/sections.js';
import type { ExecOptions } from '../ssh/exec-contract.js';
import { checkStepCommands, type Answers, type StepCommand } from '../host-commands/step-command.js';
import { parseSections, sectionProblem, splitStderr, type ParsedSections } from '../parsers/sections.js';

export { answerOf, type Answers } from '../host-commands/step-command.js';

export interface RunOptions {
  /** For the whole trip (and for each command run again on its own). */
  timeoutMs: number;
  /** What the one command marked `stdin` reads. */
  stdin?: string;
  /** Values the commands handle that their errors must not show (ExecOptions.secrets). */
  secrets?: readonly string[];
  /** Bytes kept of a command's output when it names no bound of its own. */
  maxBytesPerCommand?: number;
}

export async function runCommands(
  session: SshSession,
  commands: readonly StepCommand[],
  opts: RunOptions,
): Promise<Answers> {
  checkStepCommands(commands);
  const answers = new Map<string, ExecResult>();
  const lone = commands.length === 1 && commands[0]?.waitUntil === undefined;
  if (commands.length > 1 || !lone) {
    const batch = batchCommand(commands, opts.maxBytesPerCommand);
    const started = Date.now();
    const out = await execSectioned(session, batch, {
      timeoutMs: opts.timeoutMs,
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
    });
    const durationMs = Date.now() - started;
    for (const c of commands) {
      const s = out.sections.get(c.name);
      if (!s || sectionProblem(s, c.name) !== undefined || s.exitCode === undefined) continue;
      const { stdout, stderr } = splitStderr(s.text);
      // A section cut to its bound is what the executor reports of an output it cut.
      answers.set(c.name, {
        exitCode: s.exitCode,
        stdout,
        stderr,
        durationMs,
        ...(s.cut ? { stdoutCutBytes: 1 } : {}),
      });
    }
  }
  for (const c of commands) {
    if (answers.has(c.name)) continue;
    if (c.unlessOk !== undefined && answers.get(c.unlessOk)?.exitCode === 0) continue;
    answers.set(
      c.name,
      await session.exec(c.command, {
        timeoutMs: opts.timeoutMs,
        check: false,
        ...(c.maxBytes !== undefined ? { maxOutputBytes: c.maxBytes } : {}),
        ...(c.stdin && opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
        ...(opts.secrets ? { secrets: opts.secrets } : {}),
      }),
    );
  }
  for (const c of commands) {
    const answer = answers.get(c.name);
    if (c.check && answer && answer.exitCode !== 0) {
      throw new RemoteCommandError(
        endpointOf(session.target),
        { command: c.command.text, ...answer, ...(answer.signal ? { signal: answer.signal } : {}) },
        opts.secrets,
      );
    }
  }
  return answers;
}

/**
 * Runs a sectioned command (a step's batch, a poll) without failing on its exit status (each section carries its
 * own) and splits what it printed, read as bytes and capped at the command's own bound: the bounds the command was
 * built with are the ones its output is parsed with.
 */
export async function execSectioned(
  session: SshSession,
  cmd: SectionedCommand,
  opts: Pick<ExecOptions, 'timeoutMs' | 'stdin' | 'secrets'>,
): Promise<ParsedSections> {
  const res = await session.exec(cmd.command, {
    ...opts,
    check: false,
    stdoutBytes: true,
    maxOutputBytes: cmd.maxOutputBytes,
  });
  return parseSections(res.stdoutBytes ?? Buffer.alloc(0), cmd.bounds);
}
