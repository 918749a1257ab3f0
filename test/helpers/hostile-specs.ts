// The hostile-spec corpus (issue 26): specs built to stall, exhaust or crash whatever validates them. Each entry
// says what `-c FILE` holds and what must become of it: refused with exit 2 naming `field` (or, without a field,
// naming the file), or accepted because it is harmless (with the reason). test/e2e/hostile-specs.test.ts runs
// every entry through the real CLI, and the spec entries through the deploy workflow as the Temporal UI starts
// it. To add a case, add one entry to `hostileCases`.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** What `-c FILE` is. */
export type HostileFile =
  /** The reference spec with a change, written as JSON (which is YAML). */
  | { spec: (spec: JsonObject) => void }
  /** The reference spec's YAML text, changed as text (aliases, bytes no JSON can hold). */
  | { text: (yaml: string) => string | Buffer }
  /** A path that is no regular file. */
  | { special: 'fifo' | 'directory' | 'socket' | 'device' };

export type HostileExpectation =
  /** Refused with exit 2; the error names this field (formatPath syntax), or the file when it is undefined. */
  { refused: true; field?: string } | { harmless: string };

export interface HostileCase {
  label: string;
  file: HostileFile;
  expect: HostileExpectation;
}

export const referenceSpecPath = 'examples/spark-qwen35.yaml';
export const referenceYaml = readFileSync(referenceSpecPath, 'utf8');
export const referenceSpec = parse(referenceYaml) as JsonObject;

function obj(spec: JsonObject, ...path: string[]): JsonObject {
  let node: Json = spec;
  for (const key of path) {
    if (node === null || typeof node !== 'object') throw new Error(path.join('.'));
    node = (Array.isArray(node) ? node[Number(key)] : node[key]) ?? null;
  }
  if (node === null || typeof node !== 'object' || Array.isArray(node)) throw new Error(path.join('.'));
  return node;
}

/** `n` hosts, each (but the first, the head) reached through the one before it when `chained`. */
export function manyHosts(n: number, chained: boolean): Json[] {
  return Array.from({ length: n }, (_, i) => {
    const octets = `${(i >> 8) & 255}.${i & 255}`;
    return {
      name: `h${i}`,
      address: `10.20.${octets}`,
      clusterIp: `10.30.${octets}`,
      ...(i === 0 ? { role: 'head' } : {}),
      ...(chained && i > 0 ? { jumpHost: `h${i - 1}` } : {}),
    };
  });
}

const set =
  (section: string, field: string, value: Json) =>
  (s: JsonObject): void => {
    obj(s, section)[field] = value;
  };

/** The reference spec with `n` hosts, as manyHosts makes them. */
const withHosts = (n: number, chained: boolean): HostileFile => ({
  spec: (s) => {
    s.hosts = manyHosts(n, chained);
    // Its companions name the example's hosts, which these replace.
    delete s.companions;
  },
});

/** The reference spec with `section.field` set to `value`, refused naming that field. */
const refusedValue = (label: string, section: string, field: string, value: Json): HostileCase => ({
  label,
  file: { spec: set(section, field, value) },
  expect: { refused: true, field: `${section}.${field}` },
});

const mib = 1024 * 1024;

export const hostileCases: HostileCase[] = [
  // hosts and jump chains
  { label: '257 hosts', file: withHosts(257, false), expect: { refused: true, field: 'hosts' } },
  {
    label: 'a 2 000-host jump chain',
    file: withHosts(2000, true),
    expect: { refused: true, field: 'hosts' },
  },
  {
    label: 'a 10 000-host jump chain',
    file: withHosts(10_000, true),
    expect: { refused: true, field: 'hosts' },
  },
  {
    label: 'a 5-deep jump chain',
    file: withHosts(6, true),
    expect: { refused: true, field: 'hosts[5].jumpHost' },
  },
  {
    label: 'a 4-deep jump chain (the most allowed)',
    file: withHosts(5, true),
    expect: { harmless: 'four jump hosts is the cap: each host is one more SSH connection, no more' },
  },
  {
    label: 'a jump loop of 200 hosts',
    file: {
      spec: (s) => {
        const hosts = manyHosts(200, true);
        const first = hosts[0] as JsonObject;
        first.jumpHost = 'h199';
        s.hosts = hosts;
      },
    },
    expect: { refused: true, field: 'hosts[0].jumpHost' },
  },
  // durations
  refusedValue('a 310-digit duration', 'serve', 'loadTimeout', `${'9'.repeat(310)}h`),
  refusedValue('a 31-character duration (10^29 hours)', 'serve', 'stallTimeout', `1${'0'.repeat(29)}h`),
  refusedValue('a 0ms duration', 'gpu', 'clearTimeout', '0ms'),
  refusedValue('a 0.1ms duration (0 once rounded)', 'ray', 'verifyTimeout', '0.1ms'),
  refusedValue('serve.pollInterval 500ms', 'serve', 'pollInterval', '500ms'),
  refusedValue('a timeout of 8 days', 'serve', 'loadTimeout', '192h'),
  {
    label: 'a timeout of 7 days (the most allowed)',
    file: { spec: set('serve', 'loadTimeout', '168h') },
    expect: { harmless: 'a week bounds the load; Node timers and Temporal timers both take it' },
  },
  {
    label: 'supervise.backoff longer than supervise.window',
    file: { spec: (s) => (s.supervise = { window: '10m', backoff: '1h' }) },
    expect: { refused: true, field: 'supervise.backoff' },
  },
  {
    label: 'supervise.interval of 25 hours',
    file: { spec: (s) => (s.supervise = { interval: '25h' }) },
    expect: { refused: true, field: 'supervise.interval' },
  },
  {
    label: 'preflight.maxClockSkew of 2 hours',
    file: { spec: (s) => (s.preflight = { maxClockSkew: '2h' }) },
    expect: { refused: true, field: 'preflight.maxClockSkew' },
  },
  // texts and lists
  refusedValue('a 513-character model', 'serve', 'model', `Org/${'m'.repeat(509)}`),
  {
    label: 'a 512-character model (the most allowed)',
    file: { spec: set('serve', 'model', `Org/${'m'.repeat(508)}`) },
    expect: { harmless: 'within the cap; a model id is one quoted argument' },
  },
  refusedValue('a 900 KB served model name', 'serve', 'servedModelName', 'n'.repeat(900_000)),
  {
    label: 'a 100 KB cluster name',
    file: { spec: (s) => (s.cluster = 'c'.repeat(100_000)) },
    expect: { refused: true, field: 'cluster' },
  },
  {
    label: 'a 100 KB host address',
    file: { spec: (s) => (obj(s, 'hosts', '0').address = 'a'.repeat(100_000)) },
    expect: { refused: true, field: 'hosts[0].address' },
  },
  refusedValue('a 500 KB image', 'ray', 'image', 'i'.repeat(500_000)),
  {
    label: 'a 100 KB cluster IP',
    file: { spec: (s) => (obj(s, 'hosts', '1').clusterIp = '1'.repeat(100_000)) },
    expect: { refused: true, field: 'hosts[1].clusterIp' },
  },
  refusedValue('a 10 KB log path', 'serve', 'logPath', `/${'p'.repeat(10_000)}`),
  {
    label: 'a 100 KB serve arg',
    file: { spec: set('serve', 'args', ['--chat-template', 't'.repeat(100_000)]) },
    expect: { refused: true, field: 'serve.args[1]' },
  },
  refusedValue(
    'serve.args of 96 KB in three args',
    'serve',
    'args',
    ['a', 'b', 'c'].map((c) => c.repeat(32_000)),
  ),
  refusedValue(
    '257 serve args',
    'serve',
    'args',
    Array.from({ length: 257 }, () => '--enforce-eager'),
  ),
  {
    label: 'a 100 KB env value',
    file: { spec: (s) => (obj(s, 'serve', 'env').BIG = 'v'.repeat(100_000)) },
    expect: { refused: true, field: 'serve.env' },
  },
  {
    label: '257 env entries',
    file: {
      spec: (s) => {
        const env = obj(s, 'ray', 'env');
        for (let i = 0; i < 257; i++) env[`V${i}`] = '1';
      },
    },
    expect: { refused: true, field: 'ray.env' },
  },
  refusedValue(
    '65 volumes',
    'ray',
    'volumes',
    Array.from({ length: 65 }, (_, i) => `/data/${i}:/data/${i}:ro`),
  ),
  refusedValue(
    '65 cleanup units',
    'cleanup',
    'services',
    Array.from({ length: 65 }, (_, i) => `u${i}.service`),
  ),
  refusedValue('a 100 KB smoke prompt', 'smoke', 'prompt', 'p'.repeat(100_000)),
  {
    label: 'an infinite free-disk minimum (YAML .inf)',
    file: { text: (y) => `${y}preflight:\n  minFreeDiskGiB: .inf\n` },
    expect: { refused: true, field: 'preflight.minFreeDiskGiB' },
  },
  {
    label: 'a free-disk minimum of 1e308 GiB',
    file: { spec: (s) => (s.preflight = { minFreeDiskGiB: 1e308 }) },
    expect: { harmless: "a number compared with df's free space; preflight then refuses every host" },
  },
  // the file and its YAML
  { label: 'a FIFO as -c', file: { special: 'fifo' }, expect: { refused: true } },
  { label: '/dev/zero as -c', file: { special: 'device' }, expect: { refused: true } },
  { label: 'a directory as -c', file: { special: 'directory' }, expect: { refused: true } },
  { label: 'a socket as -c', file: { special: 'socket' }, expect: { refused: true } },
  {
    label: 'a 10 MB file',
    file: { text: (y) => `${y}# ${'x'.repeat(10 * mib)}\n` },
    expect: { refused: true },
  },
  {
    label: 'a circular alias (a: &x [*x])',
    file: { text: (y) => y.replace(/^ {2}args: .*$/m, '  args: &x [*x]') },
    expect: { refused: true, field: 'serve.args[0]' },
  },
  {
    label: 'a circular alias in a Ray field of a multiproc spec (exit 1 before)',
    file: {
      text: (y) =>
        y
          .replace(/^ {2}port: 6379$/m, '  port: &p [*p]')
          .replace(/^ {2}port: 30000$/m, '  port: 30000\n  backend: multiproc\n  masterPort: 29501'),
    },
    expect: { refused: true, field: 'ray.port[0]' },
  },
  {
    label: 'a billion-laughs YAML',
    file: {
      text: (y) => {
        const names = 'abcdefghij'.split('');
        const lines = [`a: &a [${Array(10).fill('"lol"').join(',')}]`];
        for (let i = 1; i < names.length; i++)
          lines.push(
            `${names[i]}: &${names[i]} [${Array(10)
              .fill(`*${names[i - 1]}`)
              .join(',')}]`,
          );
        return `${y}x-laughs:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
      },
    },
    expect: { refused: true },
  },
  {
    label: '100 000 nested [',
    file: { text: (y) => `${y}x: ${'['.repeat(100_000)}\n` },
    expect: { refused: true },
  },
  {
    label: '1 MiB less a byte of nested [',
    file: { text: () => '['.repeat(mib - 1) },
    expect: { refused: true },
  },
  {
    label: 'block sequences nested 400 000 deep on one line',
    file: { text: () => `${'- '.repeat(400_000)}x\n` },
    expect: { refused: true },
  },
  {
    label: 'a flow map of 90 000 keys (260 s in the yaml library before)',
    file: {
      text: (y) => `${y}x-keys: {${Array.from({ length: 90_000 }, (_, i) => `k${i}: 1`).join(',')}}\n`,
    },
    expect: { refused: true, field: 'x-keys' },
  },
  {
    label: 'one flow sequence of 500 000 items',
    file: { text: (y) => `${y}x-items: [${Array(500_000).fill('1').join(',')}]\n` },
    expect: { refused: true, field: 'x-items' },
  },
  {
    label: '32 flow sequences of 1 000 items (32 000 values)',
    file: {
      text: (y) =>
        `${y}x-lists: [${Array(32)
          .fill(`[${Array(1000).fill('1').join(',')}]`)
          .join(',')}]\n`,
    },
    expect: { refused: true },
  },
  {
    label: 'a megabyte of empty lines',
    file: { text: (y) => `${y}${'\n'.repeat(mib - y.length - 1)}` },
    expect: { refused: true },
  },
  {
    label: 'a NUL byte in the file',
    file: { text: (y) => y.replace('ready?', 'ready\0?') },
    expect: { refused: true },
  },
  {
    label: 'a NUL escape in a serve arg',
    file: { text: (y) => y.replace("'0.85'", '"0.85\\0"') },
    expect: { refused: true, field: 'serve.args[1]' },
  },
  {
    label: 'a NUL escape in the smoke prompt',
    file: { text: (y) => y.replace("'Reply with one word: ready?'", '"ready\\0?"') },
    expect: { harmless: 'the prompt only travels inside a JSON request body, where a NUL is an escape' },
  },
  {
    label: 'invalid UTF-8',
    file: { text: (y) => Buffer.concat([Buffer.from(y), Buffer.from([0x23, 0xff, 0xfe, 0x0a])]) },
    expect: { refused: true },
  },
  // the other findings of issue 26 that a spec alone can carry (the CLI validates with this machine's default
  // worker policy, which lists no webhook origin and only ~/.ssh/known_hosts)
  {
    label: '11 webhooks',
    file: {
      spec: (s) =>
        (s.notify = {
          webhooks: Array.from({ length: 11 }, (_, i) => ({ url: `https://hooks.example.com/h${i}` })),
        }),
    },
    expect: { refused: true, field: 'notify.webhooks' },
  },
  {
    label: 'a literal Slack webhook URL (a token in its path)',
    file: {
      spec: (s) =>
        (s.notify = {
          webhooks: [{ url: 'https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX' }],
        }),
    },
    expect: { refused: true, field: 'notify.webhooks[0].url' },
  },
  {
    label: 'a webhook at the cloud metadata address',
    file: { spec: (s) => (s.notify = { webhooks: [{ url: 'http://169.254.169.254/latest/meta-data/' }] }) },
    expect: { refused: true, field: 'notify.webhooks[0].url' },
  },
  {
    label: 'a webhook at a loopback port of the worker',
    file: { spec: (s) => (s.notify = { webhooks: [{ url: 'https://127.0.0.1:7233/' }] }) },
    expect: { refused: true, field: 'notify.webhooks[0].url' },
  },
  refusedValue(
    'ssh.knownHostsPath at ~/.ssh/authorized_keys',
    'ssh',
    'knownHostsPath',
    '~/.ssh/authorized_keys',
  ),
  {
    label: 'a multiproc spec whose serve.args move the master address',
    file: {
      spec: (s) => {
        obj(s, 'serve').backend = 'multiproc';
        obj(s, 'serve').args = ['--master-addr=203.0.113.9'];
      },
    },
    expect: { refused: true, field: 'serve.args[0]' },
  },
  {
    label: 'a multiproc spec whose serve.args change the node rank (flag and value apart)',
    file: {
      spec: (s) => {
        obj(s, 'serve').backend = 'multiproc';
        obj(s, 'serve').args = ['--gpu-memory-utilization', '0.8', '--node-rank', '0'];
      },
    },
    expect: { refused: true, field: 'serve.args[2]' },
  },
];
