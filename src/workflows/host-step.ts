// A host step (src/steps/host-step.ts) as the deploy runs it: skipped where the spec does not run it or the run
// predates it (its patch), else its activity on each of its hosts at once, their details joined.
import { patched, proxyActivities } from '@temporalio/workflow';
import type { DeploySpec } from '../config/schema.js';
import type { PlanHost } from '../steps/plan-entry.js';
import { hostStepNamed, type HostStepInput } from '../steps/host-steps.js';
import { runsOn } from '../steps/host-step.js';
import { retryProfiles } from './activity-options.js';
import { retryProfileOf, type StepName } from './steps.js';
import type { StepTracker } from './step-tracker.js';

type HostStepActivities = Record<string, (input: HostStepInput) => Promise<string>>;

export async function runHostStep(
  name: StepName,
  spec: DeploySpec,
  hosts: readonly PlanHost[],
  tracker: StepTracker,
): Promise<void> {
  const step = hostStepNamed(name);
  const skipped = step.skippedFor(spec);
  if (skipped !== undefined) return tracker.skip(name, skipped);
  if (!patched(step.patch)) return tracker.skip(name, 'not a step of the version this deploy started on');
  await tracker.run(name, async () => {
    const activity = proxyActivities<HostStepActivities>(retryProfiles(spec)[retryProfileOf(name)])[name];
    if (!activity) throw new Error(`no activity for host step ${name}`);
    const on = hosts.filter((h) => runsOn(step, h.role));
    const details = await Promise.all(
      on.map((h) =>
        activity({ spec, host: { name: h.name, role: h.role, clusterIp: h.clusterIp, ref: h.ref } }),
      ),
    );
    tracker.detail(name, details.join('; '));
  });
}
