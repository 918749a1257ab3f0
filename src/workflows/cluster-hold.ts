// The deploy's side of host ownership (docs/architecture.md, "The cluster's life"): preflight finds who holds the
// hosts and refuses another cluster's unless the deploy takes them over; once every check passed, the deploy takes
// them over (the owner's record says what it ran there) and holds them, before the first stop; at its end it
// tells the cluster's workflow how it ended.
import { ApplicationFailure, getExternalWorkflowHandle, patched, workflowInfo } from '@temporalio/workflow';
import type { NamedHost } from '../activities/types.js';
import type { HostOwners } from '../activities/cluster-hold.js';
import type { DeploySpec } from '../config/schema.js';
import {
  clusterWorkflowId,
  deployEndedSignal,
  type ClusterRecord,
  type DeployEnded,
} from '../shared/cluster-api.js';
import { FailureType, type DeployTriggerName } from '../shared/failures.js';
import type { RollbackRequest } from '../shared/rollback.js';
import { patches } from './patches.js';
import { stepActivities } from './activity-options.js';

/** Whether this run holds hosts at all: runs recorded before clusters held hosts do not. */
export function holdsHosts(): boolean {
  return patched(patches.clusterHold);
}

/**
 * Preflight's last check: the clusters other than this one that hold any of its hosts. Refused unless the deploy
 * takes them over; a supervisor's relaunch never does, whatever the spec says.
 */
export async function checkHostOwners(
  spec: DeploySpec,
  hosts: readonly NamedHost[],
  machineIds: Record<string, string>,
  takeOver: boolean,
): Promise<HostOwners> {
  const { findHostOwners } = stepActivities(spec)('preflight', 'findHostOwners');
  const found = await findHostOwners({
    cluster: spec.cluster,
    machineIds: [...new Set(Object.values(machineIds))],
  });
  const { owners } = found;
  if (owners.length === 0 || takeOver) return found;
  const lines = owners.map((o) => {
    const ours = hosts.filter((h) => o.hosts.some((held) => held.machineId === machineIds[h.name]));
    return `${ours.map((h) => h.name).join(', ')} ${ours.length === 1 ? 'is' : 'are'} held by cluster ${o.cluster} (${o.state}${o.reason ? `: ${o.reason}` : ''}; workflow ${clusterWorkflowId(o.cluster)})`;
  });
  throw ApplicationFailure.create({
    type: FailureType.hostsHeld,
    message:
      `nothing was stopped or removed: ${lines.join('; ')}. Take ${owners.length === 1 ? 'it' : 'them'} down first ` +
      `(liftoff down ${owners.map((o) => o.cluster).join(', ')}), or hand the hosts over to ${spec.cluster} ` +
      '(liftoff deploy --take-over, or takeOver: true in the spec)',
    nonRetryable: true,
    details: [{ owners: owners.map((o) => ({ cluster: o.cluster, state: o.state, hosts: o.hosts })) }],
  });
}

/** What the previous owners ran on one of this deploy's hosts: removed with this deploy's own containers. */
export interface TakenContainers {
  cluster: string;
  names: string[];
}

/**
 * Takes the owners' hosts over, then holds every host with a machine id. Returns, by this deploy's host name, what
 * the previous owners ran there.
 */
export async function holdHosts(
  spec: DeploySpec,
  hosts: readonly (NamedHost & { address: string })[],
  machineIds: Record<string, string>,
  owners: readonly ClusterRecord[],
  trigger: DeployTriggerName,
  rollback?: RollbackRequest,
): Promise<{ taken: Map<string, TakenContainers[]>; held: boolean }> {
  const info = workflowInfo();
  const taken = new Map<string, TakenContainers[]>();
  if (owners.length > 0) {
    const { handOverHosts } = stepActivities(spec)('holdHosts', 'handOverHosts');
    const records = await handOverHosts({
      to: spec.cluster,
      by: `${info.workflowId} (trigger ${trigger})`,
      owners: owners.map((o) => o.cluster),
    });
    for (const h of hosts) {
      const id = machineIds[h.name];
      const there = records.flatMap((r) =>
        r.hosts
          .filter((held) => held.machineId === id)
          .map((held) => ({ cluster: r.cluster, names: r.containers[held.name] ?? [] })),
      );
      if (there.length > 0) taken.set(h.name, there);
    }
  }
  const held = await stepActivities(spec)('holdHosts').holdHosts({
    cluster: spec.cluster,
    hosts: hosts.flatMap((h) => {
      const machineId = machineIds[h.name];
      return machineId === undefined ? [] : [{ name: h.name, address: h.address, machineId }];
    }),
    spec,
    model: spec.serve.servedModelName ?? spec.serve.model,
    containers: Object.fromEntries(hosts.map((h) => [h.name, [spec.ray.container]])),
    deploy: { workflowId: info.workflowId, trigger, startedAtMs: Date.now() },
    ...(rollback
      ? {
          rollback: {
            restores: rollback.to,
            cause: rollback.cause,
            ...(rollback.from !== undefined ? { bad: rollback.from } : {}),
          },
        }
      : {}),
  });
  return { taken, held };
}

/** The holdHosts step's detail line. */
export function holdDetail(
  hosts: readonly NamedHost[],
  machineIds: Record<string, string>,
  owners: readonly ClusterRecord[],
): string {
  const held = hosts.filter((h) => machineIds[h.name] !== undefined).map((h) => h.name);
  const unheld = hosts.filter((h) => machineIds[h.name] === undefined).map((h) => h.name);
  return [
    `held ${held.join(', ') || 'no host'}`,
    ...(owners.length > 0 ? [`taken over from ${owners.map((o) => o.cluster).join(', ')}`] : []),
    ...(unheld.length > 0 ? [`not held (no machine id): ${unheld.join(', ')}`] : []),
  ].join('; ');
}

/** Tells the cluster's workflow how this deploy ended; it may have ended meanwhile (down, handed over). */
export async function recordDeployEnd(
  cluster: string,
  ended: Omit<DeployEnded, 'workflowId'>,
): Promise<void> {
  try {
    await getExternalWorkflowHandle(clusterWorkflowId(cluster)).signal(deployEndedSignal, {
      workflowId: workflowInfo().workflowId,
      ...ended,
    });
  } catch {
    // The cluster's workflow no longer runs: nothing holds the hosts to tell.
  }
}
