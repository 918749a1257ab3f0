// Issue 26 item 3: the spec's bounds. Hosts and jump chains are checked in linear time with their caps, every
// duration is finite, at least 1 ms once rounded and within its field's range, and texts and lists have caps;
// each error names the field and the fix.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deploySpecSchema, probeSpecSchema } from '../../src/config/schema.js';
import { formatIssues } from '../../src/config/errors.js';
import { refusalOf } from '../helpers/spec-refusal.js';
import { parseDuration } from '../../src/config/duration.js';
import { jumpChainIssues } from '../../src/config/host-rules.js';
import { resolveSshTarget } from '../../src/config/targets.js';
import { manyHosts, referenceSpec as example, type JsonObject } from '../helpers/hostile-specs.js';

// The example's companions name its hosts (spark1, spark2); these tests give it other hosts.
const { companions: _companions, ...referenceSpec } = example;

function issuesOf(mutate: (spec: JsonObject) => void): string {
  const spec = structuredClone(referenceSpec);
  mutate(spec);
  return refusalOf(spec);
}

function section(spec: JsonObject, name: string): JsonObject {
  const node = spec[name];
  assert.ok(node !== null && typeof node === 'object' && !Array.isArray(node));
  return node;
}

describe('spec bounds', () => {
  it('a 10 000-host jump chain is refused naming hosts (it hung before)', () => {
    const issues = issuesOf((s) => (s.hosts = manyHosts(10_000, true)));
    assert.match(issues, /^ {2}hosts: 10000 hosts, more than the 256 a spec may list$/m);
    const probe = probeSpecSchema.safeParse({ ...referenceSpec, hosts: manyHosts(10_000, true) });
    assert.equal(probe.success, false, 'the probe spec has the cap too');
  });

  it('the probe spec (probe, trust) follows the same jump-chain rules, and still needs no head', () => {
    const workers = (n: number) => manyHosts(n, true).map((h) => ({ ...(h as JsonObject), role: 'worker' }));
    assert.ok(probeSpecSchema.safeParse({ ...referenceSpec, hosts: workers(5) }).success);
    const r = probeSpecSchema.safeParse({ ...referenceSpec, hosts: workers(6) });
    assert.match(
      r.success ? '' : formatIssues(r.error),
      /hosts\[5\]\.jumpHost: h5 is reached through more than 4/,
    );
  });

  it('the jump chain check is linear: 256 hosts in a 255-hop chain cost one short walk each', () => {
    const hosts = manyHosts(256, true) as { name: string; jumpHost?: string }[];
    const issues = jumpChainIssues(hosts);
    assert.equal(issues.length, 251, 'every host past the 4th hop');
    assert.deepEqual(issues[0]?.path, ['hosts', 5, 'jumpHost']);
    assert.match(
      issues[0]?.message ?? '',
      /^h5 is reached through more than 4 jump hosts \(h4 -> h3 -> h2 -> h1 -> h0\); .*Set h5's jumpHost to a host reached through at most 3 jump hosts, or reach it directly$/,
    );
    assert.match(issues[250]?.message ?? '', /\(h254 -> h253 -> h252 -> h251 -> h250 -> …\)/);
  });

  it('4 jump hosts pass, 5 are refused at hosts[5].jumpHost; a loop is named as before', () => {
    assert.ok(deploySpecSchema.safeParse({ ...referenceSpec, hosts: manyHosts(5, true) }).success);
    assert.match(
      issuesOf((s) => (s.hosts = manyHosts(6, true))),
      /^ {2}hosts\[5\]\.jumpHost: h5 is reached through more than 4 jump hosts/m,
    );
    const loop = manyHosts(3, true) as JsonObject[];
    (loop[0] as JsonObject).jumpHost = 'h2';
    assert.match(
      issuesOf((s) => (s.hosts = loop)),
      /hosts\[0\]\.jumpHost: jump hosts form a loop: h0 -> h2 -> h1 -> h0/,
    );
  });

  it('resolveSshTarget follows a chain with a map and stops at a loop or past the depth', () => {
    const ssh = { user: 'root', port: 22, useAgent: false, knownHostsPath: '~/.ssh/known_hosts' };
    const hosts = manyHosts(5, true).map((h) => ({ role: 'worker' as const, ...(h as object) })) as never[];
    const target = resolveSshTarget(hosts, ssh, 'h4');
    assert.deepEqual(
      [
        target.name,
        target.jump?.name,
        target.jump?.jump?.jump?.jump?.name,
        target.jump?.jump?.jump?.jump?.jump,
      ],
      ['h4', 'h3', 'h0', undefined],
    );
    const deep = manyHosts(7, true).map((h) => ({ role: 'worker' as const, ...(h as object) })) as never[];
    assert.throws(() => resolveSshTarget(deep, ssh, 'h6'), /h6 is reached through more than 4 jump hosts/);
  });

  it('durations: finite, at least 1 ms once rounded, within their field', () => {
    assert.equal(parseDuration(`${'9'.repeat(310)}h`), undefined, 'was Infinity');
    assert.equal(parseDuration('0.1ms'), undefined, 'was 0');
    assert.equal(parseDuration('0.5ms'), 1);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    const cases: [string, (s: JsonObject) => void, RegExp][] = [
      [
        '310 digits',
        (s) => (section(s, 'serve').loadTimeout = `${'9'.repeat(310)}h`),
        /serve\.loadTimeout: "9{64}"… \(311 characters\) is not a duration: longer than 32 characters \(expected e\.g\. "25m"\)/,
      ],
      [
        '0ms',
        (s) => (section(s, 'gpu').clearTimeout = '0ms'),
        /gpu\.clearTimeout: "0ms" is not a duration: 0 ms once rounded/,
      ],
      [
        '0.1ms',
        (s) => (section(s, 'ray').verifyTimeout = '0.1ms'),
        /ray\.verifyTimeout: "0\.1ms" is not a duration: 0 ms once rounded/,
      ],
      [
        'a poll every 500 ms',
        (s) => (section(s, 'serve').pollInterval = '500ms'),
        /serve\.pollInterval: "500ms" is shorter than 1\.0s; use e\.g\. "10s"/,
      ],
      [
        '8 days',
        (s) => (section(s, 'serve').hostUnreachableTimeout = '192h'),
        /serve\.hostUnreachableTimeout: "192h" is longer than 168h \(7 days\), the most this field allows; use e\.g\. "2m"/,
      ],
      [
        'backoff past the window',
        (s) => (s.supervise = { window: '10m', backoff: '1h' }),
        /supervise\.backoff: 1h is longer than supervise\.window 10m: .*lower backoff or raise window/,
      ],
      [
        'a daily probe round and more',
        (s) => (s.supervise = { interval: '25h' }),
        /supervise\.interval: "25h" is longer than 24h/,
      ],
      [
        'a skew of 2 hours',
        (s) => (s.preflight = { maxClockSkew: '2h' }),
        /preflight\.maxClockSkew: "2h" is longer than 60m/,
      ],
    ];
    for (const [label, mutate, expected] of cases) assert.match(issuesOf(mutate), expected, label);
    const week = structuredClone(referenceSpec);
    section(week, 'serve').loadTimeout = '168h';
    assert.ok(deploySpecSchema.safeParse(week).success, 'a week is allowed');
  });

  it('texts and lists have caps, checked before their patterns, and quoted by their start only', () => {
    const cases: [string, (s: JsonObject) => void, RegExp][] = [
      [
        'a 513-character model',
        (s) => (section(s, 'serve').model = `Org/${'m'.repeat(509)}`),
        /serve\.model: "Org\/m{60}"… \(513 characters\) is longer than 512 characters/,
      ],
      [
        'a megabyte of address',
        (s) => ((s.hosts as JsonObject[])[0]!.address = 'a'.repeat(1_000_000)),
        /hosts\[0\]\.address: "a{64}"… \(1000000 characters\) is longer than 253 characters/,
      ],
      [
        '257 args',
        (s) => (section(s, 'serve').args = Array<string>(257).fill('-x')),
        /serve\.args: 257 args, more/,
      ],
      [
        '96 KB of args',
        (s) => (section(s, 'serve').args = ['a', 'b', 'c'].map((c) => c.repeat(32_000))),
        /serve\.args: 96003 bytes on the command line, more than the 65536 \(64 KiB\)/,
      ],
      [
        '257 env entries',
        (s) => {
          const env = section(section(s, 'ray'), 'env');
          for (let i = 0; i < 257; i++) env[`V${i}`] = '1';
        },
        /ray\.env: 260 variables, more than the 256 an env may hold/,
      ],
      [
        'a 100 KB env value',
        (s) => (section(section(s, 'serve'), 'env').BIG = 'v'.repeat(100_000)),
        /serve\.env: 100\d{3} bytes as NAME=value lines, more than the 65536/,
      ],
      [
        '65 volumes',
        (s) => (section(s, 'ray').volumes = Array<string>(65).fill('/a:/b')),
        /ray\.volumes: 65 volumes/,
      ],
      [
        'a 5 KB log path',
        (s) => (section(s, 'serve').logPath = `/${'p'.repeat(5000)}`),
        /serve\.logPath: .* is longer than 4096 characters/,
      ],
    ];
    for (const [label, mutate, expected] of cases) assert.match(issuesOf(mutate), expected, label);
  });
});
