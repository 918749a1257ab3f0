// A step's remote command with its name: what the step's judge finds its answer by, what `liftoff plan` shows,
// and how the runner (activities/run-commands.ts) runs it. Several of one step go to the host in one round trip
// when the runner can batch them; each still answers for itself.
import type { ExecResult } from '../ssh/executor.js';
import type { RemoteCommand } from '../ssh/quote.js';

/** Each command's result by its name; a command whose `unlessOk` command passed did not run and has none. */
export type Answers = ReadonlyMap<string, ExecResult>;

export interface StepCommand {
  /** [a-z0-9-]{1,32}, unique within one run: the judge's key for its answer. */
  name: string;
  command: RemoteCommand;
  /** It changes the host (stops, removes, starts); every other command only reads. */
  change?: true;
  /** A non-zero exit is the command's own failure (RemoteCommandError), not a finding for the judge. */
  check?: true;
  /** Bytes kept of its output; the runner's default otherwise. */
  maxBytes?: number;
  /** It takes the run's stdin (an env transport: `while read … export`); at most one command of a run may. */
  stdin?: true;
  /** It runs only when the command of this name (earlier in the run) exited non-zero: "start it unless it is". */
  unlessOk?: string;
  /**
   * The host first waits until `until` succeeds, checking every `everySeconds`, at most `seconds` in all: a confirm
   * read right after a start waits on the host instead of in round trips. It only says when to read.
   */
  waitUntil?: { until: RemoteCommand; seconds: number; everySeconds: number };
  /** For the plan: the case in which it runs, when only the host or an earlier answer can tell. */
  when?: string;
  /** For the plan: it runs again until a condition holds; said how. */
  repeats?: string;
}

const namePattern = /^[a-z0-9-]{1,32}$/;

/** Refuses a run whose names a judge could confuse, or whose unlessOk names no earlier command. */
export function checkStepCommands(commands: readonly StepCommand[]): void {
  const seen = new Set<string>();
  for (const c of commands) {
    if (!namePattern.test(c.name))
      throw new TypeError(`step command name ${JSON.stringify(c.name)} is not [a-z0-9-]{1,32}`);
    if (seen.has(c.name)) throw new TypeError(`step command name ${c.name} is given twice in one run`);
    if (c.unlessOk !== undefined && !seen.has(c.unlessOk))
      throw new TypeError(
        `step command ${c.name}: unlessOk names ${c.unlessOk}, which does not run before it`,
      );
    seen.add(c.name);
  }
  if (commands.filter((c) => c.stdin).length > 1)
    throw new TypeError('at most one command of a run takes its stdin');
}

/** The answer of the command `name`; a step asking for one it did not run is a mistake in the step. */
export function answerOf(answers: Answers, name: string): ExecResult {
  const answer = answers.get(name);
  if (!answer) throw new Error(`no answer for ${name}: the step did not run that command`);
  return answer;
}
