// A liftoff spec for a running simulated cluster: what a user would write for real hosts.
import type { SimCluster } from './cluster.js';

export interface SimSpecOptions {
  cluster?: string;
  /** Hosts not reachable from the control host go through the head. */
  jumpThroughHead?: boolean;
}

export function simClusterSpec(sim: SimCluster, opts: SimSpecOptions = {}) {
  const head = sim.hosts[0];
  if (!head) throw new Error('simulated cluster has no hosts');
  return {
    cluster: opts.cluster ?? 'sim',
    ssh: { user: sim.sshUser, privateKeyPath: sim.privateKeyPath, knownHostsPath: sim.knownHostsPath },
    hosts: sim.hosts.map((h, i) => ({
      name: h.name,
      address: h.address,
      ...(h.sshPort !== 22 ? { port: h.sshPort } : {}),
      clusterIp: h.clusterIp,
      role: i === 0 ? ('head' as const) : ('worker' as const),
      ...(!h.reachableFromControl || (opts.jumpThroughHead && i > 0) ? { jumpHost: head.name } : {}),
    })),
  };
}
