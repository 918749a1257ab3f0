// A deploy step that is one round trip on some hosts and a verdict, declared whole: the hosts it runs on, its
// named commands, its pure judge (the step's detail line, or the step's ApplicationFailure), its plan entry's
// intent and the patch id that gates it in workflow code. src/steps/host-steps.ts lists them; one activity runs
// any of them (activities/host-step.ts), registered under the step's name, so the history, `status` and the
// postmortem name the step as they name the others. Adding one takes its module here, a line in the list, its
// row in workflows/steps.ts and its call in workflows/deploy.ts. Workflow code imports the steps listed (to skip
// one, ask its patch and pick its hosts): a step module imports nothing the workflow sandbox lacks (no Buffer).
import type { DeploySpec } from '../config/schema.js';
import type { Answers, StepCommand } from '../host-commands/step-command.js';
import type { PlanHost } from './plan-entry.js';

/** What a host step's functions see: the spec and the host it runs on (a PlanHost: name, role, clusterIp, ref). */
export interface HostStepInput {
  spec: DeploySpec;
  host: PlanHost;
}

export interface HostStep {
  /** The deploy step (workflows/steps.ts) and the activity type: camelCase, unique. */
  name: string;
  /**
   * The id workflow code asks `patched()` before it schedules the step: a run recorded before the step existed
   * replays past it (workflows/patches.ts lists every id).
   */
  patch: string;
  on: 'head' | 'every host';
  /** The deploy step it follows (its call in workflows/deploy.ts sits there): where the plan lists it. */
  after: string;
  /** Whether the spec's deploy runs it at all; when not, why (the tracker shows the step as skipped). */
  skippedFor(spec: DeploySpec): string | undefined;
  commands(input: HostStepInput): StepCommand[];
  /** Pure: the step's detail for this host, or it throws the step's ApplicationFailure. */
  judge(answers: Answers, input: HostStepInput): string;
  /** What the step makes sure of on this host, in words: the plan's first lines for it. */
  intent(input: HostStepInput): string[];
  /** The round trip's timeout. */
  timeoutMs: number;
}

export function runsOn(step: HostStep, role: PlanHost['role']): boolean {
  return step.on === 'every host' || role === 'head';
}
