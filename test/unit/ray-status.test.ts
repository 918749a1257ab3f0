import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  judgeRayStatus,
  parseRayStatus,
  RayNotRunningError,
  RayStatusParseError,
} from '../../src/parsers/ray-status.js';
import {
  rayStatusFixtures,
  twoNodes,
  twoNodesHead as head,
  twoNodesWorker as worker,
  variant,
} from '../helpers/ray-status-fixture.js';

const readme = readFileSync(new URL('README.md', rayStatusFixtures), 'utf8');
const GiB = 1024 ** 3;

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

describe('judgeRayStatus: the one verdict of the deploy, the launch recheck and the supervisor probe', () => {
  const where = { host: 'spark1', container: 'vllm_x' };
  const answered = (stdout: string, exitCode = 0, stderr = '') => ({ exitCode, stdout, stderr });
  const oneNode = (() => {
    let text = variant(twoNodes, ` 1 ${worker}\n`, '');
    text = variant(text, '0.0/2.0 GPU', '0.0/1.0 GPU');
    return text;
  })();

  it('two-nodes.txt against 2 nodes and 2 GPUs: ok, with the count', () => {
    const verdict = judgeRayStatus(answered(twoNodes), { nodes: 2, gpus: 2 }, where);
    assert.deepEqual(verdict, {
      ok: true,
      seen: { nodes: 2, gpus: 2, gpusUsed: 0 },
      message: 'The Ray cluster on spark1 has 2 of 2 nodes and 2 of 2 GPUs',
    });
  });

  it('one node missing: RayClusterIncomplete with what Ray counts', () => {
    const verdict = judgeRayStatus(answered(oneNode), { nodes: 2, gpus: 2 }, where);
    assert.deepEqual(verdict, {
      ok: false,
      type: 'RayClusterIncomplete',
      seen: { nodes: 1, gpus: 1, gpusUsed: 0 },
      message: 'The Ray cluster on spark1 has 1 of 2 nodes and 1 of 2 GPUs',
    });
  });

  it('GPUs only (the launch recheck): the node count does not matter, the message leaves it out', () => {
    assert.equal(judgeRayStatus(answered(oneNode), { gpus: 1 }, where).ok, true);
    const short = judgeRayStatus(answered(oneNode), { gpus: 2 }, where);
    assert.equal(short.ok, false);
    assert.equal(short.message, 'The Ray cluster on spark1 has 1 of 2 GPUs');
  });

  it("the head's container gone or stopped: headContainerDown, docker's first line as the problem", () => {
    for (const stderr of [
      'Error response from daemon: No such container: vllm_x\n',
      'Error response from daemon: container 3f2a is not running\n',
    ]) {
      const verdict = judgeRayStatus(answered('', 1, stderr), { nodes: 2, gpus: 2 }, where);
      assert.ok(!verdict.ok && 'problem' in verdict, JSON.stringify(verdict));
      assert.equal(verdict.type, 'RayClusterIncomplete');
      assert.equal(verdict.headContainerDown, true);
      assert.equal(verdict.problem, stderr.trim());
      assert.equal(
        verdict.message,
        `The Ray head container vllm_x on spark1 is not running (${stderr.trim()})`,
      );
    }
  });

  it('Ray down in a running container (the README line): not answering, the line as the problem', () => {
    const line = /Head down: `([^`]+)`/.exec(readme)?.[1];
    assert.ok(line, 'README should quote the head-down error');
    const verdict = judgeRayStatus(
      answered('', 1, `Traceback (most recent call last):\n${line}\n`),
      { gpus: 2 },
      where,
    );
    assert.ok(!verdict.ok && 'problem' in verdict);
    assert.deepEqual(
      { type: verdict.type, down: verdict.headContainerDown, problem: verdict.problem },
      { type: 'RayClusterIncomplete', down: false, problem: line },
    );
    // The line's own period is left to the caller, which goes on after it.
    assert.equal(
      verdict.message,
      `Ray in vllm_x on spark1 does not answer \`ray status\`: ${line.replace(/\.$/, '')}`,
    );
  });

  it('not ray status output: its tail is the problem; no output at all: the exit code', () => {
    const notRay = judgeRayStatus(answered('', 127, 'bash: ray: command not found\n'), { gpus: 2 }, where);
    assert.ok(!notRay.ok && 'problem' in notRay);
    assert.equal(notRay.problem, 'bash: ray: command not found');
    const silent = judgeRayStatus(answered('', 137), { gpus: 2 }, where);
    assert.ok(!silent.ok && 'problem' in silent);
    assert.equal(silent.problem, 'ray status exited with code 137');
  });

  it('a count no real cluster has: HostOutputInvalid, never a number to pass on', () => {
    const huge = variant(twoNodes, ` 1 ${worker}`, ` 1000000000 ${worker}`);
    const verdict = judgeRayStatus(answered(huge), { nodes: 2, gpus: 2 }, where);
    assert.ok(!verdict.ok && 'problem' in verdict);
    assert.equal(verdict.type, 'HostOutputInvalid');
    assert.match(
      verdict.message,
      /^The Ray cluster on spark1 cannot be judged: ray status node count of node_/,
    );
  });
});
