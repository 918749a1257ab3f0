// `liftoff plan`'s look at one host, read only: the login's uid (root or sudo), which listed units systemd
// knows, which containers exist (and for a multiproc rank, its cluster interface), through the same reads the
// deploy's steps start with. From them the host's plan is written with the deploy's own command builders
// (src/plan/host-plan.ts).
import type { DeploySpec } from '../config/schema.js';
import { userIdCommand, clusterFilter } from '../host-commands/cleanup.js';
import { interfaceOf } from '../host-commands/multiproc.js';
import { ipv4AddressesCommand } from '../host-commands/preflight.js';
import { planHost, type HostPlan, type PlanHost } from '../plan/host-plan.js';
import { containerNames } from './containers.js';
import { readUnitStates } from './services.js';
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
    const uid = (await session.exec(userIdCommand(), { timeoutMs: 10_000 })).stdout.trim();
    const states = units.length > 0 ? await readUnitStates(session, units) : [];
    const containers = await containerNames(session);
    const labelled = await containerNames(session, clusterFilter(input.spec.cluster));
    // A multiproc rank's env names the interface carrying the host's clusterIp, read as startRank reads it.
    const clusterIface =
      input.spec.serve.backend === 'multiproc'
        ? interfaceOf(
            (await session.exec(ipv4AddressesCommand(), { timeoutMs: 10_000, check: false })).stdout,
            input.host.clusterIp,
          )
        : undefined;
    return planHost(input.spec, input.host, input.head, input.workers, {
      uid,
      loadedUnits: states.filter((u) => u.loadState !== 'not-found').map((u) => u.unit),
      containers: [...containers],
      labelled: [...labelled],
      ...(clusterIface ? { clusterIface } : {}),
    });
  });
}
