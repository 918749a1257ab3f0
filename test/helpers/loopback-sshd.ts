// Real OpenSSH servers on loopback addresses for the SSH layer's tests: each with a throwaway host key and config
// in a directory of its own, in its own process group (stop() also ends the per-connection children), and
// restartable on the same port with a new host key (a host whose key changed).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export interface LoopbackSshd {
  name: string;
  address: string;
  port: number;
  hostKeyPub: string;
  /** The host key's SHA256 fingerprint, as ssh and liftoff's errors show it (`SHA256:…`). */
  fingerprint: string;
  log(): string;
  /** Logins this sshd accepted (each is one SSH handshake with authentication). */
  accepted(): number;
  stop(): Promise<void>;
}

/** A new ed25519 key pair at `path` and `path.pub`; `extra` goes to ssh-keygen (e.g. a passphrase). */
export function keygen(path: string, extra: string[] = []): void {
  rmSync(path, { force: true });
  rmSync(`${path}.pub`, { force: true });
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path, ...extra]);
}

export function fingerprintOf(pubPath: string): string {
  return (
    execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', pubPath], { encoding: 'utf8' }).split(' ')[1] ??
    ''
  );
}

export async function freePort(address: string): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 40000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, address, () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/**
 * Starts sshd `name` on address:port (a free port when unset) accepting `authorizedKeys`. With `newHostKey`, a
 * fresh host key replaces the one a previous start of the same name used.
 */
export async function startLoopbackSshd(opts: {
  root: string;
  name: string;
  address: string;
  authorizedKeys: string;
  port?: number;
  newHostKey?: boolean;
  extraConfig?: string[];
}): Promise<LoopbackSshd> {
  const dir = join(opts.root, opts.name);
  mkdirSync(dir, { recursive: true });
  const hostKey = join(dir, 'host_ed25519');
  let exists = true;
  try {
    readFileSync(hostKey);
  } catch {
    exists = false;
  }
  if (!exists || opts.newHostKey) keygen(hostKey);
  for (let attempt = 0; ; attempt++) {
    const port = opts.port ?? (await freePort(opts.address));
    const config = join(dir, 'sshd_config');
    writeFileSync(
      config,
      [
        `ListenAddress ${opts.address}:${port}`,
        `HostKey ${hostKey}`,
        `AuthorizedKeysFile ${opts.authorizedKeys}`,
        'PidFile none',
        'PermitRootLogin prohibit-password',
        'UsePAM no',
        'StrictModes no',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PubkeyAuthentication yes',
        'AllowTcpForwarding yes',
        'LogLevel VERBOSE',
        ...(opts.extraConfig ?? []),
        '',
      ].join('\n'),
    );
    const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    const listening = await new Promise<boolean>((resolve) => {
      const check = setInterval(() => {
        if (log.includes('Server listening on')) done(true);
        else if (child.exitCode !== null || /Address already in use|fatal/i.test(log)) done(false);
      }, 20);
      const timer = setTimeout(() => done(false), 5_000);
      function done(ok: boolean) {
        clearInterval(check);
        clearTimeout(timer);
        resolve(ok);
      }
    });
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        process.kill(-(child.pid ?? 0), 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
    };
    if (!listening) {
      await stop();
      if (attempt < 5 && opts.port === undefined && /Address already in use/.test(log)) continue;
      throw new Error(`sshd ${opts.name} did not start:\n${log}`);
    }
    return {
      name: opts.name,
      address: opts.address,
      port,
      hostKeyPub: readFileSync(`${hostKey}.pub`, 'utf8').trim(),
      fingerprint: fingerprintOf(`${hostKey}.pub`),
      log: () => log,
      accepted: () => log.split('Accepted publickey').length - 1,
      stop,
    };
  }
}

/** A known_hosts line for an sshd, written as ssh-keyscan would (by default with the key it holds). */
export function knownHostsLine(
  sshd: Pick<LoopbackSshd, 'address' | 'port' | 'hostKeyPub'>,
  pub = sshd.hostKeyPub,
): string {
  const [type, key] = pub.split(' ');
  return `[${sshd.address}]:${sshd.port} ${type} ${key}`;
}
