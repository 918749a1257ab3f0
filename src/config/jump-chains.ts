// The hosts' jump chains: every jumpHost names another host of the spec, no chain loops, and none is longer
// than maxJumpDepth. One pass over the hosts with a name → host map, each chain followed at most
// maxJumpDepth + 1 hops: linear in the hosts, whatever the spec (a chain of thousands, a loop of thousands).
// Pure: the schema runs it, also inside the workflow sandbox.
import { maxJumpDepth } from './limits.js';

export interface JumpHostShape {
  name: string;
  jumpHost?: string | undefined;
}

export interface JumpChainIssue {
  path: (string | number)[];
  message: string;
}

/** What is wrong with the jump chains, one issue at most per host, at `hosts[i].jumpHost`. */
export function jumpChainIssues(hosts: readonly JumpHostShape[]): JumpChainIssue[] {
  const byName = new Map<string, JumpHostShape>();
  for (const h of hosts) if (!byName.has(h.name)) byName.set(h.name, h);
  const issues: JumpChainIssue[] = [];
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
