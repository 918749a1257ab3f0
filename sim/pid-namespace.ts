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

/**
 * When a process started, in clock ticks since boot (field 22 of /proc/PID/stat): the same number in every PID
 * namespace, and readable by every user. Undefined when the process is gone.
 */
export function startTicks(pid: number | 'self'): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name in parentheses may contain spaces; fields count from the state after the last ')'.
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return ticks !== undefined && /^\d{1,20}$/.test(ticks) ? Number(ticks) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Finds host pids of processes in other PID namespaces; reads /proc once per lookup table. By the namespace's
 * name where the viewer may read it (/proc/PID/ns needs the right to trace the process: root, or its owner); else,
 * as an SSH user that is not root sees a root container's process, by its pid there and its start time.
 */
export class PidNamespaces {
  private table: Map<string, { hostPid: number; started: number | undefined }> | undefined;

  /**
   * The pid (as this process's /proc numbers it) of `pid` in `namespace` that started at `started`, or undefined
   * when no such process lives. The start time counts on the namespace's path too: the kernel reuses a freed
   * namespace's number at once, so a removed container's `pid:[N]` soon names the next container's namespace,
   * where the same small pid (1, 7, …) is some other process.
   */
  hostPid(namespace: string, pid: number, started?: number): number | undefined {
    this.table ??= scan();
    const byNamespace = this.table.get(`${namespace} ${pid}`);
    if (byNamespace !== undefined)
      return started === undefined || byNamespace.started === started ? byNamespace.hostPid : undefined;
    return started === undefined ? undefined : this.table.get(`@${started} ${pid}`)?.hostPid;
  }
}

function scan(): Map<string, { hostPid: number; started: number | undefined }> {
  const table = new Map<string, { hostPid: number; started: number | undefined }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d{1,10}$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      const nspid = /^NSpid:\s+([\d\s]{1,200})$/m.exec(status)?.[1]?.trim().split(/\s+/);
      const inner = nspid?.[nspid.length - 1];
      if (inner === undefined) continue;
      let namespace: string | undefined;
      try {
        namespace = readlinkSync(`/proc/${name}/ns/pid`);
      } catch {
        // not ours to trace: found by start time only
      }
      const started = startTicks(Number(name));
      if (namespace !== undefined) {
        table.set(`${namespace} ${inner}`, { hostPid: Number(name), started });
        continue;
      }
      // Only where the namespace is unreadable: two containers started in the same clock tick have the same inner
      // pids (1, 2, …) and start times, and a live one must not stand for a killed one in a namespace we can read.
      if (started !== undefined) table.set(`@${started} ${inner}`, { hostPid: Number(name), started });
    } catch {
      // the process ended while being read
    }
  }
  return table;
}
