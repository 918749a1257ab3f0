// Where the CPU of a run went, by process group: the simulated hosts' sshd and their tools, apart from the control
// host's processes (measured by the caller from /proc). Two kernel counters, both exact rather than sampled:
//   - a cpuacct cgroup holding the simulated hosts' sshd daemons and tool servers: everything they fork stays in it
//     (setsid and nohup included), so its usage is the simulated hosts' whole CPU;
//   - BSD process accounting (acct(2)), one record per exiting process with its own CPU: the records named sshd
//     are the sshd share; the rest of the cgroup is the tools' (shells, the simulated docker/nvidia-smi/vllm).
// Both need root. Without them the groups read NaN and the report says so: nothing else depends on them.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const cgroupRoot = '/sys/fs/cgroup/cpuacct';
const clockTicksPerSecond = 100; // USER_HZ, and acct v3's AHZ
const acctRecordBytes = 64; // struct acct_v3

export interface SimCpu {
  /** CPU-s of everything the simulated hosts ran (sshd, shells, tools). */
  simTotalS: number;
  /** CPU-s of the simulated hosts' sshd processes (daemons, per-connection and per-session processes). */
  sshdS: number;
  /** simTotalS - sshdS: the simulated tools and the shells that run them. */
  toolsS: number;
}

export interface SimCpuMark {
  cgroupNs: number;
  acctOffset: number;
  liveSshd: Map<number, number>;
}

/** acct(2) through python's ctypes: Node has no binding, and the acct package may be absent. */
function setAcct(file: string | undefined): boolean {
  const script =
    'import ctypes,sys\nlibc=ctypes.CDLL(None,use_errno=True)\n' +
    'a=sys.argv[1].encode() if len(sys.argv)>1 else None\nsys.exit(0 if libc.acct(a)==0 else 1)';
  try {
    execFileSync('python3', ['-c', script, ...(file ? [file] : [])], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** comp_t: 13-bit mantissa, 3-bit base-8 exponent. */
const compT = (v: number): number => (v & 0x1fff) << (3 * ((v >> 13) & 7));

function ticksOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

const commOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
};

/** OpenSSH 9.8 split sshd into sshd, sshd-session and sshd-auth; all are sshd's work. */
const isSshd = (comm: string): boolean => comm === 'sshd' || comm.startsWith('sshd-');

export class SimCpuMeter {
  private readonly cgroup: string;
  private readonly acctFile: string;
  readonly available: boolean;
  readonly why: string;

  constructor(workDir: string) {
    this.cgroup = join(cgroupRoot, `liftoff-bench-${process.pid}`);
    this.acctFile = join(workDir, 'pacct');
    let why = '';
    try {
      mkdirSync(this.cgroup, { recursive: true });
    } catch (err) {
      why = `no cpuacct cgroup (${(err as Error).message})`;
    }
    if (!why) {
      writeFileSync(this.acctFile, '');
      if (!setAcct(this.acctFile)) why = 'process accounting (acct(2)) refused';
    }
    this.available = !why;
    this.why = why;
  }

  /** Puts the simulated hosts' sshd daemons and tool servers in the group (call after each cluster comes up). */
  adopt(pids: readonly (number | undefined)[]): void {
    if (!this.available) return;
    for (const pid of pids) {
      if (!pid) continue;
      try {
        writeFileSync(join(this.cgroup, 'cgroup.procs'), String(pid));
      } catch (err) {
        // A host's tool server that did not come up leaves a stale pid file: its calls run as their own
        // processes, under sshd, and are counted there.
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
  }

  private liveSshd(): Map<number, number> {
    const live = new Map<number, number>();
    const procs = readFileSync(join(this.cgroup, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
    for (const pid of procs) {
      if (!isSshd(commOf(pid))) continue;
      const t = ticksOf(pid);
      if (t !== undefined) live.set(pid, t);
    }
    return live;
  }

  mark(): SimCpuMark | undefined {
    if (!this.available) return undefined;
    return {
      cgroupNs: Number(readFileSync(join(this.cgroup, 'cpuacct.usage'), 'utf8')),
      acctOffset: statSync(this.acctFile).size,
      liveSshd: this.liveSshd(),
    };
  }

  /** The CPU between a mark and now. */
  since(mark: SimCpuMark | undefined): SimCpu {
    if (!mark) return { simTotalS: Number.NaN, sshdS: Number.NaN, toolsS: Number.NaN };
    const simTotalS =
      (Number(readFileSync(join(this.cgroup, 'cpuacct.usage'), 'utf8')) - mark.cgroupNs) / 1e9;
    // sshd processes that ended in the window: their whole life's CPU, less what they had used before the mark.
    let ticks = 0;
    for (const r of this.records(mark.acctOffset)) if (isSshd(r.comm)) ticks += r.ticks;
    const live = this.liveSshd();
    for (const t of live.values()) ticks += t;
    for (const t of mark.liveSshd.values()) ticks -= t;
    const sshdS = ticks / clockTicksPerSecond;
    return { simTotalS, sshdS, toolsS: simTotalS - sshdS };
  }

  private *records(from: number): Generator<{ comm: string; ticks: number }> {
    const size = statSync(this.acctFile).size;
    const length = size - from - ((size - from) % acctRecordBytes);
    if (length <= 0) return;
    const buf = Buffer.alloc(length);
    const fd = openSync(this.acctFile, 'r');
    try {
      readSync(fd, buf, 0, length, from);
    } finally {
      closeSync(fd);
    }
    for (let o = 0; o + acctRecordBytes <= length; o += acctRecordBytes) {
      if (buf[o + 1] !== 3) continue; // ac_version: only v3 records are laid out as read here
      const ticks = compT(buf.readUInt16LE(o + 32)) + compT(buf.readUInt16LE(o + 34));
      const comm = buf.toString('latin1', o + 48, o + 64).replace(/\0.*$/s, '');
      yield { comm, ticks };
    }
  }

  /** Stops accounting and removes the (by then empty) group. */
  close(): void {
    if (!this.available) return;
    setAcct(undefined);
    try {
      if (existsSync(this.cgroup)) rmdirSync(this.cgroup);
    } catch {
      // Processes still in it (a cluster not yet down): the kernel drops it with the last of them.
    }
  }
}
