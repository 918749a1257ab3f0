import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseRayStatus, RayNotRunningError, RayStatusParseError } from '../../src/parsers/ray-status.js';

const fixtures = new URL('../../../shared/fixtures/ray-status/', import.meta.url);
const twoNodes = readFileSync(new URL('two-nodes.txt', fixtures), 'utf8');
const readme = readFileSync(new URL('README.md', fixtures), 'utf8');

const head = 'node_83e4b7723832f251eff177c9faf45a5305de7b1755a7f91ce1f3c911';
const worker = 'node_4dcd7509dc73bd2e758e4048d40233b19eb019dfb54c66095a01e30f';
const GiB = 1024 ** 3;

/** Replaces exactly one occurrence, so a variant fails loudly if the fixture changes under it. */
function variant(text: string, from: string, to: string): string {
  assert.equal(text.split(from).length, 2, `fixture should contain ${JSON.stringify(from)} once`);
  return text.replace(from, to);
}

describe('parseRayStatus', () => {
  it('two-nodes.txt: both nodes active, totals in units and bytes', () => {
    const status = parseRayStatus(twoNodes);
    assert.deepEqual(status.activeNodes, [head, worker]);
    assert.deepEqual(status.idleNodes, []);
    assert.deepEqual(status.pendingNodes, []);
    assert.deepEqual(status.failures, []);
    assert.deepEqual(status.pendingDemands, []);
    assert.deepEqual(status.resources['CPU'], { used: 0, total: 40 });
    assert.deepEqual(status.resources['GPU'], { used: 0, total: 2 });
    assert.deepEqual(status.resources['memory'], { used: 0, total: Math.round(221.76 * GiB) });
    assert.deepEqual(status.resources['object_store_memory'], { used: 0, total: Math.round(19.46 * GiB) });
  });

  it('older Ray (Usage:/Demands:, derived from two-nodes.txt by renaming the headers) reads the same', () => {
    let older = variant(twoNodes, 'Total Usage:', 'Usage:');
    older = variant(older, 'Pending Demands:', 'Demands:');
    assert.deepEqual(parseRayStatus(older), parseRayStatus(twoNodes));
  });

  it('older Ray with a pending demand reports it', () => {
    let older = variant(twoNodes, 'Total Usage:', 'Usage:');
    older = variant(
      older,
      'Pending Demands:\n (no resource demands)',
      "Demands:\n {'GPU': 1.0}: 1+ pending tasks/actors",
    );
    assert.deepEqual(parseRayStatus(older).pendingDemands, ["{'GPU': 1.0}: 1+ pending tasks/actors"]);
  });

  it('one node missing (derived: one node_ line, 0.0/1.0 GPU) shows one node and one GPU', () => {
    let missing = variant(twoNodes, ` 1 ${worker}\n`, '');
    missing = variant(missing, '0.0/2.0 GPU', '0.0/1.0 GPU');
    missing = variant(missing, '0.0/40.0 CPU', '0.0/20.0 CPU');
    const status = parseRayStatus(missing);
    assert.deepEqual(status.activeNodes, [head]);
    assert.deepEqual(status.resources['GPU'], { used: 0, total: 1 });
    assert.deepEqual(status.resources['CPU'], { used: 0, total: 20 });
  });

  it('while vLLM serves, its placement group holds both GPUs (derived: 2.0/2.0 GPU)', () => {
    const serving = variant(
      twoNodes,
      '0.0/2.0 GPU',
      '2.0/2.0 GPU (2.0 used of 2.0 reserved in placement groups)',
    );
    assert.deepEqual(parseRayStatus(serving).resources['GPU'], { used: 2, total: 2 });
  });

  it('a pending node and a failure are listed (derived)', () => {
    let text = variant(twoNodes, ' (no pending nodes)', ' 10.213.0.12: ray.worker.default, launching');
    text = variant(text, ' (no failures)', ' ray.worker.default: NodeTerminated (ip: 10.213.0.13)');
    const status = parseRayStatus(text);
    assert.deepEqual(status.pendingNodes, ['10.213.0.12: ray.worker.default, launching']);
    assert.deepEqual(status.failures, ['ray.worker.default: NodeTerminated (ip: 10.213.0.13)']);
  });

  it('an Idle: section (newer Ray) counts as alive nodes', () => {
    const text = variant(twoNodes, ` 1 ${worker}\n`, `Idle:\n 1 ${worker}\n`);
    const status = parseRayStatus(text);
    assert.deepEqual(status.activeNodes, [head, worker]);
    assert.deepEqual(status.idleNodes, [worker]);
  });

  it('head down (the error line from the fixture README) throws RayNotRunningError', () => {
    const line = /Head down: `([^`]+)`/.exec(readme)?.[1];
    assert.ok(line, 'README should quote the head-down error');
    const output = `Traceback (most recent call last):\n  File "/usr/local/bin/ray", line 8, in <module>\n${line}\n`;
    assert.throws(
      () => parseRayStatus(output),
      (err: unknown) =>
        err instanceof RayNotRunningError && err.detail === line && /Ray head container/.test(err.message),
    );
  });

  it('text that is not ray status output throws RayStatusParseError', () => {
    assert.throws(() => parseRayStatus('bash: ray: command not found\n'), RayStatusParseError);
    assert.throws(() => parseRayStatus(''), RayStatusParseError);
  });
});
