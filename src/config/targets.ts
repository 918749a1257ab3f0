// Turns a host of the spec into the SSH target the executor needs, following jump hosts.
// Pure (no Node builtins): workflows compute targets and pass them to activities as plain data.
import type { HostSpec, SshSpec } from './schema.js';
import { maxJumpDepth } from './limits.js';

export interface SshTargetData {
  name: string;
  host: string;
  port: number;
  user: string;
  jump?: SshTargetData;
}

/** Credentials as the workflow passes them: references (paths, the agent), never key material. */
export interface SshAuthRef {
  privateKeyPath?: string;
  useAgent?: boolean;
  knownHostsPath: string;
}

/** A host as an activity is handed it: where to reach it, and which of the worker's credentials to use. */
export interface HostRef {
  target: SshTargetData;
  auth: SshAuthRef;
}

/**
 * `name`'s target with its jump chain, followed with a name → host map and a set of the hosts passed: linear in
 * the hosts, and never deeper than the schema allows (a spec from elsewhere, e.g. `liftoff init`'s, is checked
 * here too).
 */
export function resolveSshTarget(hosts: readonly HostSpec[], ssh: SshSpec, name: string): SshTargetData {
  const byName = new Map<string, HostSpec>();
  for (const h of hosts) if (!byName.has(h.name)) byName.set(h.name, h);
  const chain: HostSpec[] = [];
  const seen = new Set<string>();
  for (let next: string | undefined = name; next !== undefined; next = byName.get(next)?.jumpHost) {
    const host = byName.get(next);
    if (!host) throw new Error(`unknown host ${JSON.stringify(next)}`);
    if (seen.has(next)) throw new Error(`jumpHost loop: ${[...chain.map((h) => h.name), next].join(' -> ')}`);
    if (chain.length > maxJumpDepth)
      throw new Error(`${name} is reached through more than ${maxJumpDepth} jump hosts`);
    seen.add(next);
    chain.push(host);
  }
  // Built from the end of the chain (the host reached directly) back to `name`.
  let target: SshTargetData | undefined;
  for (const host of chain.reverse()) {
    const hop: SshTargetData = {
      name: host.name,
      host: host.address,
      port: host.port ?? ssh.port,
      user: host.user ?? ssh.user,
    };
    if (target) hop.jump = target;
    target = hop;
  }
  if (!target) throw new Error(`unknown host ${JSON.stringify(name)}`);
  return target;
}
