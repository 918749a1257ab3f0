// The recorded `ray status` of a two-node cluster (shared/fixtures/ray-status), and variants of it: the parser's
// tests and the adversarial-output tests start from the same real output.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export const rayStatusFixtures = new URL('../../../shared/fixtures/ray-status/', import.meta.url);
export const twoNodes = readFileSync(new URL('two-nodes.txt', rayStatusFixtures), 'utf8');
export const twoNodesHead = 'node_83e4b7723832f251eff177c9faf45a5305de7b1755a7f91ce1f3c911';
export const twoNodesWorker = 'node_4dcd7509dc73bd2e758e4048d40233b19eb019dfb54c66095a01e30f';

/** Replaces exactly one occurrence, so a variant fails loudly if the fixture changes under it. */
export function variant(text: string, from: string, to: string): string {
  assert.equal(text.split(from).length, 2, `fixture should contain ${JSON.stringify(from)} once`);
  return text.replace(from, to);
}
