// Whether this machine can bring up a simulated cluster of N hosts, and if not which limit stops it: read before
// the bring-up, so a size that cannot come up is reported with its reason instead of failing half-way.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { freemem } from 'node:os';
import { maxSimHosts } from '../sim/cluster.js';

/** sim/cluster-up.ts refuses more (sim/network.ts says what holds it). */
export const simMaxHosts = maxSimHosts;

// Per simulated host during a deploy, read on this machine at 128 hosts (tool servers on). A seeded host holds
// seven Node processes (its tool server, the old containers' stand-ins and their GPU holders) of 11 threads each,
// an sshd, and a shell and a sleep per old unit: 64 MiB and 86 tasks a host. The peak comes during a run, when
// the old containers are back beside the last deploy's Ray container: the machine's used memory rose by 11.5 GiB
// (90 MiB a host) and its tasks by 14,800 (116 a host). Tasks, not processes: the kernel's pid_max and
// `ulimit -u` count every thread. Neighbour entries: the control host's pinned one for each host, each host's for
// the gateway, and the Ray head's and each worker's on the fabric, in one table for all namespaces (516 at the
// peak). Open files: the process holding the most is the worker, one SSH connection per host. Not figures for
// real hosts.
const perHost = { memoryMiB: 100, tasks: 120, files: 16, neighbours: 4 };
// The control host beside them: Temporal dev server, worker, CLI, bench.
const fixed = { memoryMiB: 1500, tasks: 300, files: 2000, neighbours: 16 };

export interface Capacity {
  hosts: number;
  ok: boolean;
  /** Each limit read, what N hosts need of it, and whether it fits. */
  limits: { name: string; have: number; need: number; ok: boolean }[];
  /** The first limit that does not fit, in words; empty when all do. */
  reason: string;
}

const readNumber = (path: string): number => {
  try {
    return Number(readFileSync(path, 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return Number.NaN;
  }
};

function ulimit(flag: string): number {
  try {
    const v = execFileSync('bash', ['-c', `ulimit ${flag}`], { encoding: 'utf8' }).trim();
    return v === 'unlimited' ? Number.POSITIVE_INFINITY : Number(v);
  } catch {
    return Number.NaN;
  }
}

/** Tasks (threads) running now, every user's: what pid_max counts. */
function taskCount(): number {
  try {
    return execFileSync('ps', ['-eL', '--no-headers'], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 })
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
}

/** Entries of the kernel's ARP table now (every namespace's): /proc/net/stat/arp_cache's first field, in hex. */
function neighbourEntries(): number {
  try {
    const line = readFileSync('/proc/net/stat/arp_cache', 'utf8').split('\n')[1] ?? '';
    const hex = /^([0-9a-f]{1,16})\s/i.exec(line)?.[1];
    return hex ? Number.parseInt(hex, 16) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

function netnsCount(): number {
  try {
    return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
}

export function capacityFor(hosts: number): Capacity {
  const running = taskCount();
  const limits = [
    { name: 'simulator hosts (sim/network.ts maxSimHosts)', have: simMaxHosts, need: hosts },
    { name: 'root (network namespaces)', have: process.getuid?.() === 0 ? 1 : 0, need: 1 },
    {
      name: 'network namespaces (user.max_net_namespaces, less those in use)',
      have: readNumber('/proc/sys/user/max_net_namespaces') - netnsCount(),
      need: hosts,
    },
    {
      name: 'tasks (ulimit -u, kernel.pid_max and kernel.threads-max, less the threads running)',
      have:
        Math.min(
          ulimit('-u'),
          readNumber('/proc/sys/kernel/pid_max'),
          readNumber('/proc/sys/kernel/threads-max'),
        ) - running,
      need: fixed.tasks + perHost.tasks * hosts,
    },
    { name: 'open files (ulimit -n)', have: ulimit('-n'), need: fixed.files + perHost.files * hosts },
    {
      name: 'ARP neighbour entries (net.ipv4.neigh.default.gc_thresh3, less those in use)',
      have: readNumber('/proc/sys/net/ipv4/neigh/default/gc_thresh3') - neighbourEntries(),
      need: fixed.neighbours + perHost.neighbours * hosts,
    },
    {
      name: 'free memory, MiB',
      have: Math.floor(readMemAvailableMiB() ?? freemem() / 2 ** 20),
      need: fixed.memoryMiB + perHost.memoryMiB * hosts,
    },
  ].map((l) => ({
    ...l,
    ok: Number.isFinite(l.have) ? l.have >= l.need : Number.isNaN(l.have) ? false : true,
  }));
  const bad = limits.find((l) => !l.ok);
  return {
    hosts,
    ok: !bad,
    limits,
    reason: bad ? `${bad.name}: ${bad.have} available, ${hosts} hosts need ${bad.need}` : '',
  };
}

function readMemAvailableMiB(): number | undefined {
  try {
    const kib = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1];
    return kib ? Number(kib) / 1024 : undefined;
  } catch {
    return undefined;
  }
}
