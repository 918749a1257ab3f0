// Turns a host of the spec into the SSH target the executor needs, following jump hosts.
// Pure (no Node builtins): workflows compute targets and pass them to activities as plain data.
import type { HostSpec, SshSpec } from './schema.js';

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

export function resolveSshTarget(
  hosts: readonly HostSpec[],
  ssh: SshSpec,
  name: string,
  seen: string[] = [],
): SshTargetData {
  const host = hosts.find((h) => h.name === name);
  if (!host) throw new Error(`unknown host ${JSON.stringify(name)}`);
  if (seen.includes(name)) throw new Error(`jumpHost loop: ${[...seen, name].join(' -> ')}`);
  const target: SshTargetData = {
    name: host.name,
    host: host.address,
    port: host.port ?? ssh.port,
    user: host.user ?? ssh.user,
  };
  if (host.jumpHost) target.jump = resolveSshTarget(hosts, ssh, host.jumpHost, [...seen, name]);
  return target;
}
