// LiftoffHostIds holds a digest per host (src/shared/host-digest.ts): short enough that a cluster of the most hosts
// a spec may name fits Temporal's 2048-byte cap on one search attribute value, stable, and spread.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostDigest, hostDigests } from '../../src/shared/host-digest.js';
import { maxHosts } from '../../src/config/limits.js';

const machineId = (n: number): string => n.toString(16).padStart(32, '0');

describe('host digests', () => {
  it('are four base64url characters, the same for the same id', () => {
    assert.match(hostDigest(machineId(1)), /^[A-Za-z0-9_-]{4}$/);
    assert.equal(
      hostDigest('9f1c2a7be0d34c55a1f0e2b3c4d5e6f7'),
      hostDigest('9f1c2a7be0d34c55a1f0e2b3c4d5e6f7'),
    );
    assert.notEqual(hostDigest(machineId(1)), hostDigest(machineId(2)));
  });

  it('fit the cap for the most hosts a spec may name, where the ids stop fitting at 59', () => {
    const ids = Array.from({ length: maxHosts }, (_, i) => machineId(i * 7919 + 1));
    assert.ok(
      JSON.stringify(hostDigests(ids)).length <= 2048,
      JSON.stringify(hostDigests(ids)).length.toString(),
    );
    assert.ok(JSON.stringify(ids.slice(0, 59)).length > 2048);
  });

  it('rarely share one: 10,000 ids, nearly as many digests', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => machineId(i * 104_729 + 17));
    assert.ok(hostDigests(ids).length > 9_990, `${hostDigests(ids).length} distinct digests`);
  });
});
