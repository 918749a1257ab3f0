// `liftoff plan`'s look at one host, read only: the login's uid (root or sudo), which listed units systemd
// knows, which containers exist (and for a multiproc rank, its cluster interface), through the same reads the
// deploy's steps start with. From them the host's plan is written with the deploy's own command builders
// (src/plan/host-plan.ts).
import type { DeploySpec } from '../config/schema.js';
import { userIdCommand } from '../host-commands/cleanup.js';
import { interfaceOf } from '../host-commands/multiproc.js';
import { ipv4AddressesCommand } from '../host-commands/preflight.js';
import { planHost, type HostPlan } from '../plan/host-plan.js';
import type { PlanHost } from '../steps/plan-entry.js';
import { containerListCommands, containerNamesOf } from '../steps/remove-containers.js';
import { loadedUnitsOf, unitReads, unitStatesOf } from '../steps/stop-services.js';
import { answerOf, runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';

export interface PlanHostInput {
  spec: DeploySpec;
  host: PlanHost;
  head: PlanHost;
  workers: PlanHost[];
}

export async function planHostCommands(input: PlanHostInput): Promise<HostPlan> {
  const units = [...new Set(input.spec.cleanup.services)];
  return onHost(input.host.ref, async (session) => {
    // The stop's and the removal's first reads, in one round trip.
    const reads =
      units.length > 0 ? unitReads(units) : [{ name: 'uid', command: userIdCommand(), check: true as const }];
    const seen = await runCommands(session, [...reads, ...containerListCommands(input.spec.cluster)], {
      timeoutMs: 30_000,
    });
    const host = input.host.name;
    const states = units.length > 0 ? unitStatesOf(answerOf(seen, 'states').stdout, units, host) : [];
    // A multiproc rank's env names the interface carrying the host's clusterIp, read as startRank reads it.
    const clusterIface =
      input.spec.serve.backend === 'multiproc'
        ? interfaceOf(
            (await session.exec(ipv4AddressesCommand(), { timeoutMs: 10_000, check: false })).stdout,
            input.host.clusterIp,
          )
        : undefined;
    return planHost(input.spec, input.host, input.head, input.workers, {
      uid: answerOf(seen, 'uid').stdout.trim(),
      loadedUnits: loadedUnitsOf(states),
      containers: containerNamesOf(answerOf(seen, 'containers').stdout),
      labelled: containerNamesOf(answerOf(seen, 'labelled').stdout),
      ...(clusterIface ? { clusterIface } : {}),
    });
  });
}
