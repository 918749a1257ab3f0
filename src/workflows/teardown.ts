// What a failed or cancelled deploy leaves behind: diagnostics from every host, and the removal of this
// launch's containers.
import type { HostDiagnostics } from '../activities/types.js';
import { companionContainer } from '../config/companions.js';
import type { ClusterRun } from './cluster-run.js';
import { messageOf } from './failures.js';

/**
 * Removes this launch's container on every host (Ray's, or with multiproc, the host's rank), and whatever carries
 * the cluster's label (the companions' containers). The server runs inside the head's container, so this stops the
 * server, Ray and every container the deploy started. One line per host says what happened.
 */
export async function tearDown({ spec, hosts, acts }: ClusterRun): Promise<string[]> {
  const { removeContainers } = acts('teardown');
  const main = (i: number): string =>
    spec.serve.backend === 'multiproc' ? 'its vLLM rank' : `Ray${i === 0 ? ' and the server' : ''}`;
  // The companions' containers carry the cluster's label, so they go too: named when they did.
  const stopped = (i: number, removed: readonly string[]): string => {
    const companions = spec.companions.filter((c) => removed.includes(companionContainer(c.name)));
    if (companions.length === 0) return main(i);
    const names = companions.map((c) => c.name).join(', ');
    return `${main(i).replace(' and ', ', ')} and the companion${companions.length > 1 ? 's' : ''} ${names}`;
  };
  const results = await Promise.allSettled(
    hosts.map((h) => removeContainers({ host: h.ref, names: [spec.ray.container], cluster: spec.cluster })),
  );
  return results.map((r, i) =>
    r.status === 'fulfilled'
      ? `${r.value.host}: ${r.value.removed.length > 0 ? `removed ${r.value.removed.join(', ')} (${stopped(i, r.value.removed)} stopped)` : 'nothing to remove'}`
      : `${hosts[i]?.name ?? '?'}: teardown failed: ${messageOf(r.reason)}`,
  );
}

/** Container logs, `ray status`, nvidia-smi and the serve log from every host; never fails the caller. */
export function collectDiagnostics({ spec, hosts, head, acts }: ClusterRun): Promise<HostDiagnostics[]> {
  return acts('diagnostics')
    .collectDiagnostics({
      hosts,
      container: spec.ray.container,
      logPath: spec.serve.logPath,
      headName: head.name,
      secretEnv: [spec.ray.env, spec.serve.env],
    })
    .catch((e: unknown): HostDiagnostics[] => [{ host: '(all)', reachable: false, errors: [messageOf(e)] }]);
}
