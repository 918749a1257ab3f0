// Host-key algorithms: an RSA-only host still connects (rsa-sha2-512/256), and a host that can only sign the
// key exchange with SHA-1 (`ssh-rsa`) is refused unless the worker's policy lists it (sshRsaHostKeys). A real
// OpenSSH sshd of its own, on loopback.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { SshAuth, SshTarget } from '../../src/ssh/executor.js';
import { openSshSession } from '../helpers/ssh.js';
import { SshConnectError } from '../../src/ssh/errors.js';
import { onHost } from '../../src/activities/ssh-context.js';
import { bindWorkerPolicy } from '../../src/activities/worker-policy.js';
import { workerPolicyFrom, type WorkerPolicySettings } from '../../src/config/worker-policy.js';
import { sh } from '../../src/ssh/quote.js';
import { runOk, sleep } from '../../sim/processes.js';
import { sshdBinary } from '../../sim/sshd.js';
import { freeLoopbackPort } from '../../scripts/lib/free-port.js';

describe('host-key algorithms against an RSA-only sshd', () => {
  let dir: string;
  let clientKey: string;
  let hostPub: string;
  const servers: ChildProcess[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-rsa-'));
    await runOk('ssh-keygen', ['-q', '-t', 'rsa', '-b', '3072', '-N', '', '-f', join(dir, 'host_rsa')]);
    clientKey = join(dir, 'client');
    await runOk('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', clientKey]);
    writeFileSync(join(dir, 'authorized_keys'), readFileSync(`${clientKey}.pub`));
    hostPub = readFileSync(join(dir, 'host_rsa.pub'), 'utf8').split(/\s+/).slice(0, 2).join(' ');
    mkdirSync('/run/sshd', { recursive: true });
  });

  after(() => {
    for (const s of servers) s.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  async function sshdOffering(algorithms: string): Promise<{ target: SshTarget; auth: SshAuth }> {
    const port = await freeLoopbackPort();
    const config = join(dir, `sshd_config_${port}`);
    writeFileSync(
      config,
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${join(dir, 'host_rsa')}`,
        `HostKeyAlgorithms ${algorithms}`,
        `PidFile ${join(dir, `sshd_${port}.pid`)}`,
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        'PermitRootLogin prohibit-password',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'UsePAM no',
        'StrictModes no',
        '',
      ].join('\n'),
    );
    const child = spawn(sshdBinary, ['-D', '-e', '-f', config], { stdio: 'ignore' });
    servers.push(child);
    for (let i = 0; i < 50; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const s = createServer();
        s.once('error', () => resolve(true));
        s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)));
      });
      if (up) break;
      await sleep(100);
    }
    const knownHosts = join(dir, `known_hosts_${port}`);
    writeFileSync(knownHosts, `[127.0.0.1]:${port} ${hostPub}\n`);
    return {
      target: { name: 'rsa-host', host: '127.0.0.1', port, user: 'root' },
      auth: { privateKeyPath: clientKey, knownHostsPath: knownHosts },
    };
  }

  it('an RSA host key connects through rsa-sha2-512/256', async () => {
    const { target, auth } = await sshdOffering('rsa-sha2-512,rsa-sha2-256');
    const session = await openSshSession(target, auth, { connectTimeoutMs: 5000 });
    try {
      assert.equal((await session.exec(sh`echo ok`)).stdout.trim(), 'ok');
    } finally {
      await session.close();
    }
  });

  it('a host that only signs with SHA-1 (ssh-rsa) is refused: no host-key format in common', async () => {
    const { target, auth } = await sshdOffering('ssh-rsa');
    await assert.rejects(openSshSession(target, auth, { connectTimeoutMs: 5000 }), (err: Error) => {
      console.log(`FIGURE: ssh-rsa-only host refused: ${err.message.split('\n')[0]}`);
      // The handshake's host-key negotiation, not the login, the network or the key check after it.
      assert.ok(err instanceof SshConnectError, `an SshConnectError: ${err.name}: ${err.message}`);
      assert.equal(err.reason, 'Handshake failed: no matching host key format');
      assert.match(err.message, /SHA-1 only \(ssh-rsa/);
      assert.match(err.message, /sshRsaHostKeys/);
      assert.equal(err.retryable, false, 'retrying cannot change what the host offers');
      return true;
    });
  });

  it('the worker policy decides: a SHA-1-only host listed under sshRsaHostKeys (or all, with true) is reached; one not listed is refused', async () => {
    const { target, auth } = await sshdOffering('ssh-rsa');
    const echo = (settings: WorkerPolicySettings) =>
      bindWorkerPolicy(
        workerPolicyFrom({ knownHosts: [dir], privateKeys: [dir], ...settings }, 'the test'),
        () => onHost({ target, auth }, async (session) => (await session.exec(sh`echo ok`)).stdout.trim()),
      )();
    assert.equal(await echo({ sshRsaHostKeys: ['127.0.0.1'] }), 'ok');
    assert.equal(await echo({ sshRsaHostKeys: true }), 'ok');
    for (const sshRsaHostKeys of [[], ['10.0.0.9'], false]) {
      await assert.rejects(echo({ sshRsaHostKeys }), (err: Error) => {
        assert.ok(err instanceof ApplicationFailure, String(err));
        assert.equal(err.type, 'SshConnectError');
        assert.match(err.message, /no matching host key format/);
        assert.equal(err.nonRetryable, true, 'final: Temporal does not retry it');
        return true;
      });
    }
    console.log(
      'FIGURE: SHA-1-only sshd reached with sshRsaHostKeys [127.0.0.1] and true; refused with [], [10.0.0.9], false',
    );
  });
});
