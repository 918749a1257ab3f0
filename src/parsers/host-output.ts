// What a host prints is untrusted input: every parser cuts its lines to a few KB before any regex runs on
// them, and every number it reads must be finite, non-negative and within a sane bound. An out-of-bounds
// number is an error that names the output, never a value a check could pass on.

/** Longest line a parser looks at; the rest of a longer line is dropped before any pattern sees it. */
export const maxHostLineChars = 4096;

/** The line's first maxHostLineChars characters, with a note saying how many were cut. */
export function cutLine(line: string): string {
  if (line.length <= maxHostLineChars) return line;
  return `${line.slice(0, maxHostLineChars)} … [${line.length - maxHostLineChars} characters cut]`;
}

/** The text split on `\n`, each line cut (cutLine). */
export function hostLines(text: string): string[] {
  return text.split('\n').map(cutLine);
}

/**
 * Output no real tool prints: a number that is not finite, negative or past its bound, or an output longer
 * than the executor keeps. Checks that read it cannot judge the host, so this is never a pass.
 */
export class HostOutputError extends Error {
  override readonly name = 'HostOutputError';
}

/**
 * Checks a number read from host output. `what` names the output and the field, for the message:
 * `nvidia-smi memory.used`, `ray status GPU total`, …
 */
export function boundedNumber(value: number, what: string, max: number, printed?: string): number {
  const shown = printed !== undefined ? JSON.stringify(printed) : String(value);
  let why: string | undefined;
  if (!Number.isFinite(value)) why = 'not a finite number';
  else if (value < 0) why = 'negative';
  else if (value > max) why = `above ${max}, more than any real host reports`;
  if (why !== undefined) {
    throw new HostOutputError(
      `${what} is ${shown}: ${why}. The host's output cannot be trusted; check that tool on the host by hand.`,
    );
  }
  return value;
}

// The CLI's pointer to its own --help (20.10: `See 'docker run --help'.`; 28.x: `Run 'docker run --help' for more
// information`): no help to whoever reads a deploy's failure.
const helpPointer = /^(See 'docker [a-z ]+--help'\.?|Run 'docker [a-z ]+--help' for more information)$/;

/** What docker printed, for a failure message: without its pointer to --help. */
export function dockerSaid(text: string): string {
  return text
    .split('\n')
    .filter((line) => !helpPointer.test(line.trim()))
    .join('\n')
    .trim();
}

/** The first listening socket `ss -Hltn 'sport = :PORT'` printed (at most 200 characters), or undefined. */
export function listenerOf(ssOutput: string): string | undefined {
  const line = ssOutput
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  return line === undefined ? undefined : line.slice(0, 200);
}
