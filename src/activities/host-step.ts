// The one activity behind every host step (src/steps/host-steps.ts): the step's commands as one round trip on the
// host, then its judge. The worker registers it once per step, under the step's name.
import { hostSteps } from '../steps/host-steps.js';
import type { HostStep, HostStepInput } from '../steps/host-step.js';
import { runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';

export async function runHostStep(step: HostStep, input: HostStepInput): Promise<string> {
  return onHost(input.host.ref, async (session) =>
    step.judge(await runCommands(session, step.commands(input), { timeoutMs: step.timeoutMs }), input),
  );
}

/** Each host step as an activity of its own name. */
export const hostStepActivities: Record<string, (input: HostStepInput) => Promise<string>> =
  Object.fromEntries(
    hostSteps.map((step) => [step.name, (input: HostStepInput) => runHostStep(step, input)]),
  );
