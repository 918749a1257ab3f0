// One real OpenSSH sshd per simulated host: keys, config, start/stop, and the log it keeps.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isRunning, killAndWait, runOk, sleep, withDescendants } from './processes.js';

export const sshdBinary = '/usr/sbin/sshd';

export const sshdPaths = {
  dir: (hostDir: string) => join(hostDir, 'sshd'),
  config: (hostDir: string) => join(hostDir, 'sshd', 'sshd_config'),
  hostKey: (hostDir: string) => join(hostDir, 'sshd', 'ssh_host_ed25519_key'),
  pidFile: (hostDir: string) => join(hostDir, 'sshd', 'sshd.pid'),
  log: (hostDir: string) => join(hostDir, 'sshd', 'sshd.log'),
  /**
   * The host's own /etc/hosts, naming the host as a Debian install does; bound over /etc/hosts only when bring-up
   * wrote it (a non-root SSH user's cluster: sudo warns on every call when the host's name does not resolve).
   */
  etcHosts: (hostDir: string) => join(hostDir, 'sshd', 'etc-hosts'),
  /** The host's own machine id, bound over the machine's (/etc/machine-id, and dbus's copy where there is one). */
  machineId: (hostDir: string) => join(hostDir, 'sshd', 'machine-id'),
  /** Output of the launcher (ip netns exec / unshare / mount) before sshd takes over logging. */
  launchLog: (hostDir: string) => join(hostDir, 'sshd', 'launch.log'),
};

/** Creates an ed25519 key pair at `path` and `path`.pub; returns the public key line. */
export async function generateKeyPair(path: string, comment: string): Promise<string> {
  rmSync(path, { force: true });
  rmSync(`${path}.pub`, { force: true });
  await runOk('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path]);
  return readFileSync(`${path}.pub`, 'utf8').trim();
}

/** `ssh-ed25519 AAAA…` without the comment, as known_hosts wants it. */
export function publicKeyBody(pubLine: string): string {
  return pubLine.split(/\s+/).slice(0, 2).join(' ');
}

export interface SshdConfigInput {
  hostDir: string;
  listenAddress: string;
  port: number;
  authorizedKeysFile: string;
  /** Environment every session gets: LIFTOFF_SIM_HOST_DIR and PATH at least. */
  sessionEnv: Record<string, string>;
  /** Runs every session's command through this script (the command log of sim/command-log.ts). */
  forceCommand?: string;
}

function quoteConfigWord(word: string): string {
  if (/["\\]/.test(word)) throw new Error(`cannot put ${word} in sshd_config`);
  return `"${word}"`;
}

export function sshdConfigText(input: SshdConfigInput): string {
  const env = Object.entries(input.sessionEnv)
    .map(([k, v]) => quoteConfigWord(`${k}=${v}`))
    .join(' ');
  return [
    `Port ${input.port}`,
    `ListenAddress ${input.listenAddress}`,
    `HostKey ${quoteConfigWord(sshdPaths.hostKey(input.hostDir))}`,
    `PidFile ${quoteConfigWord(sshdPaths.pidFile(input.hostDir))}`,
    `AuthorizedKeysFile ${quoteConfigWord(input.authorizedKeysFile)}`,
    'PermitRootLogin prohibit-password',
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'UsePAM no',
    'StrictModes no',
    'LogLevel VERBOSE',
    'UseDNS no',
    'PrintMotd no',
    'PrintLastLog no',
    `SetEnv ${env}`,
    'AllowTcpForwarding yes',
    'MaxStartups 100:30:200',
    'MaxSessions 64',
    'Subsystem sftp internal-sftp',
    ...(input.forceCommand ? [`ForceCommand ${quoteConfigWord(input.forceCommand)}`] : []),
    '',
  ].join('\n');
}

export interface SshdLaunch {
  hostDir: string;
  hostName: string;
  /** Network namespace to run in; undefined in loopback mode. */
  netns?: string;
}

const machineIdFiles = ['/etc/machine-id', '/var/lib/dbus/machine-id'];

/**
 * Where the host's machine id is bound: each file of the machine's that exists (a bind mount needs its target).
 * The id is made once a host folder and kept, as a real host keeps its own across reboots.
 */
function machineIdMounts(hostDir: string): string[] {
  const file = sshdPaths.machineId(hostDir);
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(16).toString('hex')}\n`);
  return machineIdFiles.filter((target) => existsSync(target));
}

/**
 * Starts sshd in the foreground (-D) as a detached process that outlives the caller. In a namespace it
 * also gets its own mount and UTS namespaces: its hostname, and /home, /root, /proc/meminfo and its machine
 * id from the host folder, so every session sees a per-host filesystem where it matters.
 */
export function spawnSshd(launch: SshdLaunch): number {
  const { hostDir } = launch;
  // sshd's privilege-separation directory; only root can (and needs to) create it.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true });
  const sshdArgs = [sshdBinary, '-D', '-E', sshdPaths.log(hostDir), '-f', sshdPaths.config(hostDir)];
  let cmd: string;
  let args: string[];
  if (launch.netns) {
    const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const script = [
      `hostname ${q(launch.hostName)}`,
      `mount --bind ${q(join(hostDir, 'home'))} /home`,
      `mount --bind ${q(join(hostDir, 'roothome'))} /root`,
      `mount --bind ${q(join(hostDir, 'meminfo'))} /proc/meminfo`,
      ...machineIdMounts(hostDir).map(
        (target) => `mount --bind ${q(sshdPaths.machineId(hostDir))} ${target}`,
      ),
      ...(existsSync(sshdPaths.etcHosts(hostDir))
        ? [`mount --bind ${q(sshdPaths.etcHosts(hostDir))} /etc/hosts`]
        : []),
      `exec ${sshdArgs.map(q).join(' ')}`,
    ].join(' && ');
    cmd = 'ip';
    args = [
      'netns',
      'exec',
      launch.netns,
      'unshare',
      '--mount',
      '--uts',
      '--propagation',
      'private',
      'sh',
      '-c',
      script,
    ];
  } else {
    cmd = sshdBinary;
    args = sshdArgs.slice(1);
  }
  const out = openSync(sshdPaths.launchLog(hostDir), 'a');
  try {
    // ip netns exec, unshare and sh all exec the next program, so this pid ends up being sshd's.
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', out, out], cwd: '/' });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start sshd for ${launch.hostName}`);
    return child.pid;
  } finally {
    closeSync(out);
  }
}

export function readSshdPid(hostDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(sshdPaths.pidFile(hostDir), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function sshdRunning(hostDir: string): boolean {
  const pid = readSshdPid(hostDir);
  return pid !== undefined && isRunning(pid);
}

function logText(hostDir: string): string {
  try {
    return readFileSync(sshdPaths.log(hostDir), 'utf8');
  } catch {
    return '';
  }
}

function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

/**
 * Waits until this sshd instance (the `listensBefore`+1-th "Server listening" line of its log, which
 * survives restarts) is listening. Works for hosts the control side cannot reach.
 */
export async function waitSshdListening(
  hostDir: string,
  pid: number,
  listensBefore: number,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (countOccurrences(logText(hostDir), 'Server listening on') > listensBefore) return;
    if (!isRunning(pid)) {
      const launch = existsSync(sshdPaths.launchLog(hostDir))
        ? readFileSync(sshdPaths.launchLog(hostDir), 'utf8')
        : '';
      throw new Error(`sshd for ${hostDir} exited during start:\n${launch}${logText(hostDir)}`.trim());
    }
    if (Date.now() > deadline)
      throw new Error(`sshd for ${hostDir} did not start listening in ${timeoutMs} ms`);
    await sleep(25);
  }
}

export function countListens(hostDir: string): number {
  return countOccurrences(logText(hostDir), 'Server listening on');
}

/** TCP connections sshd accepted (LogLevel VERBOSE logs each), whether or not a login followed. */
export function countConnections(hostDir: string): number {
  return countOccurrences(logText(hostDir), 'Connection from ');
}

/** Successful public-key logins in the host's sshd log (all runs of sshd, restarts included). */
export function countAcceptedPublickey(hostDir: string): number {
  return countOccurrences(logText(hostDir), 'Accepted publickey');
}

/** Sessions (one per remote command) in the host's sshd log. */
export function countSessions(hostDir: string): number {
  return countOccurrences(logText(hostDir), 'Starting session:');
}

/** Stops the listening sshd only; like `systemctl stop ssh`, open sessions are left alone. */
function isSshdProcess(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sshd';
  } catch {
    return false;
  }
}

/**
 * SIGKILLs every sshd process of the host but its listener, so every open connection ends, as when the host
 * reboots or every sshd process crashes (stopping or restarting the listener alone leaves them open, and a
 * liftoff worker keeps one per host between activities). Returns how many processes it killed.
 */
export function killSshdConnections(hostDir: string): number {
  const listener = readSshdPid(hostDir);
  if (listener === undefined || !isRunning(listener)) return 0;
  let killed = 0;
  for (const pid of withDescendants([listener])) {
    if (pid === listener || !isSshdProcess(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // it closed by itself meanwhile
    }
  }
  return killed;
}

export async function stopSshd(hostDir: string): Promise<void> {
  const pid = readSshdPid(hostDir);
  if (pid === undefined || !isRunning(pid)) return;
  const left = await killAndWait([pid], 5000);
  if (left.length > 0) throw new Error(`sshd ${pid} did not stop`);
  rmSync(sshdPaths.pidFile(hostDir), { force: true });
}

export function writeSshdConfig(input: SshdConfigInput): void {
  mkdirSync(sshdPaths.dir(input.hostDir), { recursive: true });
  writeFileSync(sshdPaths.config(input.hostDir), sshdConfigText(input));
}
