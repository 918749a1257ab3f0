// Steps 5–6, startRayHead and startRayWorkers: a host's Ray node container (`docker run … --entrypoint ray IMAGE
// start --block`), then a confirm that `ray start` said the node runs. Its commands and its plan entry; the
// activity (activities/ray-start.ts) judges the answers. Pure.
import type { DeploySpec } from '../config/schema.js';
import {
  containerLogTailCommand,
  inspectContainerCommand,
  rayConfirmPollSeconds,
  rayConfirmWindowSeconds,
  rayRunCommand,
  rayStartSettledCommand,
} from '../host-commands/launch.js';
import { headAddressOf, rayContainerInput } from '../host-commands/step-inputs.js';
import type { StepCommand } from '../host-commands/step-command.js';
import type { RemoteCommand } from '../ssh/quote.js';
import { planTransport, plannedRun, type PlanHost, type PlannedStep } from './plan-entry.js';

/**
 * The start's one round trip: the container's state, the run unless a container of that name exists (an earlier
 * launch's is for the activity to judge, with nothing started), then, once `ray start` said it runs or the
 * container stopped (waited for on the host, up to the confirm window), the confirm read: the log and the state.
 */
export function startCommands(container: string, run: RemoteCommand): StepCommand[] {
  return [
    { name: 'existing', command: inspectContainerCommand(container) },
    {
      name: 'run',
      command: run,
      change: true,
      stdin: true,
      unlessOk: 'existing',
      when: 'no container of that name',
    },
    {
      name: 'log',
      command: containerLogTailCommand(container),
      waitUntil: {
        until: rayStartSettledCommand(container),
        seconds: rayConfirmWindowSeconds,
        everySeconds: rayConfirmPollSeconds,
      },
    },
    { name: 'state', command: inspectContainerCommand(container) },
  ];
}

/** Each further confirm poll: the log (for `ray start`'s banner) and the container's state. */
export const confirmCommands = (container: string): StepCommand[] => [
  { name: 'log', command: containerLogTailCommand(container) },
  { name: 'state', command: inspectContainerCommand(container) },
];

/** startRayHead or startRayWorkers on this host, as `liftoff plan` shows it. */
export function startRayPlan(
  spec: DeploySpec,
  launchId: string,
  host: PlanHost,
  head: PlanHost,
): PlannedStep {
  const ray = rayContainerInput(
    spec,
    launchId,
    host,
    host.role === 'head' ? undefined : headAddressOf(spec, head),
  );
  const container = spec.ray.container;
  const run = rayRunCommand(ray, host.role, planTransport(spec.ray.env, { VLLM_HOST_IP: host.clusterIp }));
  return {
    step: host.role === 'head' ? 'startRayHead' : 'startRayWorkers',
    commands: [
      plannedRun(startCommands(container, run)),
      plannedRun(confirmCommands(container), {
        repeats: 'until `ray start` reports the node started (up to 3 s)',
      }),
      plannedRun([{ name: 'log', command: containerLogTailCommand(container) }], {
        when: 'it exited instead',
      }),
    ],
  };
}
