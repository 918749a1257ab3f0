// The rules across a spec's hosts: one head, each name, address and cluster IP used once, and jump chains that
// lead somewhere in at most maxJumpDepth hops. Linear in the hosts (maps, never a search per host), and run
// only on a list within maxHosts. Pure: the schema runs it, also inside the workflow sandbox.
import type { SpecIssue } from './errors.js';
import { maxHosts, maxJumpDepth } from './limits.js';

interface JumpHostShape {
  name: string;
  jumpHost?: string | undefined;
}

interface HostShape extends JumpHostShape {
  address: string;
  port?: number | undefined;
  clusterIp?: string | undefined;
  role: 'head' | 'worker';
}

/** What is wrong across `hosts` (the fields of each already valid on their own). */
export function hostIssues(hosts: readonly HostShape[], sshPort: number): SpecIssue[] {
  // The list's own cap refused it already; its hosts are not worth reading.
  if (hosts.length > maxHosts) return [];
  const issues: SpecIssue[] = [];
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

/**
 * What is wrong with the jump chains, one issue at most per host, at `hosts[i].jumpHost`: every jumpHost names
 * another host of the spec, no chain loops, and none is longer than maxJumpDepth. Each chain is followed at most
 * maxJumpDepth + 1 hops: linear in the hosts, whatever the spec (a chain of thousands, a loop of thousands).
 */
export function jumpChainIssues(hosts: readonly JumpHostShape[]): SpecIssue[] {
  const byName = new Map<string, JumpHostShape>();
  for (const h of hosts) if (!byName.has(h.name)) byName.set(h.name, h);
  const issues: SpecIssue[] = [];
  hosts.forEach((h, i) => {
    if (h.jumpHost === undefined) return;
    const path = ['hosts', i, 'jumpHost'];
    if (h.jumpHost === h.name || !byName.has(h.jumpHost)) {
      issues.push({ path, message: `${JSON.stringify(h.jumpHost)} is not another host of this spec` });
      return;
    }
    // The hops from h towards the control host; a host's own unknown jumpHost is reported on that host.
    const chain = [h.name];
    for (let next: string | undefined = h.jumpHost; next !== undefined; next = byName.get(next)?.jumpHost) {
      if (chain.includes(next)) {
        issues.push({ path, message: `jump hosts form a loop: ${[...chain, next].join(' -> ')}` });
        return;
      }
      chain.push(next);
      if (chain.length - 1 > maxJumpDepth) {
        const hops = chain.slice(1);
        const more = byName.get(next)?.jumpHost !== undefined ? ' -> …' : '';
        issues.push({
          path,
          message: `${h.name} is reached through more than ${maxJumpDepth} jump hosts (${hops.join(' -> ')}${more}); each hop is one more SSH connection in front of every command. Set ${h.name}'s jumpHost to a host reached through at most ${maxJumpDepth - 1} jump hosts, or reach it directly`,
        });
        return;
      }
    }
  });
  return issues;
}
