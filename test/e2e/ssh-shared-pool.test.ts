// The worker-wide SSH pool (src/ssh/shared-pool.ts) against real OpenSSH servers on loopback: activities (leases)
// share one connection per host, jump connections included; channels are capped under sshd's MaxSessions; one
// activity's cancellation stops only its own commands; an idle connection closes; a killed one is replaced; and
// a new connection checks the host key, so a key that changed across a reconnect is refused.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SharedSshPool, type SshAuth, type SshTarget } from '../../src/ssh/executor.js';
import { HostKeyMismatchError, SshConnectError } from '../../src/ssh/errors.js';
import { raw, sh } from '../../src/ssh/quote.js';
import { keygen, knownHostsLine, startLoopbackSshd, type LoopbackSshd } from '../helpers/loopback-sshd.js';
import { holdsWithin } from '../helpers/wait.js';

const root = mkdtempSync(join(tmpdir(), 'liftoff-shared-pool-'));
const authorizedKeys = join(root, 'authorized_keys');
let jump: LoopbackSshd;
let inner: LoopbackSshd;
let auth: SshAuth;
const started: LoopbackSshd[] = [];

const targetOf = (sshd: LoopbackSshd, via?: SshTarget): SshTarget => ({
  name: sshd.name,
  host: sshd.address,
  port: sshd.port,
  user: 'root',
  ...(via ? { jump: via } : {}),
});

async function sshd(
  name: string,
  address: string,
  extra: Partial<Parameters<typeof startLoopbackSshd>[0]> = {},
) {
  const s = await startLoopbackSshd({ root, name, address, authorizedKeys, ...extra });
  started.push(s);
  return s;
}

function knownHosts(file: string, hosts: LoopbackSshd[]): string {
  const path = join(root, file);
  writeFileSync(path, hosts.map((h) => knownHostsLine(h)).join('\n') + '\n');
  return path;
}

before(async () => {
  keygen(join(root, 'id_ed25519'));
  writeFileSync(authorizedKeys, readFileSync(join(root, 'id_ed25519.pub')));
  [jump, inner] = await Promise.all([sshd('jump', '127.0.0.1'), sshd('inner', '127.0.0.2')]);
  auth = {
    privateKeyPath: join(root, 'id_ed25519'),
    knownHostsPath: knownHosts('known_hosts', [jump, inner]),
  };
});

after(async () => {
  await Promise.all(started.map((s) => s.stop()));
  rmSync(root, { recursive: true, force: true });
});

describe('SharedSshPool', () => {
  it('two activities, one after the other and at once, share one connection per host (jump chain included)', async () => {
    const pool = new SharedSshPool({ idleMs: 60_000 });
    const jumpBefore = jump.accepted();
    const innerBefore = inner.accepted();
    try {
      const viaJump = targetOf(inner, targetOf(jump));
      // Activity 1, then activity 2: the second finds the first one's connections open.
      for (const n of [1, 2]) {
        const lease = pool.lease();
        try {
          assert.equal(
            (await (await lease.session(targetOf(jump), auth)).exec(sh`echo ${n}`)).stdout,
            `${n}\n`,
          );
          assert.equal((await (await lease.session(viaJump, auth)).exec(sh`echo ${n}`)).stdout, `${n}\n`);
        } finally {
          lease.release();
        }
      }
      // Two activities at once.
      const leases = [pool.lease(), pool.lease()];
      try {
        const outputs = await Promise.all(
          leases.flatMap((lease, i) => [
            lease.session(viaJump, auth).then((s) => s.exec(sh`sleep 0.2; echo ${i}`)),
            lease.session(targetOf(jump), auth).then((s) => s.exec(sh`sleep 0.2; echo ${i}`)),
          ]),
        );
        assert.deepEqual(
          outputs.map((o) => o.stdout),
          ['0\n', '0\n', '1\n', '1\n'],
        );
      } finally {
        for (const lease of leases) lease.release();
      }
      assert.equal(pool.connectionsOpened, 2);
    } finally {
      await pool.close();
    }
    assert.equal(jump.accepted() - jumpBefore, 1, 'one login on the jump host');
    assert.equal(inner.accepted() - innerBefore, 1, 'one login on the host behind it');
    console.log(
      'FIGURE: 2 activities × 2 hosts (one behind the other as its jump host): 1 SSH handshake per host',
    );
  });

  it('caps the channels open at once under MaxSessions and queues the rest', async () => {
    // One above the cap, as the default cap (8) is under sshd's default (10): sshd frees a session slot a
    // moment after the channel's close reaches us.
    const capped = await sshd('capped', '127.0.0.3', { extraConfig: ['MaxSessions 3'] });
    const pool = new SharedSshPool({ idleMs: 60_000, maxConcurrentExecs: 2 });
    const leases = [pool.lease(), pool.lease()];
    try {
      const cappedAuth = { ...auth, knownHostsPath: knownHosts('known_hosts_capped', [capped]) };
      const started = Date.now();
      const outputs = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          leases[i % 2]!.session(targetOf(capped), cappedAuth).then((s) => s.exec(sh`sleep 0.3; echo ${i}`)),
        ),
      );
      assert.deepEqual(
        outputs.map((o) => o.stdout),
        Array.from({ length: 8 }, (_, i) => `${i}\n`),
      );
      // 8 commands of 0.3 s, 2 at a time: at least 4 rounds.
      assert.ok(Date.now() - started >= 1_100, `took ${Date.now() - started} ms: more than 2 ran at once`);
      assert.equal(pool.connectionsOpened, 1);
    } finally {
      for (const lease of leases) lease.release();
      await pool.close();
    }
  });

  it("one activity's cancellation stops its own command, not the connection another activity uses", async () => {
    const pool = new SharedSshPool({ idleMs: 60_000 });
    const cancelled = new AbortController();
    const a = pool.lease({ signal: cancelled.signal });
    const b = pool.lease();
    try {
      const [sa, sb] = await Promise.all([a.session(targetOf(jump), auth), b.session(targetOf(jump), auth)]);
      // A duration no other process sleeps, to find the command by.
      const seconds = `31.${process.pid}`;
      const long = sa.exec(sh`sleep ${seconds}`);
      const other = sb.exec(sh`sleep 1.5; echo still-here`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const t0 = Date.now();
      cancelled.abort(new Error('activity cancelled'));
      await assert.rejects(long, /activity cancelled/);
      assert.ok(Date.now() - t0 < 1_000, 'the cancelled command returned at once');
      assert.equal((await other).stdout, 'still-here\n');
      // The remote process was signalled over the same connection: gone, or (a root login has no privilege
      // separation) sshd logged that it refused the signal request, as in ssh-executor.test.ts.
      const gone = async () =>
        (await sb.exec(sh`pgrep -f ${`^sleep ${seconds}$`} || true`)).stdout.trim() === '';
      let stopped = false;
      for (let i = 0; i < 20 && !stopped; i++) {
        stopped = (await gone()) || jump.log().includes('session signalling requires privilege separation');
        if (!stopped) await new Promise((resolve) => setTimeout(resolve, 150));
      }
      assert.ok(stopped, 'the cancelled command was neither stopped nor signalled');
      assert.equal(pool.connectionsOpened, 1);
    } finally {
      a.release();
      b.release();
      await pool.close();
    }
  });

  it('closes a connection once unused for the idle time; keepMs holds it longer', async () => {
    const pool = new SharedSshPool({ idleMs: 300 });
    const before = jump.accepted();
    try {
      const lease = pool.lease();
      await (await lease.session(targetOf(jump), auth)).exec(sh`true`);
      lease.release();
      assert.equal(pool.openConnections, 1);
      assert.ok(await holdsWithin(() => pool.openConnections === 0, 3_000), 'the idle connection closed');

      const kept = pool.lease({ keepMs: 1_500 });
      await (await kept.session(targetOf(jump), auth)).exec(sh`true`);
      kept.release();
      await new Promise((resolve) => setTimeout(resolve, 700));
      assert.equal(pool.openConnections, 1, 'kept past the idle time');
      assert.ok(await holdsWithin(() => pool.openConnections === 0, 3_000), 'closed after keepMs');
      assert.equal(pool.connectionsOpened, 2);
    } finally {
      await pool.close();
    }
    assert.equal(jump.accepted() - before, 2);
  });

  it('replaces a connection that was killed, mid-command and between uses', async () => {
    const pool = new SharedSshPool({ idleMs: 60_000 });
    const lease = pool.lease();
    try {
      const session = await lease.session(targetOf(jump), auth);
      // The shell's parent is this connection's sshd process: killing it kills the connection under the command.
      await assert.rejects(session.exec(sh`kill -9 ${raw('$PPID')}; sleep 5`), SshConnectError);
      assert.equal((await session.exec(sh`echo back`)).stdout, 'back\n');
      assert.equal(pool.connectionsOpened, 2);

      // Killed from outside while nobody used it: the next command, the next activity's, runs on a new one.
      const pid = (await session.exec(sh`echo ${raw('$PPID')}`)).stdout.trim();
      process.kill(Number(pid), 'SIGKILL');
      const next = pool.lease();
      try {
        assert.equal(
          (await (await next.session(targetOf(jump), auth)).exec(sh`echo again`)).stdout,
          'again\n',
        );
      } finally {
        next.release();
      }
      assert.equal(pool.connectionsOpened, 3);
    } finally {
      lease.release();
      await pool.close();
    }
  });

  it('replaces a connection behind a jump host whose sshd process was killed between uses', async () => {
    const pool = new SharedSshPool({ idleMs: 60_000 });
    const viaJump = targetOf(inner, targetOf(jump));
    try {
      const first = pool.lease();
      try {
        const session = await first.session(viaJump, auth);
        process.kill(Number((await session.exec(sh`echo ${raw('$PPID')}`)).stdout.trim()), 'SIGKILL');
      } finally {
        first.release();
      }
      // The jump host ends its channel's half from the inner host; the connection must not be handed out again.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const next = pool.lease();
      try {
        const again = await (await next.session(viaJump, auth)).exec(sh`echo again`);
        assert.equal(again.stdout, 'again\n');
      } finally {
        next.release();
      }
      assert.equal(pool.connectionsOpened, 3, 'jump once, inner twice');
    } finally {
      await pool.close();
    }
  });

  it(
    'close() ends a connection behind a jump host whose far end no longer answers, so a worker can stop',
    {
      timeout: 60_000,
    },
    async () => {
      const pool = new SharedSshPool({ idleMs: 60_000 });
      const lease = pool.lease();
      let frozen = 0;
      try {
        const session = await lease.session(targetOf(inner, targetOf(jump)), auth);
        // The connection's sshd process on the inner host, frozen: it never answers the goodbye, so the jump host
        // never closes the channel the connection runs over (ssh2's destroy() is a no-op once end() was called).
        frozen = Number((await session.exec(sh`echo ${raw('$PPID')}`)).stdout.trim());
        process.kill(frozen, 'SIGSTOP');
        lease.release();
        const started = Date.now();
        await pool.close();
        const tookMs = Date.now() - started;
        process.stdout.write(
          `# FIGURE: close() of a pool whose inner host stopped answering took ${tookMs} ms\n`,
        );
        assert.equal(pool.openConnections, 0);
      } finally {
        lease.release();
        if (frozen) process.kill(frozen, 'SIGKILL');
      }
    },
  );

  it('checks the host key on every new connection: a key that changed across a reconnect is refused', async () => {
    let host = await sshd('rekeyed', '127.0.0.4');
    const hostAuth = { ...auth, knownHostsPath: knownHosts('known_hosts_rekeyed', [host]) };
    const pool = new SharedSshPool({ idleMs: 60_000 });
    try {
      const first = pool.lease();
      const session = await first.session(targetOf(host), hostAuth);
      await session.exec(sh`true`);
      await assert.rejects(session.exec(sh`kill -9 ${raw('$PPID')}; sleep 5`), SshConnectError);
      first.release();
      // The connection dies (a reboot), and the host comes back on the same address and port with another key (reinstalled, or impersonated).
      await host.stop();
      host = await sshd('rekeyed', '127.0.0.4', { port: host.port, newHostKey: true });
      assert.notEqual(
        host.hostKeyPub,
        readFileSync(join(root, 'known_hosts_rekeyed'), 'utf8').split(' ').slice(1).join(' ').trim(),
      );
      const second = pool.lease();
      try {
        const session = await second.session(targetOf(host), hostAuth).catch((err: unknown) => err);
        assert.ok(
          session instanceof HostKeyMismatchError,
          `expected HostKeyMismatchError, got ${String(session)}; opened ${pool.connectionsOpened}`,
        );
      } finally {
        second.release();
      }
      assert.equal(host.accepted(), 0, 'no login on the host with the changed key');
    } finally {
      await pool.close();
    }
  });
});
