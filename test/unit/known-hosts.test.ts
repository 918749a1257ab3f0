import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  blobKeyType,
  entryMatchesHost,
  knownHostsName,
  knownKeyTypes,
  loadKnownHosts,
  parseKnownHosts,
  sshFingerprint,
  verifyHostKey,
  type KnownHostEntry,
} from '../../src/ssh/known-hosts.js';

interface Key {
  type: string;
  blob: Buffer;
  /** `SHA256:…` as ssh-keygen -l prints it. */
  fingerprint: string;
}

let dir = '';
const keys: Record<'ed25519' | 'ecdsa' | 'rsa' | 'other', Key> = {} as never;

function makeKey(name: keyof typeof keys, type: string, bits?: string): void {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', bits] : []), '-N', '', '-f', path]);
  const [keyType, base64] = readFileSync(`${path}.pub`, 'utf8').trim().split(' ');
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${path}.pub`], {
    encoding: 'utf8',
  }).split(' ')[1];
  assert.ok(keyType && base64 && fingerprint);
  keys[name] = { type: keyType, blob: Buffer.from(base64, 'base64'), fingerprint };
}

const line = (hosts: string, key: Key, marker = '') =>
  `${marker ? `${marker} ` : ''}${hosts} ${key.type} ${key.blob.toString('base64')} comment here`;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'liftoff-known-hosts-'));
  makeKey('ed25519', 'ed25519');
  makeKey('ecdsa', 'ecdsa', '256');
  makeKey('rsa', 'rsa', '2048');
  makeKey('other', 'ed25519');
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('key blobs', () => {
  it('fingerprints exactly as ssh-keygen -l does, for every key type', () => {
    for (const key of Object.values(keys)) {
      assert.equal(sshFingerprint(key.blob), key.fingerprint);
      assert.equal(blobKeyType(key.blob), key.type);
    }
  });
});

describe('parseKnownHosts', () => {
  it('reads plain, [host]:port, comma lists, markers, and skips comments and broken lines', () => {
    const text = [
      '# a comment',
      '',
      line('spark-1,10.213.0.11', keys.ed25519),
      line('[10.213.0.12]:2222', keys.ecdsa),
      line('*.lab,!bad.lab', keys.rsa, '@cert-authority'),
      line('spark-9', keys.other, '@revoked'),
      'spark-2 ssh-ed25519 bm90IGEga2V5', // blob does not start with its type
      `spark-3 ssh-rsa ${keys.ed25519.blob.toString('base64')}`, // type field disagrees with the blob
      '@unknown-marker spark-4 ssh-ed25519 AAAA',
      'only-two-fields ssh-ed25519',
    ].join('\n');
    const { entries, invalidLines } = parseKnownHosts(text);
    assert.deepEqual(
      invalidLines.map((l) => [l.line, l.reason]),
      [
        [7, 'field 3 is not a base64 "ssh-ed25519" key'],
        [8, 'field 3 is not a base64 "ssh-rsa" key'],
        [9, 'unknown marker "@unknown-marker" (known_hosts has @cert-authority and @revoked)'],
        [10, 'expected host patterns, a key type and a base64 key'],
      ],
    );
    assert.deepEqual(
      entries.map((e) => [
        e.line,
        e.marker,
        e.names.kind === 'patterns' ? e.names.patterns : 'hashed',
        e.keyType,
      ]),
      [
        [3, undefined, ['spark-1', '10.213.0.11'], 'ssh-ed25519'],
        [4, undefined, ['[10.213.0.12]:2222'], 'ecdsa-sha2-nistp256'],
        [5, 'cert-authority', ['*.lab', '!bad.lab'], 'ssh-rsa'],
        [6, 'revoked', ['spark-9'], 'ssh-ed25519'],
      ],
    );
    assert.ok(entries[0]?.key.equals(keys.ed25519.blob));
  });
});

/** Asserts, for each `[host, port, matches]`, whether `entry` matches that host and port. */
function assertMatches(entry: KnownHostEntry, cases: [host: string, port: number, matches: boolean][]): void {
  for (const [host, port, matches] of cases)
    assert.equal(entryMatchesHost(entry, host, port), matches, `${host}:${port}`);
}

describe('host matching', () => {
  it('uses [host]:port for ports other than 22', () => {
    assert.equal(knownHostsName('10.0.0.1', 22), '10.0.0.1');
    assert.equal(knownHostsName('10.0.0.1', 2222), '[10.0.0.1]:2222');
    const { entries } = parseKnownHosts(
      [line('10.0.0.1', keys.ed25519), line('[10.0.0.2]:2222', keys.ed25519)].join('\n'),
    );
    const [plain, bracketed] = entries;
    assert.ok(plain && bracketed);
    assertMatches(plain, [
      ['10.0.0.1', 22, true],
      ['10.0.0.1', 2222, false],
    ]);
    assertMatches(bracketed, [
      ['10.0.0.2', 2222, true],
      ['10.0.0.2', 22, false],
    ]);
  });

  it('honours wildcards, negation and case-insensitive names', () => {
    const [entry] = parseKnownHosts(line('spark-?.lab,*.cluster,!spark-9.lab', keys.ed25519)).entries;
    assert.ok(entry);
    assertMatches(entry, [
      ['spark-1.lab', 22, true],
      ['SPARK-2.LAB', 22, true],
      ['a.b.cluster', 22, true],
      ['spark-9.lab', 22, false],
      ['spark-10.lab', 22, false],
      ['sparkx1.lab', 22, false],
    ]);
  });

  it('matches entries hashed by ssh-keygen -H, with and without a port', () => {
    const file = join(dir, 'hashed_known_hosts');
    writeFileSync(
      file,
      [line('spark-1', keys.ed25519), line('[10.213.0.12]:2222', keys.ecdsa)].join('\n') + '\n',
    );
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
    const { entries } = parseKnownHosts(readFileSync(file, 'utf8'));
    assert.equal(entries.length, 2);
    assert.ok(entries.every((e) => e.names.kind === 'hashed'));
    const [first, second] = entries;
    assert.ok(first && second);
    assertMatches(first, [
      ['spark-1', 22, true],
      // ssh lowercases the name before it hashes it (ssh -G SPARK-1 prints hostname spark-1).
      ['SPARK-1', 22, true],
      ['spark-2', 22, false],
      ['spark-1', 2222, false],
    ]);
    assertMatches(second, [
      ['10.213.0.12', 2222, true],
      ['10.213.0.12', 22, false],
    ]);
  });
});

describe('verifyHostKey', () => {
  const text = () =>
    [
      line('spark-1', keys.ed25519),
      line('spark-1', keys.rsa),
      line('[spark-2]:2222', keys.ecdsa),
      line('*', keys.other, '@cert-authority'),
      line('spark-3', keys.other, '@revoked'),
      line('spark-3', keys.other),
    ].join('\n');

  it('trusts a recorded key of any of the recorded types', () => {
    const { entries } = parseKnownHosts(text());
    assert.deepEqual(verifyHostKey(entries, 'spark-1', 22, keys.ed25519.blob), { status: 'trusted' });
    assert.deepEqual(verifyHostKey(entries, 'spark-1', 22, keys.rsa.blob), { status: 'trusted' });
    assert.deepEqual(verifyHostKey(entries, 'spark-2', 2222, keys.ecdsa.blob), { status: 'trusted' });
  });

  it('calls a host with no entries unknown, with the offered fingerprint (a CA line does not count)', () => {
    const { entries } = parseKnownHosts(text());
    assert.deepEqual(verifyHostKey(entries, 'spark-4', 22, keys.ed25519.blob), {
      status: 'unknown',
      keyType: 'ssh-ed25519',
      fingerprint: keys.ed25519.fingerprint,
    });
    // Known on another port only: still unknown on this one.
    assert.equal(verifyHostKey(entries, 'spark-2', 22, keys.ecdsa.blob).status, 'unknown');
  });

  it('calls a different key a mismatch, listing what was expected', () => {
    const { entries } = parseKnownHosts(text());
    assert.deepEqual(verifyHostKey(entries, 'spark-1', 22, keys.ecdsa.blob), {
      status: 'mismatch',
      keyType: 'ecdsa-sha2-nistp256',
      fingerprint: keys.ecdsa.fingerprint,
      expected: [
        { keyType: 'ssh-ed25519', fingerprint: keys.ed25519.fingerprint, line: 1 },
        { keyType: 'ssh-rsa', fingerprint: keys.rsa.fingerprint, line: 2 },
      ],
    });
  });

  it('refuses a revoked key even where it is also listed as trusted', () => {
    const { entries } = parseKnownHosts(text());
    assert.equal(verifyHostKey(entries, 'spark-3', 22, keys.other.blob).status, 'revoked');
    assert.equal(verifyHostKey(entries, 'anything', 22, keys.other.blob).status, 'revoked');
  });

  it('lists the key types known for a host, for algorithm ordering', () => {
    const { entries } = parseKnownHosts(text());
    assert.deepEqual(knownKeyTypes(entries, 'spark-1', 22), ['ssh-ed25519', 'ssh-rsa']);
    assert.deepEqual(knownKeyTypes(entries, 'spark-2', 2222), ['ecdsa-sha2-nistp256']);
    assert.deepEqual(knownKeyTypes(entries, 'nobody', 22), []);
  });
});

describe('files', () => {
  it('a missing known_hosts file is empty, not an error', async () => {
    assert.deepEqual(await loadKnownHosts(join(dir, 'does-not-exist')), { entries: [], invalidLines: [] });
  });
});
