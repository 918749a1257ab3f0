// Step 1 of the deploy, read only: can this host run its part? Nothing is stopped before every host passes,
// so a deploy that cannot succeed never tears down the running one. The checks are declared in src/steps/; this
// runs their reads (and the host's agreement read) in one round trip and judges them. A failed check is a
// finding in the report (with what to fix); only SSH failures are thrown, and the workflow reports those per host.
import { runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';
import { judgePreflight, preflightCommands } from '../steps/preflight.js';
import { readTimeoutMs } from '../steps/agreement-read.js';
import type { PreflightInput, PreflightReport } from './types.js';

export async function preflightHost(input: PreflightInput): Promise<PreflightReport> {
  return onHost(input.host, async (session) => {
    const startedAtMs = Date.now();
    const answers = await runCommands(session, preflightCommands(input), {
      timeoutMs: 120_000 + (input.agreement ? readTimeoutMs(input.agreement.read) : 0),
    });
    return judgePreflight(answers, input, startedAtMs);
  });
}
