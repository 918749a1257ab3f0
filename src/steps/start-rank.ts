// launchServe of serve.backend multiproc, on one host: its rank's container (vLLM's own multi-node mode, no Ray).
// Its reads before the start (the container of that name, the launch marker and whether its pid runs, the host's
// addresses, and on rank 0 what listens on the master port) in one round trip; the start; the confirm; their
// judges and the plan entry. Pure.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import type { ExecResult } from '../ssh/executor.js';
import { raw } from '../ssh/quote.js';
import type { DeploySpec } from '../config/schema.js';
import { envTransport, type EnvTransport } from '../host-commands/env-transport.js';
import { containerLogTailCommand, inspectContainerCommand, markerPathFor } from '../host-commands/launch.js';
import { listenerCommand, rankEnv, rankRunCommand, type StartRankInput } from '../host-commands/multiproc.js';
import { ipv4AddressesCommand } from '../host-commands/preflight.js';
import { rankInput } from '../host-commands/step-inputs.js';
import type { StepCommand } from '../host-commands/step-command.js';
import { planEnv, planPlaceholders, plannedRun, type PlanHost, type PlannedStep } from './plan-entry.js';
import { preReadCommands } from './launch-serve.js';
import { listenerOf } from '../parsers/host-output.js';

/** How long a started rank must stay up before it counts as started, and how often that is looked at. */
export const rankConfirmWindowMs = 2_000;
export const rankConfirmPollMs = 250;

/** The reads before a rank starts, in one round trip; rank 0 also asks what listens on the master port. */
export function rankReadCommands(
  input: Pick<StartRankInput, 'container' | 'logPath' | 'rank' | 'masterPort'>,
): StepCommand[] {
  const marker = preReadCommands(input.container, markerPathFor(input.logPath), 'launch').filter(
    (c) => c.name !== 'ray-status',
  );
  return [
    { name: 'existing', command: inspectContainerCommand(input.container) },
    ...marker,
    { name: 'addrs', command: ipv4AddressesCommand() },
    ...(input.rank === 0 ? [listenerRead(input.masterPort)] : []),
  ];
}

/** What listens on the master port: read with the others, and again after an earlier container was removed. */
export const listenerRead = (port: number): StepCommand => ({
  name: 'listener',
  command: listenerCommand(port),
});

/** Rank 0 cannot listen on a port something holds: the spec's serve.masterPort must change, or what holds it go. */
export function judgeMasterPort(res: ExecResult, input: StartRankInput): void {
  const held = listenerOf(res.stdout);
  if (held === undefined) return;
  throw ApplicationFailure.create({
    type: FailureType.masterPortInUse,
    message: `serve.masterPort ${input.masterPort} is in use on the head ${input.host.target.name} (${held}); rank 0 cannot listen there. Stop what listens on it, or pick another serve.masterPort.`,
    nonRetryable: true,
    details: [{ host: input.host.target.name, port: input.masterPort, listener: held }],
  });
}

/** The start: one command runs the container, the copy of its output to the log and the marker. */
export function rankRun(
  input: StartRankInput,
  transport: EnvTransport,
  startedAt: number | ReturnType<typeof raw>,
): StepCommand {
  return { name: 'run', command: rankRunCommand(input, transport, startedAt), change: true, stdin: true };
}

/** Each confirm poll: whether the container still runs. */
export const rankConfirmCommands = (container: string): StepCommand[] => [
  { name: 'state', command: inspectContainerCommand(container) },
];

/**
 * launchServe on this host: its rank's container. A retried start that finds a live rank of this launch keeps it,
 * and removes any other first; a first start finds no container, since removeContainers removed it.
 */
export function startRankPlan(
  spec: DeploySpec,
  launchId: string,
  host: PlanHost,
  head: PlanHost,
  rank: number,
  headless: readonly string[],
  clusterIface: string | undefined,
): PlannedStep {
  const input = rankInput(spec, launchId, host, rank, head);
  const { values, secretNames } = planEnv(input.env);
  const env = rankEnv(host.clusterIp, clusterIface, values);
  const transport = envTransport(env, secretNames);
  const container = spec.ray.container;
  return {
    step: 'launchServe',
    note:
      rank === 0
        ? `rank 0, once the headless ranks${headless.length > 0 ? ` (${headless.join(', ')})` : ''} have started`
        : `rank ${rank} (headless), started before rank 0 on ${head.name}`,
    commands: [
      plannedRun(rankReadCommands(input)),
      ...(rank === 0
        ? [
            plannedRun([listenerRead(input.masterPort)], {
              when: 'a container of that name was removed first',
            }),
          ]
        : []),
      plannedRun([rankRun(input, transport, raw(planPlaceholders.startedAt))]),
      plannedRun(rankConfirmCommands(container), {
        repeats: 'for 2 s after the start: a refused flag or a taken master port ends the rank at once',
      }),
      plannedRun([{ name: 'log', command: containerLogTailCommand(container) }], {
        when: 'it exited instead',
      }),
    ],
  };
}
