// How env values reach a remote docker run / docker exec: plain ones as flags, secret ones on stdin only.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { isSecretEnvName } from '../shared/secrets.js';
import { sh, type RemoteCommand } from '../ssh/quote.js';

/**
 * Env for a remote command. Plain values go on the command line as `-e K=V`; values that look secret
 * are sent on stdin and exported by the remote shell, and docker gets only `-e K`, which it completes
 * from its own environment: they never appear in a command line, a `ps` listing or an error message.
 */
export interface EnvTransport {
  /** `-e K=V` / `-e K` flags for docker run / docker exec. */
  flags: string[];
  /** Prefix that exports the secret values read from stdin (one K=V per line). */
  prelude: RemoteCommand;
  stdin: string;
}

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

const invalidSpec = (message: string) =>
  ApplicationFailure.create({ type: FailureType.invalidSpec, message, nonRetryable: true });

export function envTransport(
  env: Record<string, string>,
  secretNames: ReadonlySet<string> = new Set(),
): EnvTransport {
  const flags: string[] = [];
  const stdinLines: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!envName.test(name)) {
      throw invalidSpec(
        `environment variable name ${JSON.stringify(name)} is not a valid name (letters, digits, _; not starting with a digit)`,
      );
    }
    if (isSecretEnvName(name) || secretNames.has(name)) {
      if (/[\n\r\0]/.test(value)) {
        throw invalidSpec(`the value of ${name} contains a line break, which liftoff cannot pass to docker`);
      }
      flags.push('-e', name);
      stdinLines.push(`${name}=${value}`);
    } else {
      flags.push('-e', `${name}=${value}`);
    }
  }
  // `export "$kv"` assigns the text after the first `=` verbatim: nothing in a value is parsed by the shell.
  const prelude = sh`while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done;`;
  return { flags, prelude, stdin: stdinLines.length > 0 ? `${stdinLines.join('\n')}\n` : '' };
}
