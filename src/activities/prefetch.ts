// Read-only steps in one round trip per host: the reads a step's checks will make are run first as one sectioned
// command (src/host-commands/sections.ts), and the checks then run unchanged against a session that answers each
// of those commands from what came back, once. Each read keeps its own exit status, stdout and stderr, so every
// check judges its own read with its own message, and one read that fails (a missing tool) leaves the others'
// answers standing. A read whose section came back unreadable is run again on its own, as it always was; so is
// any command that was not prefetched, or a second run of one that was (a read after a change must see the host
// as it is then). A step whose commands do not depend on each other's answers (stop, disable, then read the
// states) runs them the same way, in their order.
import type { RemoteCommand } from '../ssh/quote.js';
import type { ExecOptions, ExecResult, SshSession } from '../ssh/executor.js';
import { prefetchCommand, type BatchEntry } from '../host-commands/sections.js';
import { parseSections, sectionProblem, splitStderr } from '../parsers/sections.js';

export interface PrefetchOptions {
  timeoutMs: number;
  /** Bytes kept of each read's output (stdout and stderr together); the executor's default cap per stream. */
  maxBytesPerRead?: number;
  /** What the one item marked `stdin` reads (an env transport's lines). */
  stdin?: string;
  /** Values the batch handles that its errors must not show (ExecOptions.secrets). */
  secrets?: readonly string[];
}

/** A command and what the host answered to it: what one activity hands the next (activities/step-handoff.ts). */
export type AnsweredRead = readonly [command: RemoteCommand, result: ExecResult];

interface Answer {
  result: ExecResult;
  /** The item read the batch's stdin: a caller that passes stdin to it gets this answer. */
  tookStdin: boolean;
}

/**
 * Runs `reads` as one remote command and returns a session that answers them, each in the order given (a command
 * given twice as an item is answered twice). A check that runs with `check` left on (throw on failure) and whose
 * read failed gets a real run, so the executor throws its own error as before.
 */
export async function prefetchReads(
  session: SshSession,
  reads: readonly BatchEntry[],
  opts: PrefetchOptions,
): Promise<SshSession> {
  const batch = prefetchCommand(reads, opts.maxBytesPerRead);
  const answers = new Map<string, Answer[]>();
  if (batch.items.length > 0) {
    const started = Date.now();
    const res = await session.exec(batch.command, {
      timeoutMs: opts.timeoutMs,
      check: false,
      stdoutBytes: true,
      maxOutputBytes: batch.maxOutputBytes,
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
    });
    const out = parseSections(res.stdoutBytes ?? Buffer.alloc(0), batch.bounds);
    const durationMs = Date.now() - started;
    batch.items.forEach((item, i) => {
      const name = `r${i}`;
      const s = out.sections.get(name);
      if (!s || sectionProblem(s, name) !== undefined || s.exitCode === undefined) return;
      const { stdout, stderr } = splitStderr(s.text);
      const queue = answers.get(item.command.text) ?? [];
      queue.push({
        result: {
          exitCode: s.exitCode,
          stdout,
          stderr,
          durationMs,
          // The read printed more than its bound: what the executor says of an output it cut.
          ...(s.cut ? { stdoutCutBytes: 1 } : {}),
        },
        tookStdin: item.stdin === true,
      });
      answers.set(item.command.text, queue);
    });
  }
  return answering(session, answers);
}

/** Each of `commands` run on `session` (a prefetched one answers them) and paired with its result, to hand on. */
export async function answeredReads(
  session: SshSession,
  commands: readonly RemoteCommand[],
  timeoutMs: number,
): Promise<AnsweredRead[]> {
  const answered: AnsweredRead[] = [];
  for (const c of commands) answered.push([c, await session.exec(c, { timeoutMs, check: false })]);
  return answered;
}

/**
 * A session that answers `reads` with results an earlier activity got for those very commands
 * (activities/step-handoff.ts), each once; everything else goes to the host.
 */
export function sessionAnswering(session: SshSession, reads: readonly AnsweredRead[]): SshSession {
  const answers = new Map<string, Answer[]>();
  for (const [cmd, result] of reads)
    answers.set(cmd.text, [...(answers.get(cmd.text) ?? []), { result, tookStdin: false }]);
  return answering(session, answers);
}

function answering(session: SshSession, answers: Map<string, Answer[]>): SshSession {
  return {
    target: session.target,
    close: () => session.close(),
    exec(cmd: RemoteCommand, execOpts?: ExecOptions): Promise<ExecResult> {
      const queue = answers.get(cmd.text);
      const answer = queue?.shift();
      if (queue?.length === 0) answers.delete(cmd.text);
      // Streams and byte results want the real command; so does a failed read the caller wants thrown, and
      // stdin that the batch did not give this read.
      const plain =
        (execOpts?.stdin === undefined || answer?.tookStdin === true) &&
        execOpts?.onStdout === undefined &&
        execOpts?.onStderr === undefined &&
        execOpts?.stdoutBytes !== true;
      if (answer && plain && (answer.result.exitCode === 0 || execOpts?.check === false)) {
        return Promise.resolve(answer.result);
      }
      return session.exec(cmd, execOpts);
    },
  };
}
