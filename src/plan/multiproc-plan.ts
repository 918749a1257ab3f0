// `liftoff plan`'s steps for serve.backend: multiproc (vLLM's own multi-node mode, no Ray): the Ray steps shown
// skipped with the deploy's reason, and a headless rank's polls during the load. The rank's container is its step's
// own plan entry (src/steps/start-rank.ts). Pure.
import { multiprocSkipsRay } from '../config/backend.js';
import type { DeploySpec } from '../config/schema.js';
import { rankPollCommand } from '../host-commands/polls.js';
import { read, type PlanHost, type PlannedStep } from '../steps/plan-entry.js';

/** Rank 0 is the head; the other hosts take ranks 1.. in the spec's order (as the deploy's rankFollowers). */
export function rankOf(host: PlanHost, workers: readonly PlanHost[]): number {
  return host.role === 'head' ? 0 : workers.findIndex((w) => w.name === host.name) + 1;
}

/** The Ray steps this host would run with serve.backend ray, shown skipped. */
export function skippedRaySteps(host: PlanHost): PlannedStep[] {
  const start = host.role === 'head' ? 'startRayHead' : 'startRayWorkers';
  return [start, 'verifyRayCluster'].map((step) => ({ step, commands: [], skipped: multiprocSkipsRay }));
}

/** waitHealthy on a headless rank's host: its container, what its log said since the last poll, its last lines. */
export function rankPollStep(spec: DeploySpec, untilHealthy: string): PlannedStep {
  const log = spec.serve.logPath;
  return {
    step: 'waitHealthy',
    // One command per poll (polls.ts rankPollCommand); the offset read from is the run's.
    commands: [read(rankPollCommand(spec.ray.container, log, 0).command, untilHealthy)],
  };
}
