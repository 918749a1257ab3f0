// prefetchReads (issue 18, item 2): a step's reads in one round trip, each answered once with its own exit
// status, stdout and stderr; an unreadable answer, a second run, or a failed read wanted thrown go to the host.
// The "host" here is this machine's sh behind a fake session that counts the commands it runs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { sh, type RemoteCommand } from '../../src/ssh/quote.js';
import type { ExecOptions, ExecResult, SshSession } from '../../src/ssh/executor.js';
import { prefetchReads } from '../../src/activities/prefetch.js';
import { prefetchCommand, type BatchEntry } from '../../src/host-commands/sections.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function localSession(): SshSession & { ran: string[] } {
  const ran: string[] = [];
  return {
    ran,
    target: { name: 'local', host: '127.0.0.1', port: 22, user: 'me' },
    close: () => Promise.resolve(),
    exec(cmd: RemoteCommand, opts?: ExecOptions): Promise<ExecResult> {
      ran.push(cmd.text);
      const r = spawnSync('sh', ['-c', cmd.text], { input: opts?.stdin ?? '', maxBuffer: 64 * 1024 * 1024 });
      const result: ExecResult = {
        exitCode: r.status ?? 1,
        stdout: r.stdout.toString(),
        stderr: r.stderr.toString(),
        durationMs: 0,
        ...(opts?.stdoutBytes ? { stdoutBytes: r.stdout } : {}),
      };
      if (opts?.check !== false && result.exitCode !== 0)
        return Promise.reject(new Error(`exit ${result.exitCode}`));
      return Promise.resolve(result);
    },
  };
}

describe('prefetchReads', () => {
  it('answers every read from one command, each with its own status and streams, once', async () => {
    const host = localSession();
    const ok = sh`echo out; echo err >&2`;
    const missing = sh`liftoff-no-such-tool --version`;
    const failing = sh`echo partial; exit 3`;
    const session = await prefetchReads(host, [ok, missing, failing, ok], { timeoutMs: 10_000 });
    assert.equal(host.ran.length, 1, 'one remote command');
    assert.deepEqual(
      { ...(await session.exec(ok, { check: false })), durationMs: 0 },
      { exitCode: 0, stdout: 'out\n', stderr: 'err', durationMs: 0 },
    );
    const gone = await session.exec(missing, { check: false });
    assert.equal(gone.exitCode, 127);
    assert.match(gone.stderr, /not found/);
    assert.equal((await session.exec(failing, { check: false })).stdout, 'partial\n');
    assert.equal(host.ran.length, 1, 'still one');
    // A second run of a read is run on the host: the host may have changed since.
    await session.exec(ok, { check: false });
    assert.equal(host.ran.length, 2);
  });

  it('a failed read that the caller wants thrown runs on the host, which throws as before', async () => {
    const host = localSession();
    const failing = sh`exit 4`;
    const session = await prefetchReads(host, [failing], { timeoutMs: 10_000 });
    await assert.rejects(session.exec(failing), /exit 4/);
    assert.equal(host.ran.length, 2);
  });

  it('a read cut at its bound says so; a command not prefetched runs as is', async () => {
    const host = localSession();
    const big = sh`head -c 100000 /dev/zero | tr '\\0' y`;
    const session = await prefetchReads(host, [big], { timeoutMs: 10_000, maxBytesPerRead: 1000 });
    const r = await session.exec(big, { check: false });
    assert.equal(r.stdoutCutBytes, 1);
    assert.ok(r.stdout.length <= 1000);
    assert.equal((await session.exec(sh`echo other`)).stdout, 'other\n');
    assert.equal(host.ran.length, 2);
  });

  it('a read whose section a hostile host garbled is run again on its own', async () => {
    const host = localSession();
    const read = sh`echo real`;
    const garbling: SshSession = {
      ...host,
      exec: (cmd, opts) =>
        host.ran.length === 0
          ? (host.ran.push(cmd.text),
            Promise.resolve({
              exitCode: 0,
              stdout: '',
              stderr: '',
              durationMs: 0,
              stdoutBytes: Buffer.from('=liftoff-section r0\n|x'),
            }))
          : host.exec(cmd, opts),
    };
    const session = await prefetchReads(garbling, [read], { timeoutMs: 10_000 });
    assert.equal((await session.exec(read, { check: false })).stdout, 'real\n');
    assert.equal(host.ran.length, 2);
  });

  it('a batch that starts something unless it exists: the gate, a wait on the host, stdin, a read given twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'liftoff-prefetch-'));
    try {
      const exists = sh`test -e ${join(dir, 'started')}`;
      // The start reads its env from stdin, as rayRunCommand's transport does.
      const start = sh`read -r kv; printf '%s' "$kv" > ${join(dir, 'started')}; echo id-1`;
      const state = sh`cat ${join(dir, 'started')}`;
      const batchOf = (): BatchEntry[] => [
        exists,
        { command: start, stdin: true, unlessOk: 0 },
        { command: state, waitUntil: { until: exists, seconds: 1, everySeconds: 0.1 } },
        { command: exists },
      ];

      const host = localSession();
      const first = await prefetchReads(host, batchOf(), { timeoutMs: 10_000, stdin: 'A=1\n' });
      assert.equal(host.ran.length, 1, 'one round trip');
      assert.equal((await first.exec(exists, { check: false })).exitCode, 1, 'absent before');
      assert.equal((await first.exec(start, { check: false, stdin: 'A=1\n' })).stdout, 'id-1\n');
      assert.equal((await first.exec(state, { check: false })).stdout, 'A=1');
      assert.equal(
        (await first.exec(exists, { check: false })).exitCode,
        0,
        'the same read again, answered second',
      );
      assert.equal(host.ran.length, 1, 'every answer from the one trip');

      // Now it exists: the start does not run in the trip, and a caller that still wants it goes to the host.
      const again = localSession();
      const second = await prefetchReads(again, batchOf(), { timeoutMs: 10_000, stdin: 'A=2\n' });
      assert.equal((await second.exec(exists, { check: false })).exitCode, 0);
      assert.equal(readFileSync(join(dir, 'started'), 'utf8'), 'A=1', 'not started twice');
      await second.exec(start, { check: false, stdin: 'A=2\n' });
      assert.equal(again.ran.length, 2);
      assert.throws(
        () => prefetchCommand([exists, { command: start, unlessOk: 1 }]),
        /unlessOk must name an earlier item/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
