// PIDs across PID namespaces, for the GPU registry of a host whose containers run on a real Docker engine: a
// simulated tool inside a container knows only its pid in the container's namespace (often 1), while the host's
// nvidia-smi must tell whether that process still lives, and show its host pid, as the real nvidia-smi does.
// Each registry entry carries the namespace its pid is in; the host finds the process by that namespace and the
// pid's last NSpid field (the pid as its own namespace numbers it).
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** This process's PID namespace, as /proc names it (`pid:[4026531836]`); undefined where /proc has none. */
export function ownPidNamespace(): string | undefined {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined;
  }
}

/**
 * The registry's name for a pid of this process's namespace: `PID@INODE`, so pid 1 of two containers on one host
 * are two entries. Without a namespace to read, the pid alone.
 */
export function pidKey(pid: number, namespace: string | undefined = ownPidNamespace()): string {
  const inode = namespace === undefined ? undefined : /^pid:\[(\d{1,20})\]$/.exec(namespace)?.[1];
  return inode === undefined ? String(pid) : `${pid}@${inode}`;
}

/**
 * Whether this process runs in a real-Docker host's container, where other namespaces' processes cannot be seen:
 * only such a container has the simulated cluster's /etc/liftoff-sim mount (sim/real-docker.ts). (Not /.dockerenv:
 * the machine running the tests may itself be a container.)
 */
export function insideContainer(): boolean {
  return existsSync('/etc/liftoff-sim/env');
}

/** Finds host pids of processes in other PID namespaces; reads /proc once per lookup table. */
export class PidNamespaces {
  private table: Map<string, number> | undefined;

  /** The pid (as this process's /proc numbers it) of `pid` in `namespace`, or undefined when no such process lives. */
  hostPid(namespace: string, pid: number): number | undefined {
    this.table ??= scan();
    return this.table.get(`${namespace} ${pid}`);
  }
}

function scan(): Map<string, number> {
  const table = new Map<string, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d{1,10}$/.test(name)) continue;
    try {
      const namespace = readlinkSync(`/proc/${name}/ns/pid`);
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      const nspid = /^NSpid:\s+([\d\s]{1,200})$/m.exec(status)?.[1]?.trim().split(/\s+/);
      const inner = nspid?.[nspid.length - 1];
      if (inner !== undefined) table.set(`${namespace} ${inner}`, Number(name));
    } catch {
      // the process ended while being read
    }
  }
  return table;
}
