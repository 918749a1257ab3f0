// A host's identity out of its agreement facts (src/preflight/host-identity.ts): what a revision records.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { HostFacts } from '../../src/parsers/agreement-facts.js';
import { hostIdentityOf, snapshotOf } from '../../src/preflight/host-identity.js';

const commit = 'a1b2c3d4e5'.repeat(4);
const other = 'f0e1d2c3b4'.repeat(4);
const sha = '9e'.repeat(32);
const imageId = `sha256:${'3f'.repeat(32)}`;

function facts(over: Partial<HostFacts> = {}): HostFacts {
  return { host: 'spark1', addresses: [], mtus: {}, indexes: [], logind: { answers: false }, ...over };
}

const file = (path: string) => ({ kind: 'file' as const, bytes: 1, path });

describe('hostIdentityOf', () => {
  it("gathers the image ID, kernel, driver, weights and versions of an HF cache folder's host", () => {
    const index = `./snapshots/${commit}/model.safetensors.index.json`;
    const identity = hostIdentityOf(
      facts({
        imageId,
        kernel: '6.11.0-1016-nvidia',
        driver: '580.95.05',
        indexSha256: { file: index, sha256: sha },
        indexes: [{ file: index, shards: [] }],
        weights: { entries: [file(index), file(`./refs/main`)], truncated: false },
        versions: { python: '3.12.3', ray: '2.49.1', vllm: '0.11.0' },
      }),
    );
    assert.deepEqual(identity, {
      host: 'spark1',
      imageId,
      kernel: '6.11.0-1016-nvidia',
      driver: '580.95.05',
      weights: { snapshot: commit, indexSha256: sha },
      versions: { python: '3.12.3', ray: '2.49.1', vllm: '0.11.0' },
    });
  });

  it('leaves out what was not read, keys and all (older facts, no nvidia-smi, no model folder)', () => {
    assert.deepEqual(hostIdentityOf(facts()), { host: 'spark1' });
    assert.deepEqual(Object.keys(hostIdentityOf(facts({ kernel: '6.8.0' }))), ['host', 'kernel']);
  });

  it('keeps the index hash of a plain folder, without a snapshot', () => {
    const identity = hostIdentityOf(
      facts({ indexSha256: { file: './model.safetensors.index.json', sha256: sha } }),
    );
    assert.deepEqual(identity.weights, { indexSha256: sha });
  });

  it("does not share the facts' versions object", () => {
    const versions = { python: '3.12.3' };
    const identity = hostIdentityOf(facts({ versions }));
    assert.notEqual(identity.versions, versions);
    assert.deepEqual(identity.versions, versions);
  });
});

describe('snapshotOf', () => {
  it("takes the hashed index's snapshot first, then the first index's", () => {
    const hashed = `./snapshots/${commit}/model.safetensors.index.json`;
    const listed = `./snapshots/${other}/model.safetensors.index.json`;
    assert.equal(
      snapshotOf(
        facts({ indexSha256: { file: hashed, sha256: sha }, indexes: [{ file: listed, shards: [] }] }),
      ),
      commit,
    );
    assert.equal(snapshotOf(facts({ indexes: [{ file: listed, shards: [] }] })), other);
  });

  it('falls back on the one snapshot the weight list holds, and says nothing of several', () => {
    const one = [file(`./snapshots/${commit}/config.json`), file(`./snapshots/${commit}/model.safetensors`)];
    assert.equal(snapshotOf(facts({ weights: { entries: one, truncated: false } })), commit);
    const two = [...one, file(`./snapshots/${other}/config.json`)];
    assert.equal(snapshotOf(facts({ weights: { entries: two, truncated: false } })), undefined);
  });

  it('finds none outside an HF cache folder or under a name that is not a commit', () => {
    assert.equal(
      snapshotOf(facts({ indexes: [{ file: './model.safetensors.index.json', shards: [] }] })),
      undefined,
    );
    const odd = [file('./snapshots/main/config.json'), file(`./x/snapshots/${commit}/config.json`)];
    assert.equal(snapshotOf(facts({ weights: { entries: odd, truncated: false } })), undefined);
    assert.equal(
      snapshotOf(facts({ weights: { entries: [file(`./snapshots/${commit}`)], truncated: false } })),
      undefined,
    );
  });
});
