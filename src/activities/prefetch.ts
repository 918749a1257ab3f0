// Read-only steps in one round trip per host: the reads a step's checks will make are run first as one sectioned
// command (src/host-commands/sections.ts), and the checks then run unchanged against a session that answers each
// of those commands from what came back, once. Each read keeps its own exit status, stdout and stderr, so every
// check judges its own read with its own message, and one read that fails (a missing tool) leaves the others'
// answers standing. A read whose section came back unreadable is run again on its own, as it always was; so is
// any command that was not prefetched, or a second run of one that was (a read after a change must see the host
// as it is then).
import type { ExecOptions, ExecResult, SshSession } from '../ssh/executor.js';
import type { RemoteCommand } from '../ssh/quote.js';
import { prefetchCommand } from '../host-commands/sections.js';
import { parseSections, sectionProblem, splitStderr } from '../parsers/sections.js';

export interface PrefetchOptions {
  timeoutMs: number;
  /** Bytes kept of each read's output (stdout and stderr together); the executor's default cap per stream. */
  maxBytesPerRead?: number;
}

/**
 * Runs `reads` as one remote command and returns a session that answers them. Commands given twice are read
 * once. A check that runs with `check` left on (throw on failure) and whose read failed gets a real run, so the
 * executor throws its own error as before.
 */
export async function prefetchReads(
  session: SshSession,
  reads: readonly RemoteCommand[],
  opts: PrefetchOptions,
): Promise<SshSession> {
  const batch = prefetchCommand(reads, opts.maxBytesPerRead);
  const answers = new Map<string, ExecResult>();
  if (batch.commands.length > 0) {
    const started = Date.now();
    const res = await session.exec(batch.command, {
      timeoutMs: opts.timeoutMs,
      check: false,
      stdoutBytes: true,
      maxOutputBytes: batch.maxOutputBytes,
    });
    const out = parseSections(res.stdoutBytes ?? Buffer.alloc(0), batch.bounds);
    const durationMs = Date.now() - started;
    batch.commands.forEach((command, i) => {
      const name = `r${i}`;
      const s = out.sections.get(name);
      if (!s || sectionProblem(s, name) !== undefined || s.exitCode === undefined) return;
      const { stdout, stderr } = splitStderr(s.text);
      answers.set(command.text, {
        exitCode: s.exitCode,
        stdout,
        stderr,
        durationMs,
        // The read printed more than its bound: what the executor says of an output it cut.
        ...(s.cut ? { stdoutCutBytes: 1 } : {}),
      });
    });
  }
  return {
    target: session.target,
    close: () => session.close(),
    exec(cmd: RemoteCommand, execOpts?: ExecOptions): Promise<ExecResult> {
      const answer = answers.get(cmd.text);
      // Streams, stdin and byte results want the real command; so does a failed read the caller wants thrown.
      const plain =
        execOpts?.stdin === undefined &&
        execOpts?.onStdout === undefined &&
        execOpts?.onStderr === undefined &&
        execOpts?.stdoutBytes !== true;
      if (answer && plain && (answer.exitCode === 0 || execOpts?.check === false)) {
        answers.delete(cmd.text);
        return Promise.resolve(answer);
      }
      answers.delete(cmd.text);
      return session.exec(cmd, execOpts);
    },
  };
}
