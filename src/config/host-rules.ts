// The rules across a spec's hosts: one head, each name, address and cluster IP used once, and jump chains that
// lead somewhere in at most maxJumpDepth hops. Linear in the hosts (maps, never a search per host), and run
// only on a list within maxHosts. Pure: the schema runs it, also inside the workflow sandbox.
import { jumpChainIssues } from './jump-chains.js';
import { maxHosts } from './limits.js';

export interface HostShape {
  name: string;
  address: string;
  port?: number | undefined;
  clusterIp?: string | undefined;
  role: 'head' | 'worker';
  jumpHost?: string | undefined;
}

export interface HostIssue {
  path: (string | number)[];
  message: string;
}

/** What is wrong across `hosts` (the fields of each already valid on their own). */
export function hostIssues(hosts: readonly HostShape[], sshPort: number): HostIssue[] {
  // The list's own cap refused it already; its hosts are not worth reading.
  if (hosts.length > maxHosts) return [];
  const issues: HostIssue[] = [];
  const heads = hosts.filter((h) => h.role === 'head');
  if (heads.length !== 1) {
    issues.push({
      path: ['hosts'],
      message: `expected exactly one host with role: head, found ${heads.length}`,
    });
  }
  const seen = new Map<string, number>();
  hosts.forEach((h, i) => {
    for (const [field, value] of [
      ['name', h.name],
      ['address', `${h.address}:${h.port ?? sshPort}`],
      ['clusterIp', h.clusterIp],
    ] as const) {
      if (value === undefined) continue;
      const key = `${field}=${value}`;
      const first = seen.get(key);
      if (first !== undefined) {
        issues.push({
          path: ['hosts', i, field],
          message: `${JSON.stringify(value)} is already used by hosts[${first}]; each host needs its own`,
        });
      } else seen.set(key, i);
    }
  });
  return [...issues, ...jumpChainIssues(hosts)];
}
