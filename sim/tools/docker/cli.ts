// What every docker subcommand shares: the version it claims, stdout/stderr, and the CLI's error messages
// (cobra's flag errors, argument counts, template errors), worded as Debian's docker.io 20.10 words them: the
// engine the real-Docker tests run (sim/real-docker.ts), whose texts were compared with these side by side.
import { FlagError, parseFlags, type FlagSpecs, type ParsedFlags } from './args.js';
import { TemplateError } from './format.js';
import { toolIo } from '../io.js';

export const dockerVersion = '20.10.24+dfsg1';
export const apiVersion = '1.41';

export function out(text: string): void {
  toolIo().stdout(text);
}

export function err(text: string): void {
  toolIo().stderr(text.endsWith('\n') ? text : `${text}\n`);
}

/**
 * `docker run` reports an error with a "docker: " prefix, ended with one period, and (for an error before the
 * container starts) a pointer to --help; an error starting it comes without the pointer.
 */
export function runError(cmd: string, message: string, code: number, withHelp = true): number {
  const sentence = `${message.replace(/\.$/, '')}.`;
  err(`docker: ${sentence}${withHelp ? `\nSee 'docker ${cmd} --help'.` : ''}`);
  return code;
}

/** What the 20.10 client says of a container the daemon does not have (rm, inspect, logs, exec). */
export function noSuchContainer(ref: string): string {
  return `Error: No such container: ${ref}`;
}

/** The daemon's own words for it, which stop, wait and kill pass on. */
export function daemonNoSuchContainer(ref: string): string {
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
    const fromCaller = toolIo().env[v];
    return fromCaller === undefined ? [] : [`${v}=${fromCaller}`];
  });
}
