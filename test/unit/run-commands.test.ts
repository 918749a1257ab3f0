// runCommands (issue 28): a step's named commands in one round trip, each answered by its name with its own exit
// status, stdout and stderr; a section that came back unreadable is run again alone; a command gated by
// `unlessOk` does not run when its gate passed; `check: true` throws RemoteCommandError; stdin reaches only the
// command that takes it. The "host" is this machine's sh behind a fake session that counts the commands it runs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sh, type RemoteCommand } from '../../src/ssh/quote.js';
import type { ExecOptions, ExecResult, SshSession } from '../../src/ssh/executor.js';
import { RemoteCommandError } from '../../src/ssh/errors.js';
import { answerOf, runCommands } from '../../src/activities/run-commands.js';
import { batchCommand } from '../../src/host-commands/sections.js';
import type { StepCommand } from '../../src/host-commands/step-command.js';

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

const streams = (r: ExecResult) => ({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr });

describe('runCommands', () => {
  it('runs every command in one trip and answers each by its name, with its own status and streams', async () => {
    const host = localSession();
    const answers = await runCommands(
      host,
      [
        { name: 'ok', command: sh`echo out; echo err >&2` },
        { name: 'missing', command: sh`liftoff-no-such-tool --version` },
        { name: 'failing', command: sh`echo partial; exit 3` },
        { name: 'same-text', command: sh`echo out; echo err >&2` },
      ],
      { timeoutMs: 10_000 },
    );
    assert.equal(host.ran.length, 1, 'one remote command');
    assert.deepEqual(streams(answerOf(answers, 'ok')), { exitCode: 0, stdout: 'out\n', stderr: 'err' });
    assert.deepEqual(streams(answerOf(answers, 'same-text')), streams(answerOf(answers, 'ok')));
    const gone = answerOf(answers, 'missing');
    assert.equal(gone.exitCode, 127);
    assert.match(gone.stderr, /not found/);
    assert.deepEqual(streams(answerOf(answers, 'failing')), { exitCode: 3, stdout: 'partial\n', stderr: '' });
    assert.throws(() => answerOf(answers, 'never-run'), /no answer for never-run/);
  });

  it('runs a lone command as it is, with no framing', async () => {
    const host = localSession();
    const answers = await runCommands(host, [{ name: 'one', command: sh`echo alone` }], {
      timeoutMs: 10_000,
    });
    assert.deepEqual(host.ran, ['echo alone']);
    assert.equal(answerOf(answers, 'one').stdout, 'alone\n');
  });

  it('says a command was cut at its own bound, and keeps the others whole', async () => {
    const host = localSession();
    const answers = await runCommands(
      host,
      [
        { name: 'big', command: sh`head -c 100000 /dev/zero | tr '\\0' y`, maxBytes: 1000 },
        { name: 'small', command: sh`echo small` },
      ],
      { timeoutMs: 10_000 },
    );
    const big = answerOf(answers, 'big');
    assert.equal(big.stdoutCutBytes, 1);
    assert.ok(big.stdout.length <= 1000, `kept ${big.stdout.length} bytes`);
    assert.equal(answerOf(answers, 'small').stdoutCutBytes, undefined);
    assert.equal(answerOf(answers, 'small').stdout, 'small\n');
    assert.equal(host.ran.length, 1);
  });

  it('runs a command whose section a hostile host garbled again on its own', async () => {
    const commands: StepCommand[] = [
      { name: 'first', command: sh`echo one` },
      { name: 'second', command: sh`echo real` },
    ];
    // What the trip really prints, with the second section's end marker gone (a host that cut it short).
    const real = spawnSync('sh', ['-c', batchCommand(commands).command.text]).stdout.toString();
    const garbled = real.slice(0, real.lastIndexOf('=liftoff-end second'));
    assert.notEqual(garbled, real);
    const host = localSession();
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
              stdoutBytes: Buffer.from(garbled),
            }))
          : host.exec(cmd, opts),
    };
    const answers = await runCommands(garbling, commands, { timeoutMs: 10_000 });
    assert.equal(answerOf(answers, 'first').stdout, 'one\n', 'answered from the trip');
    assert.equal(answerOf(answers, 'second').stdout, 'real\n', 'answered by its own run');
    assert.deepEqual(host.ran.slice(1), ['echo real'], 'only the garbled one ran again');
  });

  it('throws RemoteCommandError for a failed `check` command, naming it and its exit', async () => {
    const host = localSession();
    const run = runCommands(
      host,
      [
        { name: 'read', command: sh`echo fine` },
        { name: 'must', command: sh`echo nope >&2; exit 4`, check: true },
      ],
      { timeoutMs: 10_000 },
    );
    const error = await run.then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof RemoteCommandError, String(error));
    assert.equal(error.exitCode, 4);
    assert.equal(error.command, 'echo nope >&2; exit 4');
    assert.match(error.stderr, /nope/);
    assert.equal(host.ran.length, 1, 'judged from the trip, not run again');
  });

  it('starts something unless it is there: the gate, a wait on the host, stdin to the one command that takes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'liftoff-run-commands-'));
    try {
      const marker = join(dir, 'started');
      const exists = sh`test -e ${marker}`;
      const commands = (): StepCommand[] => [
        { name: 'exists', command: exists },
        // The start reads its env from stdin, as rayRunCommand's transport does.
        {
          name: 'start',
          command: sh`read -r kv; printf '%s' "$kv" > ${marker}; echo id-1`,
          stdin: true,
          unlessOk: 'exists',
          change: true,
        },
        {
          name: 'state',
          command: sh`cat ${marker}; read -r rest || echo no-stdin-here`,
          waitUntil: { until: exists, seconds: 1, everySeconds: 0.1 },
        },
      ];

      const host = localSession();
      const first = await runCommands(host, commands(), { timeoutMs: 10_000, stdin: 'A=1\n' });
      assert.equal(host.ran.length, 1, 'one round trip');
      assert.equal(answerOf(first, 'exists').exitCode, 1, 'absent before');
      assert.equal(answerOf(first, 'start').stdout, 'id-1\n');
      assert.equal(answerOf(first, 'state').stdout, 'A=1no-stdin-here\n', 'stdin went to the start only');

      // Now it is there: the start does not run, has no answer, and is not run again on its own.
      const again = localSession();
      const second = await runCommands(again, commands(), { timeoutMs: 10_000, stdin: 'A=2\n' });
      assert.equal(answerOf(second, 'exists').exitCode, 0);
      assert.equal(second.has('start'), false);
      assert.equal(readFileSync(marker, 'utf8'), 'A=1', 'not started twice');
      assert.equal(again.ran.length, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses names a judge could confuse, a gate that does not run first, and two commands taking stdin', () => {
    const c = (name: string, extra: Partial<StepCommand> = {}): StepCommand => ({
      name,
      command: sh`true`,
      ...extra,
    });
    assert.throws(() => batchCommand([c('a'), c('a')]), /given twice/);
    assert.throws(() => batchCommand([c('Bad Name')]), /is not \[a-z0-9-\]/);
    assert.throws(() => batchCommand([c('b', { unlessOk: 'a' }), c('a')]), /does not run before it/);
    assert.throws(
      () => batchCommand([c('a', { stdin: true }), c('b', { stdin: true })]),
      /at most one command/,
    );
  });
});
