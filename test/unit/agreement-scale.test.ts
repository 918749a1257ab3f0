// The weights checks at scale: 50 000 files and shard names per host (more than any real model; a hostile host can
// print as many) are compared in linear work. What is counted is work, not time: every search of a long list
// (includes, indexOf, find, …) made while the check runs; one such search per file is the quadratic scan that
// took 45 s for the comparison and 150 s for the index parse at this size. The time is printed, never asserted.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseIndexes, type HostFacts, type WeightEntry } from '../../src/parsers/agreement-facts.js';
import { compareHosts } from '../../src/preflight/agreement.js';
import { sparkExpectations } from '../helpers/agreement-expectations.js';

const files = 50_000;
const snap = './snapshots/6f1c';
const shard = (i: number): string => `model-${String(i + 1).padStart(5, '0')}-of-${files}.safetensors`;

const searches = ['includes', 'indexOf', 'lastIndexOf', 'find', 'findIndex', 'findLast', 'some'] as const;

/**
 * Runs `fn`, counting the calls of the array search methods on arrays longer than `longerThan` meanwhile. A few
 * are one pass each; one per item is a scan inside a loop.
 */
function countingLongSearches<T>(fn: () => T, longerThan = 1000): { value: T; searches: number } {
  const originals = new Map<string, unknown>(searches.map((m) => [m, Reflect.get(Array.prototype, m)]));
  let count = 0;
  for (const [name, original] of originals) {
    const call = original as (this: unknown[], ...args: unknown[]) => unknown;
    Object.defineProperty(Array.prototype, name, {
      configurable: true,
      writable: true,
      value(this: unknown[], ...args: unknown[]) {
        if (this.length > longerThan) count += 1;
        return call.apply(this, args);
      },
    });
  }
  try {
    const value = fn();
    return { value, searches: count };
  } finally {
    for (const [name, original] of originals)
      Object.defineProperty(Array.prototype, name, { configurable: true, writable: true, value: original });
  }
}

function hostFacts(host: string, ip: string, entries: WeightEntry[]): HostFacts {
  return {
    host,
    clockOffsetMs: 0,
    imageId: `sha256:${'a'.repeat(64)}`,
    addresses: [{ iface: 'enp1s0f1np1', address: ip, prefix: 24 }],
    mtus: { enp1s0f1np1: 1500 },
    weights: { entries, truncated: false },
    indexes: [
      {
        file: `${snap}/model.safetensors.index.json`,
        shards: Array.from({ length: files }, (_, i) => shard(i)),
      },
    ],
    logind: { answers: true, removeIpc: false, uid: 0, user: 'root', linger: false },
  };
}

const expectations = sparkExpectations(3);

describe('agreement: the weights checks at 50 000 files per host', () => {
  it('compares the hosts in linear work, with the verdict of the quadratic version', () => {
    const reference: WeightEntry[] = [
      { kind: 'file', bytes: 700, path: `${snap}/README.md` },
      ...Array.from({ length: files }, (_, i) => ({
        kind: 'file' as const,
        bytes: 1000 + (i % 7),
        path: `${snap}/${shard(i)}`,
      })),
    ];
    // spark2: one shard of another size, README.md missing, one file only there.
    const second = reference
      .filter((e) => !e.path.endsWith('README.md'))
      .map((e) => (e.path.endsWith(shard(41_000)) ? { ...e, bytes: 1 } : e));
    second.push({ kind: 'file', bytes: 5, path: './extra.bin' });
    // spark3: every other shard a broken link (an interrupted download).
    const third = reference.map((e, i) => (i % 2 === 1 ? { ...e, kind: 'broken' as const } : e));
    const hosts = [
      hostFacts('spark1', '10.0.2.11', reference),
      hostFacts('spark2', '10.0.2.12', second),
      hostFacts('spark3', '10.0.2.13', third),
    ];

    const started = performance.now();
    const { value: verdict, searches: long } = countingLongSearches(() => compareHosts(expectations, hosts));
    const ms = performance.now() - started;
    process.stdout.write(`# compareHosts, 3 hosts × ${files} files: ${ms.toFixed(0)} ms\n`);

    // What the version that scanned gave for this input (its figure: 45 s at 2 hosts).
    assert.equal(verdict.ok, false);
    assert.deepEqual(
      verdict.problems.map((p) => [p.check, p.hosts]),
      [
        ['weights', ['spark3']],
        ['weights', ['spark2']],
      ],
    );
    const firstBroken = [0, 2, 4, 6, 8].map((i) => `${snap}/${shard(i)}`).join(', ');
    assert.equal(
      verdict.problems[0]?.detail,
      `broken symbolic link(s) in /m: ${firstBroken} and 24995 more (their blobs are missing: an interrupted download): download the weights again (huggingface-cli download ORG/NAME)`,
    );
    assert.equal(
      verdict.problems[1]?.detail,
      `the weights in /m on spark2 are not those on spark1: missing on spark2: ${snap}/README.md; only on spark2: ./extra.bin; sizes differ: ${snap}/${shard(41_000)} ${1000 + (41_000 % 7)} B on spark1, 1 B on spark2. Download the same revision on every host (huggingface-cli download ORG/NAME --revision …)`,
    );
    assert.ok(long <= 10, `${long} searches of a list of over 1000 entries: a scan per file`);
  });

  it('parses an index of 50 000 shard names, each printed twice, in linear work', () => {
    const lines = [
      `file ${snap}/model.safetensors.index.json`,
      '"total_size": 123456789',
      ...Array.from({ length: 2 * files }, (_, i) => `"${shard(i % files)}"`),
    ];
    const started = performance.now();
    const { value: indexes, searches: long } = countingLongSearches(() => parseIndexes(lines));
    process.stdout.write(
      `# parseIndexes, ${lines.length} lines: ${(performance.now() - started).toFixed(0)} ms\n`,
    );
    assert.equal(indexes.length, 1);
    assert.equal(indexes[0]?.totalSize, 123456789);
    assert.equal(indexes[0]?.shards.length, files, 'each shard once');
    assert.deepEqual(indexes[0]?.shards.slice(0, 2), [shard(0), shard(1)]);
    assert.ok(long <= 10, `${long} searches of a list of over 1000 entries: a scan per line`);
  });
});
