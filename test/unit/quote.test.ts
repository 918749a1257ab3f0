import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { isRemoteCommand, raw, sh, shellQuote } from '../../src/ssh/quote.js';

const shells = ['/bin/sh', '/bin/bash'].filter((s) => existsSync(s));

/** Runs `printf %s <quoted>` through a real shell and returns the bytes it printed. */
function echoThrough(shell: string, script: string): Buffer {
  const run = spawnSync(shell, ['-c', script], { env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } });
  assert.equal(run.status, 0, `${shell} failed: ${run.stderr.toString()}`);
  return run.stdout;
}

// Any code point (surrogate halves included, which encode as U+FFFD on both sides) except NUL, which no
// argv string can carry.
const anyText = fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !s.includes('\0'));
const shellish = fc.string({
  unit: fc.constantFrom(...`'"\\$\`;&|<>(){}[]*?!#~=%^ \t\n\r-aZ0é`.split('')),
  maxLength: 30,
});

describe('shellQuote', () => {
  it('leaves plain words bare and quotes the rest', () => {
    assert.equal(shellQuote('vllm'), 'vllm');
    assert.equal(shellQuote('/home/aurora/.cache/huggingface'), '/home/aurora/.cache/huggingface');
    assert.equal(shellQuote('--port'), '--port');
    assert.equal(shellQuote(6379), '6379');
    assert.equal(shellQuote(''), "''");
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
    assert.equal(shellQuote('a b'), "'a b'");
    assert.equal(shellQuote('~'), "'~'");
    assert.equal(shellQuote('FOO=bar'), "'FOO=bar'");
  });

  it('rejects what a shell argument cannot hold', () => {
    assert.throws(() => shellQuote('a\0b'), /NUL/);
    assert.throws(() => shellQuote(Number.NaN), /non-finite/);
    assert.throws(() => shellQuote(Number.POSITIVE_INFINITY), /non-finite/);
  });

  for (const shell of shells) {
    it(`round-trips any string byte for byte through ${shell}`, () => {
      fc.assert(
        fc.property(fc.oneof(anyText, shellish), (value) => {
          const printed = echoThrough(shell, `printf %s ${shellQuote(value)}`);
          assert.deepEqual(printed, Buffer.from(value, 'utf8'));
        }),
        { numRuns: 150 },
      );
    });
  }

  it('keeps a value one argument however it is built', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(anyText, shellish), { maxLength: 5 }), (values) => {
        const printed = echoThrough(
          '/bin/sh',
          `printf '%s\\0' ${values.map((v) => shellQuote(v)).join(' ')}`,
        );
        const expected = values.length === 0 ? [''] : values;
        assert.deepEqual(
          printed.toString('utf8'),
          expected.map((v) => Buffer.from(v, 'utf8').toString('utf8') + '\0').join(''),
        );
      }),
      { numRuns: 80 },
    );
  });
});

describe('injection attempts never run', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-quote-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates no canary file for any hostile value', () => {
    const canary = join(dir, 'canary');
    const attacks = [
      `; touch ${canary}`,
      `$(touch ${canary})`,
      `\`touch ${canary}\``,
      `\ntouch ${canary}`,
      `' ; touch ${canary} ; '`,
      `'$(touch ${canary})'`,
      `"; touch ${canary}; "`,
      `&& touch ${canary}`,
      `| touch ${canary}`,
      `\r\ntouch ${canary}`,
      `\\'; touch ${canary}; echo \\'`,
      `$'\\x27'; touch ${canary}`,
      `\${IFS}touch\${IFS}${canary}`,
    ];
    const hostile = fc.oneof(
      fc.constantFrom(...attacks),
      fc.tuple(shellish, fc.constantFrom(...attacks), shellish).map(([a, b, c]) => a + b + c),
    );
    for (const shell of shells) {
      fc.assert(
        fc.property(hostile, (value) => {
          const viaQuote = echoThrough(shell, `printf %s ${shellQuote(value)}`);
          assert.deepEqual(viaQuote, Buffer.from(value, 'utf8'));
          const viaTemplate = echoThrough(shell, sh`printf %s ${value} ${[value, value]}`.text);
          assert.deepEqual(viaTemplate, Buffer.from(value.repeat(3), 'utf8'));
          assert.equal(existsSync(canary), false, `canary created by ${JSON.stringify(value)} in ${shell}`);
        }),
        { numRuns: 60 },
      );
    }
  });
});

describe('sh template', () => {
  it('quotes every interpolated value', () => {
    const cmd = sh`docker rm -f -- ${'my container'} ${7}`;
    assert.equal(cmd.text, "docker rm -f -- 'my container' 7");
  });

  it('quotes each array element and joins them with spaces', () => {
    assert.equal(
      sh`systemctl stop ${['a.service', 'b c.service']}`.text,
      "systemctl stop a.service 'b c.service'",
    );
    assert.equal(sh`echo ${[]}done`.text, 'echo done');
  });

  it('inserts raw() fragments and nested commands verbatim', () => {
    const inner = sh`cat ${'/tmp/a b'}`;
    assert.equal(sh`${raw('set -e;')} timeout 5 ${inner}`.text, "set -e; timeout 5 cat '/tmp/a b'");
    assert.equal(sh`sh -c ${inner.text}`.text, `sh -c 'cat '\\''/tmp/a b'\\'''`);
  });

  it('marks only its own output as a RemoteCommand', () => {
    assert.equal(isRemoteCommand(sh`true`), true);
    assert.equal(isRemoteCommand({ text: 'rm -rf /' }), false);
    assert.equal(isRemoteCommand(raw('true')), false);
  });

  it('does not treat a look-alike object as raw', () => {
    const fake = { rawText: '; reboot' } as unknown as ReturnType<typeof raw>;
    assert.throws(() => sh`echo ${fake}`, TypeError);
  });
});
