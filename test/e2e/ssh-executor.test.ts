// The SSH executor against real OpenSSH servers on loopback: 127.0.0.1 (also the jump host) and
// 127.0.0.2 (the target behind it). Each sshd has a throwaway host key and config in a temp dir.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, createConnection, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SshPool, type SshAuth, type SshTarget } from '../../src/ssh/executor.js';
import {
  HostKeyMismatchError,
  HostKeyUnknownError,
  RemoteCommandError,
  RemoteTimeoutError,
  SshConnectError,
  toFailureDetails,
} from '../../src/ssh/errors.js';
import { raw, sh } from '../../src/ssh/quote.js';
import { openSshSession, withSshSession } from '../helpers/ssh.js';
import { holdsWithin } from '../helpers/wait.js';
import { rejectionOf } from '../helpers/rejection.js';
import {
  fingerprintOf,
  freePort,
  keygen,
  knownHostsLine,
  startLoopbackSshd,
  type LoopbackSshd,
} from '../helpers/loopback-sshd.js';

const root = mkdtempSync(join(tmpdir(), 'liftoff-ssh-e2e-'));
const started: LoopbackSshd[] = [];
const strayPids: number[] = [];
const servers: Server[] = [];
const errorsSeen: unknown[] = [];

async function startSshd(name: string, address: string, extraConfig: string[] = []): Promise<LoopbackSshd> {
  const sshd = await startLoopbackSshd({
    root,
    name,
    address,
    authorizedKeys: join(root, 'authorized_keys'),
    newHostKey: true,
    extraConfig,
  });
  started.push(sshd);
  return sshd;
}

function writeKnownHosts(file: string, lines: string[]): string {
  const path = join(root, file);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

const targetOf = (sshd: LoopbackSshd, jump?: SshTarget): SshTarget => ({
  name: sshd.name,
  host: sshd.address,
  port: sshd.port,
  user: 'root',
  ...(jump ? { jump } : {}),
});

/** Awaits a rejection, checks it, and keeps it for the key-material check at the end. */
async function rejectsWith<T>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => T,
): Promise<T> {
  const err = await rejectionOf(promise, type);
  errorsSeen.push(err);
  return err;
}

let jumpSshd: LoopbackSshd;
let innerSshd: LoopbackSshd;
let auth: SshAuth;
let privateKeyText = '';

before(async () => {
  keygen(join(root, 'id_ed25519'));
  writeFileSync(join(root, 'authorized_keys'), readFileSync(join(root, 'id_ed25519.pub')));
  privateKeyText = readFileSync(join(root, 'id_ed25519'), 'utf8');
  [jumpSshd, innerSshd] = await Promise.all([
    startSshd('jump', '127.0.0.1'),
    startSshd('inner', '127.0.0.2'),
  ]);
  auth = {
    privateKeyPath: join(root, 'id_ed25519'),
    knownHostsPath: writeKnownHosts('known_hosts', [knownHostsLine(jumpSshd), knownHostsLine(innerSshd)]),
  };
});

after(async () => {
  for (const server of servers) server.close();
  for (const pid of strayPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await Promise.all(started.map((sshd) => sshd.stop()));
  rmSync(root, { recursive: true, force: true });
});

describe('exec', () => {
  it('returns exit code, stdout and stderr', async () => {
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const ok = await session.exec(sh`printf %s ${"it's $(fine)"}; echo to-err >&2`);
      assert.equal(ok.exitCode, 0);
      assert.equal(ok.stdout, "it's $(fine)");
      assert.equal(ok.stderr, 'to-err\n');
      assert.ok(ok.durationMs >= 0);

      const failed = await session.exec(sh`echo out; echo err >&2; exit 3`, { check: false });
      assert.deepEqual(
        [failed.exitCode, failed.stdout, failed.stderr, failed.signal],
        [3, 'out\n', 'err\n', undefined],
      );

      const killed = await session.exec(sh`kill -TERM $$`, { check: false });
      assert.equal(killed.signal, 'SIGTERM');
      assert.equal(killed.exitCode, 143);
      const killedErr = await rejectsWith(session.exec(sh`kill -TERM $$`), RemoteCommandError);
      assert.match(killedErr.message, /was killed by SIGTERM/);

      const echoed = await session.exec(sh`cat`, { stdin: 'from stdin\n' });
      assert.equal(echoed.stdout, 'from stdin\n');
      // No stdin given: EOF at once, so `cat` does not wait.
      assert.equal((await session.exec(sh`cat`, { timeoutMs: 5_000 })).stdout, '');
    });
  });

  it('throws RemoteCommandError carrying code, output and the command', async () => {
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const err = await rejectsWith(
        session.exec(sh`echo partial; echo ${'no such thing'} >&2; exit 42`),
        RemoteCommandError,
      );
      assert.equal(err.exitCode, 42);
      assert.equal(err.stdout, 'partial\n');
      assert.equal(err.stderr, 'no such thing\n');
      assert.equal(err.command, "echo partial; echo 'no such thing' >&2; exit 42");
      assert.equal(err.host, 'jump');
      assert.match(err.message, /exited with code 42/);
      assert.match(err.message, /no such thing/);
      const details = toFailureDetails(err);
      assert.deepEqual(JSON.parse(JSON.stringify(details)), details);
      assert.equal(details.type, 'RemoteCommandError');
      assert.equal(details.data['exitCode'], 42);
    });
  });

  it('caps the output quoted in the message at about 4 KB', async () => {
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const err = await rejectsWith(
        session.exec(sh`head -c 100000 /dev/zero | tr '\\0' x >&2; exit 1`),
        RemoteCommandError,
      );
      assert.equal(err.stderr.length, 100000);
      assert.ok(err.message.length < 6000, `message is ${err.message.length} chars`);
      assert.match(err.message, /earlier bytes cut/);
    });
  });

  it('streams output as it arrives', async () => {
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const started = Date.now();
      const chunks: Array<{ at: number; text: string; stream: string }> = [];
      const result = await session.exec(
        sh`printf first; sleep 0.6; printf second >&2; sleep 0.2; printf third`,
        {
          onStdout: (text) => chunks.push({ at: Date.now() - started, text, stream: 'out' }),
          onStderr: (text) => chunks.push({ at: Date.now() - started, text, stream: 'err' }),
        },
      );
      assert.equal(result.stdout, 'firstthird');
      assert.equal(result.stderr, 'second');
      assert.deepEqual(
        chunks.map((c) => `${c.stream}:${c.text}`),
        ['out:first', 'err:second', 'out:third'],
      );
      const first = chunks[0];
      assert.ok(
        first && first.at < result.durationMs - 500,
        `first chunk at ${first?.at} ms of ${result.durationMs}`,
      );
    });
  });

  it('keeps multi-byte characters whole across chunks', async () => {
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const text = 'é€😀'.repeat(5000);
      const result = await session.exec(sh`printf %s ${text}`);
      assert.equal(result.stdout, text);
    });
  });

  it('times out: RemoteTimeoutError, and the remote process is signalled', async () => {
    const pidFile = join(root, 'timeout.pid');
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const started = Date.now();
      const err = await rejectsWith(
        session.exec(sh`echo $$ > ${pidFile}; echo started; exec sleep 30`, { timeoutMs: 700 }),
        RemoteTimeoutError,
      );
      assert.ok(Date.now() - started < 3_000);
      assert.equal(err.timeoutMs, 700);
      assert.equal(err.stdout, 'started\n');
      const pid = Number(readFileSync(pidFile, 'utf8'));
      strayPids.push(pid);
      // sshd delivers signal requests only to privilege-separated sessions, and a root login has none: it
      // then logs that it refused. Either the process is gone or sshd says it got (and refused) the signal.
      const refusedForRoot = () =>
        jumpSshd.log().includes('session signalling requires privilege separation');
      assert.ok(
        await holdsWithin(() => !alive(pid) || (process.getuid?.() === 0 && refusedForRoot()), 3_000),
        `remote process ${pid} still runs and sshd never saw a signal request`,
      );
      // The session stays usable after a timed-out command.
      assert.equal((await session.exec(sh`echo still-here`)).stdout, 'still-here\n');
    });
  });

  it('stops on an AbortSignal', async () => {
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      await assert.rejects(session.exec(sh`sleep 20`, { signal: controller.signal }), { name: 'AbortError' });
    });
  });

  it('accepts only commands built with sh', async () => {
    await withSshSession(targetOf(jumpSshd), auth, async (session) => {
      const forged = { text: 'echo forged' } as unknown as ReturnType<typeof sh>;
      await assert.rejects(session.exec(forged), TypeError);
    });
  });
});

describe('host keys', () => {
  it('refuses an unknown host, naming the fingerprint and the fix', async () => {
    const emptyKnownHosts = { ...auth, knownHostsPath: join(root, 'missing_known_hosts') };
    const before = jumpSshd.accepted();
    const err = await rejectsWith(openSshSession(targetOf(jumpSshd), emptyKnownHosts), HostKeyUnknownError);
    assert.equal(err.fingerprint, jumpSshd.fingerprint);
    assert.equal(err.keyType, 'ssh-ed25519');
    assert.ok(err.message.includes(jumpSshd.fingerprint));
    assert.ok(
      err.message.includes(`ssh-keyscan -p ${jumpSshd.port} 127.0.0.1 >> ${emptyKnownHosts.knownHostsPath}`),
    );
    assert.ok(err.message.includes('liftoff trust jump'));
    assert.equal(jumpSshd.accepted(), before, 'no login may happen before the host key is trusted');
  });

  it('refuses a changed key before any command runs', async () => {
    const otherKey = join(root, 'impostor');
    keygen(otherKey);
    const wrong = {
      ...auth,
      knownHostsPath: writeKnownHosts('known_hosts_wrong', [
        knownHostsLine(jumpSshd, readFileSync(`${otherKey}.pub`, 'utf8').trim()),
      ]),
    };
    const marker = join(root, 'must-not-exist');
    const before = jumpSshd.accepted();
    const err = await rejectsWith(
      withSshSession(targetOf(jumpSshd), wrong, (session) => session.exec(sh`touch ${marker}`)),
      HostKeyMismatchError,
    );
    assert.equal(existsSync(marker), false);
    assert.equal(jumpSshd.accepted(), before);
    assert.equal(err.gotFingerprint, jumpSshd.fingerprint);
    assert.deepEqual(err.expectedFingerprints, [`ssh-ed25519 ${fingerprintOf(`${otherKey}.pub`)}`]);
    assert.match(err.message, /HOST KEY MISMATCH/);
  });
});

describe('jump hosts', () => {
  it('reaches the inner host through the jump host', async () => {
    const jumpBefore = jumpSshd.accepted();
    const innerBefore = innerSshd.accepted();
    const result = await withSshSession(targetOf(innerSshd, targetOf(jumpSshd)), auth, (s) =>
      s.exec(sh`echo $SSH_CONNECTION`),
    );
    // SSH_CONNECTION = client-ip client-port server-ip server-port, as the inner sshd sees it.
    assert.match(result.stdout, new RegExp(` 127\\.0\\.0\\.2 ${innerSshd.port}\\n$`));
    assert.equal(jumpSshd.accepted(), jumpBefore + 1);
    assert.equal(innerSshd.accepted(), innerBefore + 1);
  });

  it('goes through the jump host, not around it (a jump that may not forward there fails the connect)', async () => {
    const fenced = await startSshd('fenced-jump', '127.0.0.1', ['PermitOpen 127.0.0.9:9']);
    try {
      const knownHosts = writeKnownHosts('known_hosts_fenced', [
        knownHostsLine(fenced),
        knownHostsLine(innerSshd),
      ]);
      const err = await rejectsWith(
        openSshSession(targetOf(innerSshd, targetOf(fenced)), { ...auth, knownHostsPath: knownHosts }),
        SshConnectError,
      );
      assert.equal(err.host, 'inner');
      assert.deepEqual(err.endpoint.via, ['fenced-jump']);
      assert.match(err.message, /prohibited|AllowTcpForwarding/);
    } finally {
      await fenced.stop();
    }
  });

  it('verifies the inner host key too (a wrong one is refused)', async () => {
    const knownHosts = writeKnownHosts('known_hosts_inner_wrong', [
      knownHostsLine(jumpSshd),
      knownHostsLine(innerSshd, jumpSshd.hostKeyPub),
    ]);
    const err = await rejectsWith(
      openSshSession(targetOf(innerSshd, targetOf(jumpSshd)), { ...auth, knownHostsPath: knownHosts }),
      HostKeyMismatchError,
    );
    assert.equal(err.host, 'inner');
    assert.equal(err.gotFingerprint, innerSshd.fingerprint);
    assert.match(err.message, /via jump/);
  });

  it('verifies the jump host key (unknown jump host is refused)', async () => {
    const knownHosts = writeKnownHosts('known_hosts_no_jump', [knownHostsLine(innerSshd)]);
    const err = await rejectsWith(
      openSshSession(targetOf(innerSshd, targetOf(jumpSshd)), { ...auth, knownHostsPath: knownHosts }),
      HostKeyUnknownError,
    );
    assert.equal(err.host, 'jump');
    assert.equal(err.fingerprint, jumpSshd.fingerprint);
  });
});

describe('connection failures', () => {
  it('connection refused → SshConnectError(refused)', async () => {
    const port = await freePort('127.0.0.1');
    const err = await rejectsWith(
      openSshSession({ name: 'nobody', host: '127.0.0.1', port, user: 'root' }, auth),
      SshConnectError,
    );
    assert.equal(err.kind, 'refused');
    assert.equal(err.retryable, true);
    assert.match(err.message, /sshd/);
  });

  it('a server that never speaks SSH → SshConnectError(timeout) after connectTimeoutMs', async () => {
    const silent = createServer(() => {});
    servers.push(silent);
    const port = await freePort('127.0.0.1');
    await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve));
    const started = Date.now();
    const err = await rejectsWith(
      openSshSession({ name: 'silent', host: '127.0.0.1', port, user: 'root' }, auth, {
        connectTimeoutMs: 400,
      }),
      SshConnectError,
    );
    assert.equal(err.kind, 'timeout');
    assert.ok(Date.now() - started < 3_000);
  });

  it('a key the host does not accept → SshConnectError(auth), not retryable', async () => {
    const stranger = join(root, 'stranger');
    keygen(stranger);
    const err = await rejectsWith(
      openSshSession(targetOf(jumpSshd), { ...auth, privateKeyPath: stranger }),
      SshConnectError,
    );
    assert.equal(err.kind, 'auth');
    assert.equal(err.retryable, false);
  });

  it('an encrypted or broken key file is reported by path, never by content', async () => {
    const locked = join(root, 'locked');
    keygen(locked, ['-N', 'secret-passphrase']);
    const lockedErr = await rejectsWith(
      openSshSession(targetOf(jumpSshd), { ...auth, privateKeyPath: locked }),
      SshConnectError,
    );
    assert.match(lockedErr.message, /passphrase.*ssh-agent/s);
    const broken = join(root, 'broken');
    writeFileSync(broken, privateKeyText.slice(0, 200));
    const brokenErr = await rejectsWith(
      openSshSession(targetOf(jumpSshd), { ...auth, privateKeyPath: broken }),
      SshConnectError,
    );
    assert.match(brokenErr.message, /cannot be parsed/);
    const missing = await rejectsWith(
      openSshSession(targetOf(jumpSshd), { ...auth, privateKeyPath: join(root, 'nope') }),
      SshConnectError,
    );
    assert.match(missing.message, /ENOENT/);
  });

  it('a link that goes silent is noticed by keepalive, failing the running command', async () => {
    // A TCP relay we can freeze: bytes stop flowing both ways, as on a dead link.
    let frozen = false;
    const sockets: Socket[] = [];
    const relay = createServer((client) => {
      const upstream = createConnection(jumpSshd.port, jumpSshd.address);
      sockets.push(client, upstream);
      client.on('data', (d: Buffer) => void (frozen || upstream.write(d)));
      upstream.on('data', (d: Buffer) => void (frozen || client.write(d)));
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    servers.push(relay);
    const port = await freePort('127.0.0.1');
    await new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
    const knownHosts = writeKnownHosts('known_hosts_relay', [knownHostsLine({ ...jumpSshd, port })]);
    const session = await openSshSession(
      { name: 'relayed', host: '127.0.0.1', port, user: 'root' },
      { ...auth, knownHostsPath: knownHosts },
      { keepaliveIntervalMs: 200, keepaliveCountMax: 2 },
    );
    try {
      const pidFile = join(root, 'keepalive.pid');
      const running = session.exec(sh`echo $$ > ${pidFile}; exec sleep 30`);
      await holdsWithin(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 3_000);
      strayPids.push(Number(readFileSync(pidFile, 'utf8')));
      frozen = true;
      const started = Date.now();
      const err = await rejectsWith(running, SshConnectError);
      assert.ok(Date.now() - started < 3_000, `noticed after ${Date.now() - started} ms`);
      assert.equal(err.kind, 'closed');
      assert.match(err.message, /Keepalive timeout|connection lost/);
    } finally {
      for (const s of sockets) s.destroy();
      await session.close();
    }
  });
});

describe('SshPool', () => {
  it('reuses one connection per host for many commands, including concurrent ones', async () => {
    const pool = new SshPool(auth);
    const before = jumpSshd.accepted();
    try {
      const target = targetOf(jumpSshd);
      for (let i = 0; i < 5; i++) {
        const session = await pool.session(target);
        assert.equal((await session.exec(sh`echo ${i}`)).stdout, `${i}\n`);
      }
      const sessions = await Promise.all(Array.from({ length: 4 }, () => pool.session(target)));
      const outputs = await Promise.all(
        Array.from({ length: 12 }, (_, i) => sessions[i % 4]!.exec(sh`sleep 0.1; echo ${i}`)),
      );
      assert.deepEqual(
        outputs.map((o) => o.stdout),
        Array.from({ length: 12 }, (_, i) => `${i}\n`),
      );
      assert.equal(pool.connectionsOpened, 1);
    } finally {
      await pool.closeAll();
    }
    assert.equal(jumpSshd.accepted() - before, 1, 'sshd should log exactly one login');
  });

  it('shares the jump connection between the jump host and the hosts behind it', async () => {
    const pool = new SshPool(auth);
    const jumpBefore = jumpSshd.accepted();
    const innerBefore = innerSshd.accepted();
    try {
      const jump = targetOf(jumpSshd);
      const inner = targetOf(innerSshd, jump);
      await Promise.all([
        pool.session(inner).then((s) => s.exec(sh`true`)),
        pool.session(jump).then((s) => s.exec(sh`true`)),
        pool.session(inner).then((s) => s.exec(sh`true`)),
      ]);
      for (let i = 0; i < 3; i++) await (await pool.session(inner)).exec(sh`echo ${raw('$((1+1))')}`);
      assert.equal(pool.connectionsOpened, 2);
    } finally {
      await pool.closeAll();
    }
    assert.equal(jumpSshd.accepted() - jumpBefore, 1);
    assert.equal(innerSshd.accepted() - innerBefore, 1);
  });

  it('replaces a connection that dropped, and does not cache a failed connect', async () => {
    const pool = new SshPool(auth);
    try {
      const target = targetOf(jumpSshd);
      const first = await pool.session(target);
      await first.close();
      const second = await pool.session(target);
      assert.notEqual(second, first);
      assert.equal((await second.exec(sh`echo back`)).stdout, 'back\n');
      assert.equal(pool.connectionsOpened, 2);

      const port = await freePort('127.0.0.1');
      const nowhere = { name: 'nowhere', host: '127.0.0.1', port, user: 'root' };
      await rejectsWith(pool.session(nowhere), SshConnectError);
      await rejectsWith(pool.session(nowhere), SshConnectError);
      assert.equal(pool.connectionsOpened, 4);
    } finally {
      await pool.closeAll();
    }
  });
});

describe('errors', () => {
  it('never carry key material, and flatten to plain data', () => {
    assert.ok(errorsSeen.length >= 10, `only ${errorsSeen.length} errors were collected`);
    const keyBody = privateKeyText
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('-----'))
      .map((l) => l.slice(0, 24));
    for (const err of errorsSeen) {
      const details = toFailureDetails(err);
      const text = `${String(err)}\n${(err as Error).stack ?? ''}\n${JSON.stringify(details)}`;
      assert.doesNotMatch(text, /PRIVATE KEY/);
      for (const fragment of keyBody)
        assert.ok(!text.includes(fragment), `key material in ${details.type}: ${fragment}`);
      assert.deepEqual(JSON.parse(JSON.stringify(details)), details);
      assert.ok(details.message.length > 0);
    }
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
