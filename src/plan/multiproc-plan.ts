// `liftoff plan`'s launch steps for serve.backend: multiproc (vLLM's own multi-node mode, no Ray): the Ray
// steps shown skipped with the deploy's reason, the host's rank container (headless ranks first, then rank 0),
// and a headless rank's polls during the load. Built from the activities' own input and command builders
// (src/host-commands/step-inputs.ts rankInput, src/host-commands/multiproc.ts), so plan and deploy agree. Pure.
import { multiprocSkipsRay } from '../config/backend.js';
import type { DeploySpec } from '../config/schema.js';
import { envTransport } from '../host-commands/env-transport.js';
import { inspectContainerCommand } from '../host-commands/launch.js';
import { listenerCommand, rankEnv, rankRunCommand } from '../host-commands/multiproc.js';
import { ipv4AddressesCommand } from '../host-commands/preflight.js';
import { rankInput } from '../host-commands/step-inputs.js';
import { rankPollCommand } from '../host-commands/polls.js';
import { raw } from '../ssh/quote.js';
import { change, planEnv, planPlaceholders, read, type PlanHost, type PlannedStep } from './planned.js';

/** Rank 0 is the head; the other hosts take ranks 1.. in the spec's order (as the deploy's ranksOf). */
export function rankOf(host: PlanHost, workers: readonly PlanHost[]): number {
  return host.role === 'head' ? 0 : workers.findIndex((w) => w.name === host.name) + 1;
}

/** The Ray steps this host would run with serve.backend ray, shown skipped. */
export function skippedRaySteps(host: PlanHost): PlannedStep[] {
  const start = host.role === 'head' ? 'startRayHead' : 'startRayWorkers';
  return [start, 'verifyRayCluster'].map((step) => ({ step, commands: [], skipped: multiprocSkipsRay }));
}

/**
 * launchServe on this host: its rank's container. A retried start also reads its marker (a live rank of this
 * launch is kept) or removes a dead one; a first start finds no container, since removeContainers removed it.
 */
export function rankLaunchStep(
  spec: DeploySpec,
  launchId: string,
  host: PlanHost,
  head: PlanHost,
  workers: readonly PlanHost[],
  clusterIface: string | undefined,
): PlannedStep {
  const rank = rankOf(host, workers);
  const input = rankInput(spec, launchId, host, rank, head);
  const { values, secretNames } = planEnv(input.env);
  const transport = envTransport(rankEnv(host.clusterIp, clusterIface, values), secretNames);
  const container = spec.ray.container;
  const untilConfirmed =
    'for 2 s after the start: a refused flag or a taken master port ends the rank at once';
  const headless = workers.map((w) => w.name).join(', ');
  return {
    step: 'launchServe',
    note:
      rank === 0
        ? `rank 0, once the headless ranks${headless ? ` (${headless})` : ''} have started`
        : `rank ${rank} (headless), started before rank 0 on ${head.name}`,
    commands: [
      read(inspectContainerCommand(container)),
      // Checked again right before rank 0 listens there: the head may have changed since preflight.
      ...(rank === 0 ? [read(listenerCommand(input.masterPort))] : []),
      read(ipv4AddressesCommand()),
      change(rankRunCommand(input, transport, raw(planPlaceholders.startedAt))),
      read(inspectContainerCommand(container), untilConfirmed),
    ],
  };
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
