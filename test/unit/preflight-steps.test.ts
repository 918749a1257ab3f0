// The preflight step's declarations (issue 28), pure: which commands one host's trip runs, how each check is
// judged from its own answers, and what of the agreement read comes back for the workflow to pass on.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ExecResult } from '../../src/ssh/executor.js';
import type { PreflightInput } from '../../src/activities/types.js';
import { judgePreflight, preflightCommands } from '../../src/steps/preflight.js';
import { factsOf, maxPassedFactsBytes } from '../../src/steps/agreement-read.js';
import { ok } from '../helpers/exec-answers.js';

const imageId = `sha256:${'ab'.repeat(32)}`;
const read = { host: 'spark2', image: 'img:1', modelPath: '/m', hashWeights: false };
const input: PreflightInput = {
  host: {
    target: { name: 'spark2', host: '10.0.0.2', port: 22, user: 'aurora' },
    auth: { privateKeyPath: '/k', knownHostsPath: '/kh' },
  },
  clusterIp: '10.0.2.12',
  image: 'img:1',
  modelPath: '/m',
  volumes: ['/data:/data'],
  minFreeDiskGiB: 1,
  agreement: { read: { ...read, rayHead: { ip: '10.0.2.11', port: 6379 } }, versions: false },
};

/** What a good host answers to each of the trip's commands. */
function goodAnswers(): Map<string, ExecResult> {
  return new Map<string, ExecResult>([
    ['clock', ok('1796354320354868938\n')],
    ['docker-version', ok('27.5.1\n')],
    ['image-id', ok(`${imageId}\n`)],
    ['gpu-access', ok('')],
    ['model-dir', ok('')],
    ['weight-files', ok('/m/a.safetensors\n/m/config.json\n')],
    ['missing-paths', ok('')],
    ['addresses', ok('3: enp1s0f1np1    inet 10.0.2.12/24 brd 10.0.2.255 scope global enp1s0f1np1\n')],
    [
      'free-space',
      ok('Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/x 100 1 99999999 1% /\n'),
    ],
    ['machine-id', ok(`${'a'.repeat(32)}\n`)],
    ['links', ok('3: enp1s0f1np1: <UP> mtu 1500 qdisc noqueue\n')],
    ['weight-list', ok('f 64 ./a.safetensors\nf 10 ./config.json\n')],
    ['weight-indexes', ok('')],
    ['ipc', ok('uid=0\nuser=root\nsession-exit=1\nuser-exit=1\n')],
    ['ray-port', ok('exit 1\nbash: connect: Connection refused\n')],
    ['kernel', ok('6.11.0-1016-nvidia\n')],
    ['gpu-driver', ok('580.95.05\n')],
    ['index-sha256', ok('')],
  ]);
}

describe('preflight step', () => {
  it("runs the clock first, every check's reads, and a read two parts share once", () => {
    const names = preflightCommands(input).map((c) => c.name);
    assert.equal(names[0], 'clock');
    assert.deepEqual(
      [...names].sort(),
      [...goodAnswers().keys()].sort(),
      'each command of the trip is answered by one name',
    );
    const { agreement: _a, ...alone } = input;
    assert.equal(
      preflightCommands(alone).some((c) => c.name === 'clock' || c.name === 'weight-list'),
      false,
    );
  });

  it('judges each check on its own answers and returns the facts, parsed', () => {
    const report = judgePreflight(goodAnswers(), input, 1796354320000);
    assert.equal(report.ok, true, JSON.stringify(report.checks));
    assert.deepEqual(
      report.checks.map((c) => c.name),
      ['ssh', 'docker', 'image', 'gpus', 'model', 'volumes', 'interface', 'disk'],
    );
    assert.equal(report.facts?.imageId, imageId);
    assert.equal(report.facts?.clockOffsetMs, 354);
    assert.deepEqual(report.facts?.rayPort, { outcome: 'refused', detail: 'connection refused' });
    assert.equal(report.facts?.weights?.entries.length, 2);
    assert.equal(report.facts?.kernel, '6.11.0-1016-nvidia');
    assert.equal(report.facts?.driver, '580.95.05');
    assert.equal(report.facts?.indexSha256, undefined, 'no index in the folder');
  });

  it('a docker that does not answer: the image is not checked and the GPU access not judged', () => {
    const answers = goodAnswers();
    answers.set('docker-version', {
      ...ok(''),
      exitCode: 1,
      stderr:
        'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?',
    });
    answers.set('gpu-access', { ...ok(''), exitCode: 125 });
    const report = judgePreflight(answers, input, 0);
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.checks.filter((c) => !c.ok).map((c) => [c.name, c.detail.slice(0, 40)]),
      [
        ['docker', 'docker version failed (exit 1): Cannot c'],
        ['image', 'not checked: docker does not answer (see'],
      ],
    );
    assert.equal(
      report.checks.some((c) => c.name === 'gpus'),
      false,
    );
  });

  it('facts too big for the history are not returned: the comparison reads that host itself', () => {
    const answers = goodAnswers();
    const many = Array.from({ length: 2000 }, (_, i) => `f 100 ./snapshots/x/shard-${i}.safetensors`);
    answers.set('weight-list', ok(`${many.join('\n')}\n`));
    const report = judgePreflight(answers, input, 0);
    assert.equal(report.ok, true);
    assert.equal(report.facts, undefined);
    const facts = factsOf(answers, input.agreement?.read ?? read, 0);
    assert.ok(JSON.stringify(facts).length > maxPassedFactsBytes);
  });

  it('on the head, a log folder the SSH user cannot write is refused with the fix; a missing one only once', () => {
    const head: PreflightInput = { ...input, logDir: '/srv/logs', logPath: '/srv/logs/serve.log' };
    const names = preflightCommands(head).map((c) => c.name);
    assert.ok(names.includes('log-dir') && names.includes('log-writable'));
    const answers = goodAnswers();
    answers.set('log-dir', ok('/srv/logs\n'));
    answers.set('log-writable', { ...ok(''), exitCode: 4 });
    const report = judgePreflight(answers, head, 0);
    assert.deepEqual(
      report.checks.filter((c) => !c.ok).map((c) => c.name),
      ['logWritable'],
    );
    assert.match(
      report.checks.find((c) => c.name === 'logWritable')?.detail ?? '',
      /aurora cannot create files in the log folder \/srv\/logs.*sudo chown aurora \/srv\/logs/,
    );
    answers.set('log-dir', { ...ok(''), exitCode: 2 });
    assert.deepEqual(
      judgePreflight(answers, head, 0)
        .checks.filter((c) => !c.ok)
        .map((c) => c.name),
      ['logDir'],
      'the missing folder is the finding; its writability is not judged',
    );
  });

  it('a listing cut at its bound drops its last, partial line and says it is truncated', () => {
    const answers = goodAnswers();
    answers.set('weight-list', ok('f 64 ./a.safetensors\nf 500 ./b.safe', { stdoutCutBytes: 1 }));
    const facts = factsOf(answers, read, 0);
    assert.deepEqual(facts.weights, {
      entries: [{ kind: 'file', bytes: 64, path: './a.safetensors' }],
      truncated: true,
    });
  });
});
