// What `liftoff trust` writes into known_hosts: a hashed host field that OpenSSH and liftoff's own matcher both
// find, and never a line in a file that does not read as known_hosts (an authorized_keys file above all).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseKnownHosts, verifyHostKey } from '../../src/ssh/known-hosts.js';
import {
  appendKnownHostsLine,
  checkPinTarget,
  formatKnownHostsLine,
  knownHostsLineProblems,
  KnownHostsFileError,
} from '../../src/ssh/known-hosts-pin.js';
import { hostSchema } from '../../src/config/schema.js';

let dir = '';
let keyType = '';
let key = Buffer.alloc(0);
let otherKeyLine = '';

/** OpenSSH's own lookup: whether `file` has a key for `name` (exit 0 = found). */
function opensshFinds(file: string, name: string): boolean {
  try {
    execFileSync('ssh-keygen', ['-F', name, '-f', file], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'liftoff-known-hosts-pin-'));
  for (const name of ['key', 'other']) {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, name)]);
  }
  const [type, base64] = readFileSync(join(dir, 'key.pub'), 'utf8').trim().split(' ');
  assert.ok(type && base64);
  keyType = type;
  key = Buffer.from(base64, 'base64');
  otherKeyLine = readFileSync(join(dir, 'other.pub'), 'utf8').trim();
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the pinned line', () => {
  it('hashes the host field, which OpenSSH and liftoff both match, on port 22 and any other', () => {
    const cases: [host: string, port: number, opensshName: string][] = [
      ['10.213.0.11', 22, '10.213.0.11'],
      ['10.213.0.11', 2222, '[10.213.0.11]:2222'],
      // An address that is an authorized_keys option, and one in capitals (ssh looks names up in lower case).
      ['cert-authority', 22, 'cert-authority'],
      ['Spark-1.LAB', 22, 'spark-1.lab'],
      ['fe80::1', 22, 'fe80::1'],
    ];
    for (const [host, port, opensshName] of cases) {
      const line = formatKnownHostsLine(host, port, key);
      const [hostField, type, base64, ...rest] = line.split(' ');
      assert.match(hostField ?? '', /^\|1\|[A-Za-z0-9+/]{27}=\|[A-Za-z0-9+/]{27}=$/, line);
      assert.equal(type, keyType);
      assert.equal(base64, key.toString('base64'));
      assert.deepEqual(rest, []);
      assert.ok(!line.toLowerCase().includes(host.toLowerCase()), `the address is not in ${line}`);
      const file = join(dir, `pinned-${host}-${port}`);
      writeFileSync(file, `${line}\n`);
      assert.equal(opensshFinds(file, opensshName), true, `ssh-keygen -F ${opensshName}`);
      assert.equal(opensshFinds(file, 'spark-2'), false);
      const { entries } = parseKnownHosts(`${line}\n`);
      assert.deepEqual(verifyHostKey(entries, host, port, key), { status: 'trusted' }, `${host}:${port}`);
      assert.equal(verifyHostKey(entries, host, port === 22 ? 2222 : 22, key).status, 'unknown');
      assert.deepEqual(knownHostsLineProblems(`${line}\n`), []);
    }
    // Two pins of one host differ (a fresh salt each): the file says nothing about which hosts repeat.
    assert.notEqual(formatKnownHostsLine('10.0.0.1', 22, key), formatKnownHostsLine('10.0.0.1', 22, key));
  });

  it('the schema keeps whitespace, commas and line breaks out of a host address', () => {
    const base = { name: 'spark1' };
    for (const address of ['a b', 'a,b', 'a\nb', 'a\n', 'a\tb', '#a', '@revoked', '|1|x', '[a]:22', ''])
      assert.equal(hostSchema.safeParse({ ...base, address }).success, false, JSON.stringify(address));
    assert.equal(hostSchema.safeParse({ ...base, address: 'cert-authority' }).success, true);
  });
});

describe('which files read as known_hosts', () => {
  it('comments, blank lines, plain, bracketed, hashed and marked lines pass', () => {
    const hashed = formatKnownHostsLine('10.0.0.9', 22, key);
    const text = [
      '# known hosts',
      '',
      `spark-1,10.0.0.1 ${keyType} ${key.toString('base64')}`,
      `[10.0.0.2]:2222,!bad.lab,*.lab,spark-? ${keyType} ${key.toString('base64')} a comment`,
      hashed,
      `@cert-authority *.lab ${keyType} ${key.toString('base64')}`,
      `@revoked * ${keyType} ${key.toString('base64')}`,
      `  fe80::1%eth0 ${keyType} ${key.toString('base64')}`,
      '',
    ].join('\n');
    assert.deepEqual(knownHostsLineProblems(text), []);
  });

  it('refuses authorized_keys lines, with options or without, and anything else unreadable, by line', () => {
    const k = `${keyType} ${key.toString('base64')}`;
    const text = [
      '# ~/.ssh/authorized_keys',
      `cert-authority ${k} ca@corp`,
      `restrict,no-pty ${k}`,
      `from="10.0.0.*",command="/bin/backup" ${k}`,
      `NO-PTY ${k}`,
      otherKeyLine,
      `@certauthority *.lab ${k}`,
      `spark"1 ${k}`,
      `spark-1 ${keyType}`,
    ].join('\n');
    assert.deepEqual(knownHostsLineProblems(text), [
      {
        line: 2,
        reason:
          '"cert-authority" is an authorized_keys option, not a host pattern: this is an authorized_keys line',
      },
      {
        line: 3,
        reason:
          '"restrict" is an authorized_keys option, not a host pattern: this is an authorized_keys line',
      },
      {
        line: 4,
        reason:
          '"from=\\"10.0.0.*\\"" is an authorized_keys option, not a host pattern: this is an authorized_keys line',
      },
      {
        line: 5,
        reason: '"NO-PTY" is an authorized_keys option, not a host pattern: this is an authorized_keys line',
      },
      {
        line: 6,
        reason: 'it starts with the key type "ssh-ed25519": an authorized_keys or .pub line',
      },
      {
        line: 7,
        reason: 'unknown marker "@certauthority" (known_hosts has @cert-authority and @revoked)',
      },
      {
        line: 8,
        reason:
          '"spark\\"1" is not a host pattern (a name or address with * ? and a leading !, or [host]:port)',
      },
      { line: 9, reason: 'expected host patterns, a key type and a base64 key' },
    ]);
  });
});

describe('appendKnownHostsLine', () => {
  it('refuses an authorized_keys file, naming the file and the line, and leaves it byte for byte', async () => {
    const file = join(dir, 'authorized_keys');
    const before = Buffer.from(`# keys\ncert-authority ${otherKeyLine} ca@corp\n`);
    writeFileSync(file, before);
    for (const attempt of [
      () => appendKnownHostsLine(file, 'cert-authority', 22, key),
      () => checkPinTarget(file),
    ]) {
      await assert.rejects(attempt(), (err: unknown) => {
        assert.ok(err instanceof KnownHostsFileError);
        assert.match(err.message, new RegExp(`^${file} does not read as a known_hosts file; nothing`));
        assert.match(err.message, /line 2: "cert-authority" is an authorized_keys option/);
        return true;
      });
      assert.ok(readFileSync(file).equals(before), 'the file is unchanged');
    }
  });

  it('creates a missing file and its folder; keeps a last line without its newline apart', async () => {
    const file = join(dir, 'new', '.ssh', 'known_hosts');
    await checkPinTarget(file);
    const first = await appendKnownHostsLine(file, '10.0.0.1', 22, key);
    assert.equal(readFileSync(file, 'utf8'), `${first}\n`);
    writeFileSync(file, `# no newline at the end`);
    const second = await appendKnownHostsLine(file, '10.0.0.2', 22, key);
    assert.equal(readFileSync(file, 'utf8'), `# no newline at the end\n${second}\n`);
  });

  it('refuses a FIFO or a folder without blocking on it', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    for (const target of [fifo, dir]) {
      await assert.rejects(checkPinTarget(target), /is not a regular file; nothing was written/);
    }
    await assert.rejects(appendKnownHostsLine(fifo, '10.0.0.1', 22, key), /is not a regular file/);
  });
});
