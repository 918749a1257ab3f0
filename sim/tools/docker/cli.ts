// What every docker subcommand shares: the version it claims, stdout/stderr, and the CLI's error messages
// (cobra's flag errors, argument counts, template errors), worded as docker 28 words them.
import { FlagError, parseFlags, type FlagSpecs, type ParsedFlags } from './args.js';
import { TemplateError } from './format.js';

export const dockerVersion = '28.5.1';
export const apiVersion = '1.51';

export function out(text: string): void {
  process.stdout.write(text);
}

export function err(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** `docker run`/`docker exec` report daemon errors with a "docker: " prefix and a pointer to --help. */
export function runError(cmd: string, message: string, code: number): number {
  err(`docker: ${message}\n\nRun 'docker ${cmd} --help' for more information`);
  return code;
}

export function noSuchContainer(ref: string): string {
  return `Error response from daemon: No such container: ${ref}`;
}

export function parseOrFail(
  cmd: string,
  args: string[],
  specs: FlagSpecs,
  interspersed = true,
): ParsedFlags | number {
  try {
    const parsed = parseFlags(args, { help: {}, ...specs }, interspersed);
    if (!parsed.has('help')) return parsed;
    out(`\nUsage:  docker ${cmd} [OPTIONS]\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    err(`${e.message}\nSee 'docker ${cmd} --help'.`);
    return 125;
  }
}

export function requireArgs(
  cmd: string,
  usage: string,
  got: number,
  min: number,
  exactly = false,
): number | undefined {
  if (exactly ? got === min : got >= min) return undefined;
  const what = min === 1 ? '1 argument' : `${min} arguments`;
  err(
    `"docker ${cmd}" requires ${exactly ? 'exactly' : 'at least'} ${what}.\nSee 'docker ${cmd} --help'.\n\nUsage:  docker ${cmd} ${usage}`,
  );
  return 1;
}

export function withTemplate(render: () => string): number {
  try {
    out(render());
    return 0;
  } catch (e) {
    if (!(e instanceof TemplateError)) throw e;
    err(`template parsing error: ${e.message}`);
    return 1;
  }
}

/** `-e K` without a value takes K from the caller's environment; unset, it is dropped, as docker does. */
export function parseEnv(values: string[]): string[] {
  return values.flatMap((v) => {
    if (v.includes('=')) return [v];
    const fromCaller = process.env[v];
    return fromCaller === undefined ? [] : [`${v}=${fromCaller}`];
  });
}
