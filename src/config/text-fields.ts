// The spec's text fields, each with its length cap checked first: a longer text is refused before any pattern
// or rule reads it, and its error quotes only its start. Pure: workflows validate with it.
import { z } from 'zod';
import { shown } from './errors.js';
import { homeRelativeProblem } from './host-guards.js';
import { maxChars } from './limits.js';

/** A string of at most `max` characters; the cap aborts the field's other checks. */
export function cappedText(max: number) {
  return z.string().max(max, {
    abort: true,
    error: (issue) =>
      `${typeof issue.input === 'string' ? shown(issue.input) : 'the text'} is longer than ${max} characters, the most this field takes`,
  });
}

/** A list of at most `max` items; the cap aborts the list's other checks. */
export function cappedList<T extends z.ZodType>(item: T, max: number, what: string) {
  return z.array(item).max(max, {
    abort: true,
    error: (issue) =>
      `${Array.isArray(issue.input) ? issue.input.length : 'too many'} ${what}, more than the ${max} a spec may list`,
  });
}

/** UTF-8 bytes of a text, counted without Node's Buffer (workflows import this). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A surrogate pair is 4 bytes in UTF-8, 2 for each of its units.
    bytes += unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;
  }
  return bytes;
}

/** Text that becomes one command-line argument: no NUL, which no argument can carry. */
export function argText(max: number) {
  // The quoting function would refuse a NUL at run time, on a host, after Ray started.
  return cappedText(max).refine((s) => !s.includes('\0'), {
    error: 'contains a NUL byte, which no command-line argument can carry',
  });
}

export const envName = cappedText(maxChars.envName).regex(
  /^[A-Za-z_][A-Za-z0-9_]*$/,
  'expected an environment variable name',
);

/** A path on the worker's host: `~/` is the worker user's home. The worker policy decides which ones it reads. */
export const workerPath = argText(maxChars.path).regex(
  /^(\/|~\/)/,
  'expected an absolute path (starting with / or ~/)',
);

/** A path on the GPU hosts: absolute, since `~` is never expanded there (liftoff quotes every path). */
export const hostPath = argText(maxChars.path).superRefine((path, ctx) => {
  const problem =
    homeRelativeProblem(path) ??
    (path.startsWith('/') ? undefined : 'expected an absolute path on the hosts (starting with /)');
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** A volume (`ray.volumes`, a companion's): its host side is a host path, so a `~` there is refused for the same reason. */
export const volume = argText(maxChars.volume).superRefine((text, ctx) => {
  const problem =
    homeRelativeProblem(text) ??
    (/^\/[^:]*:\/[^:]*(:(ro|rw))?$/.test(text) ? undefined : 'expected HOST_PATH:CONTAINER_PATH[:ro|rw]');
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

export const port = z
  .number()
  .int('expected a whole port number')
  .min(1, 'expected a port from 1 to 65535')
  .max(65535, 'expected a port from 1 to 65535');

export const imageRef = cappedText(maxChars.image).regex(
  /^[a-z0-9][a-z0-9._/:@-]*$/i,
  'expected a docker image reference such as vllm/vllm-openai:latest',
);
