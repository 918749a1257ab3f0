// Spec errors name the field path, what was found and what is expected.
import type { z } from 'zod';

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(spec)';
}

export function formatIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `  ${formatPath(issue.path)}: ${issue.message}`).join('\n');
}
