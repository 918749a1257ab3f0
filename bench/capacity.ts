// Whether this machine can bring up a simulated cluster of N hosts, and if not which limit stops it: read before
// the bring-up, so a size that cannot come up is reported with its reason instead of failing half-way.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { freemem } from 'node:os';

/** sim/cluster-up.ts refuses more. */
export const simMaxHosts = 64;

// Per simulated host during a deploy: a listening sshd, a connection process pair per open SSH connection
// (a pooled worker keeps one; the baseline opens one at a time), a shell and a Node tool per running command,
// a Ray container's stand-in. Generous estimates for the simulated hosts only (the 64-host bring-up fits them),
// not figures for real hosts.
const perHost = { memoryMiB: 60, processes: 12, files: 16 };
// The control host beside them: Temporal dev server, worker, CLI, bench.
const fixed = { memoryMiB: 1500, processes: 100, files: 2000 };

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

function processCount(): number {
  try {
    return execFileSync('ps', ['-e', '--no-headers'], { encoding: 'utf8' }).split('\n').filter(Boolean)
      .length;
  } catch {
    return 0;
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
  const running = processCount();
  const limits = [
    { name: 'simulator hosts (sim/cluster-up.ts)', have: simMaxHosts, need: hosts },
    { name: 'root (network namespaces)', have: process.getuid?.() === 0 ? 1 : 0, need: 1 },
    {
      name: 'network namespaces (user.max_net_namespaces, less those in use)',
      have: readNumber('/proc/sys/user/max_net_namespaces') - netnsCount(),
      need: hosts,
    },
    {
      name: 'processes (ulimit -u and kernel.pid_max, less those running)',
      have: Math.min(ulimit('-u'), readNumber('/proc/sys/kernel/pid_max')) - running,
      need: fixed.processes + perHost.processes * hosts,
    },
    { name: 'open files (ulimit -n)', have: ulimit('-n'), need: fixed.files + perHost.files * hosts },
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
