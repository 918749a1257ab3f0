// A log's last lines as liftoff shows them (in a failure message, a status): read without failing, since a
// missing log is an empty one, and always redacted with the values liftoff handed the process that wrote it.
import { redactText } from '../shared/secrets.js';
import type { SshSession } from '../ssh/executor.js';
import type { RemoteCommand } from '../ssh/quote.js';

/** What the tail command `cmd` printed, redacted of `secrets`; '' when it printed nothing. */
export async function redactedLogTail(
  session: SshSession,
  cmd: RemoteCommand,
  secrets: readonly string[],
  timeoutMs: number,
): Promise<string> {
  const res = await session.exec(cmd, { timeoutMs, check: false });
  return redactText(res.stdout.trimEnd(), secrets);
}
