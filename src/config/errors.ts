// Spec errors name the field path, what was found and what is expected.
import type { z } from 'zod';

/** A zod check that refuses a value with what `problem` says is wrong with it (undefined: nothing). */
export function problemCheck<T>(problem: (value: T) => string | undefined) {
  return (value: T, ctx: z.RefinementCtx<T>): void => {
    const message = problem(value);
    if (message) ctx.addIssue({ code: 'custom', message });
  };
}

/** A problem a rule outside zod finds, at its field's path: the schema adds it as a custom issue. */
export interface SpecIssue {
  path: (string | number)[];
  message: string;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(spec)';
}

/** The most characters of a value an error quotes: a megabyte of text is shown by its start and its length. */
const shownChars = 64;

/** A value as an error quotes it: JSON, cut to its start when long. */
export function shown(value: string): string {
  if (value.length <= shownChars) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, shownChars))}… (${value.length} characters)`;
}

export function formatIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `  ${formatPath(issue.path)}: ${issue.message}`).join('\n');
}
