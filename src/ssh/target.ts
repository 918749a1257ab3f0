// Who a connection reaches (a host, possibly behind a chain of jump hosts) and with which credentials: plain data,
// plus the forms of it that messages (endpointOf) and pools (targetKey) use.
import { homedir } from 'node:os';
import type { SshErrorEndpoint } from './errors.js';

export interface SshAuth {
  privateKeyPath?: string;
  useAgent?: boolean;
  knownHostsPath: string;
  /**
   * The host addresses whose host key may sign with SHA-1 (`ssh-rsa`); `true`: any. The worker's policy sets it
   * (sshRsaHostKeys), never a spec.
   */
  sshRsaHostKeys?: true | readonly string[];
}

/** Whether a hop to `address` may accept an `ssh-rsa` (SHA-1) host-key signature. */
export function acceptsSshRsa(auth: SshAuth, address: string): boolean {
  const allowed = auth.sshRsaHostKeys;
  if (allowed === true) return true;
  return allowed?.some((a) => a.toLowerCase() === address.toLowerCase()) ?? false;
}

/** A host, reached through `jump` (itself possibly behind another jump) when set. */
export interface SshTarget {
  /** The host's name in the cluster spec; used in every message. */
  name: string;
  host: string;
  port: number;
  user: string;
  jump?: SshTarget;
}

export function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return `${homedir()}${path.slice(1)}`;
  return path;
}

export function endpointOf(target: SshTarget): SshErrorEndpoint {
  const via: string[] = [];
  for (let hop = target.jump; hop; hop = hop.jump) via.unshift(hop.name);
  return {
    host: target.name,
    address: target.host,
    port: target.port,
    user: target.user,
    ...(via.length > 0 ? { via } : {}),
  };
}

/** The same host reached the same way (user, address, port, and every jump hop) gives the same key. */
export function targetKey(target: SshTarget): string {
  const self = `${target.user}@${target.host}:${target.port}`;
  return target.jump ? `${self} via ${targetKey(target.jump)}` : self;
}

function depth(target: SshTarget): number {
  return target.jump ? 1 + depth(target.jump) : 0;
}

/**
 * Closes the connections of `entries`, hosts behind a jump first, so their tunnels close before the jump
 * connection does; those at one depth close together.
 */
export async function closeDeepestFirst<E extends { target: SshTarget }>(
  entries: E[],
  close: (entry: E) => Promise<void>,
): Promise<void> {
  const depths = [...new Set(entries.map((e) => depth(e.target)))].sort((a, b) => b - a);
  for (const d of depths) await Promise.all(entries.filter((e) => depth(e.target) === d).map(close));
}
