// Steps 2 and 3 of the deploy: stop the old services (reading each host's container lists after its stop), then
// remove the old containers: the spec's, this deploy's Ray container, earlier liftoff launches', and what the
// clusters it took the hosts over from ran there.
import { deprecatePatch } from '@temporalio/workflow';
import type { ContainerLists } from '../activities/types.js';
import type { TakenContainers } from './cluster-hold.js';
import type { DeployRun } from './cluster-run.js';
import { patches } from './patches.js';

/**
 * 2. `systemctl stop` (and `disable`) of the listed units, then a check that they are inactive. Returns each
 * host's container lists as read after its stop, for the removal.
 */
export async function stopServices({
  spec,
  hosts,
  acts,
  tracker,
}: DeployRun): Promise<Map<string, ContainerLists>> {
  if (spec.cleanup.services.length === 0) {
    tracker.skip('stopServices', 'no services listed');
    return new Map();
  }
  const { stopServices } = acts('stopServices');
  const { services: units, disableServices: disable } = spec.cleanup;
  deprecatePatch(patches.containerListsWithStop);
  const containerListsFor = { cluster: spec.cluster };
  const results = await Promise.all(
    hosts.map((h) => stopServices({ host: h.ref, units, disable, containerListsFor })),
  );
  tracker.detail(
    'stopServices',
    results.map((r) => `${r.host}: stopped ${r.stopped.length}, disabled ${r.disabled.length}`).join('; '),
  );
  return new Map(results.flatMap((r) => (r.containerLists ? [[r.host, r.containerLists] as const] : [])));
}

/**
 * 3. `docker rm -f` of the listed containers, this deploy's Ray container and earlier liftoff launches', then
 * what the clusters it took the hosts over from ran there (by their names and their label).
 */
export async function removeOldContainers(
  { spec, hosts, acts, tracker }: DeployRun,
  lists: ReadonlyMap<string, ContainerLists>,
  taken: ReadonlyMap<string, TakenContainers[]>,
): Promise<void> {
  const names = [...new Set([...spec.cleanup.containers, spec.ray.container])];
  const { removeContainers } = acts('removeContainers');
  const results = await Promise.all(
    hosts.map((h) => {
      const containerLists = lists.get(h.name);
      return removeContainers({
        host: h.ref,
        names,
        cluster: spec.cluster,
        ...(containerLists ? { containerLists } : {}),
      });
    }),
  );
  const takenResults = await Promise.all(
    hosts.flatMap((h) =>
      (taken.get(h.name) ?? []).map(async (t) => ({
        ...(await removeContainers({ host: h.ref, names: t.names, cluster: t.cluster })),
        from: t.cluster,
      })),
    ),
  );
  tracker.detail(
    'removeContainers',
    [
      ...results.map((r) => `${r.host}: removed ${r.removed.join(', ') || 'none'}`),
      ...takenResults.map((r) => `${r.host}: removed ${r.removed.join(', ') || 'none'} of ${r.from}`),
    ].join('; '),
  );
}
