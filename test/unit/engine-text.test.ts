// A tool's words quoted inside a failure message: Docker 20.10 ends its errors with a period (and, for `docker run`,
// a pointer to --help), 28.x does not, and liftoff's own sentence follows either. The texts below are the engines'
// own, as the real 20.10.24 (Debian's docker.io) and 28.2 clients printed them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sentence } from '../../src/shared/text.js';
import { dockerSaid } from '../../src/parsers/host-output.js';
import { rayRunFailure } from '../../src/activities/ray-start.js';
import { judgeRayStatus } from '../../src/parsers/ray-status.js';
import { clause } from '../../src/shared/text.js';

const engine20 = {
  gpu: 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
  noImage: "docker: Error response from daemon: No such image: nope/img:1.\nSee 'docker run --help'.",
  conflict:
    'docker: Error response from daemon: Conflict. The container name "/vllm_qwen35" is already in use by container "6d1f4c60". You have to remove (or rename) that container to be able to reuse that name.\nSee \'docker run --help\'.',
};
const engine28 = {
  gpu: 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]]\n\nRun \'docker run --help\' for more information',
};

describe('sentence', () => {
  it('adds a period only where the text has none', () => {
    for (const [text, said] of [
      ['exit 1', 'exit 1.'],
      ['said so.', 'said so.'],
      ['is it running?  \n', 'is it running?'],
      ['cut…', 'cut…'],
      ['', ''],
    ] as const)
      assert.equal(sentence(text), said, JSON.stringify(text));
  });
});

describe('dockerSaid', () => {
  it("drops the CLI's pointer to --help, of 20.10 and of 28.x", () => {
    assert.equal(
      dockerSaid(engine20.noImage),
      'docker: Error response from daemon: No such image: nope/img:1.',
    );
    assert.equal(
      dockerSaid(engine28.gpu),
      'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]]',
    );
    assert.equal(dockerSaid(engine20.gpu), engine20.gpu);
  });
});

describe("the Ray container's docker run failure", () => {
  const what = { role: 'worker' as const, container: 'vllm_qwen35', host: 'spark2' };

  for (const [engine, said] of [
    ['20.10, no GPU runtime', engine20.gpu],
    ['28.x, no GPU runtime', engine28.gpu],
    ['20.10, no such image', engine20.noImage],
    ['20.10, name in use', engine20.conflict],
  ] as const) {
    it(`never shows ".." (${engine})`, () => {
      const { message } = rayRunFailure(what, 125, said);
      assert.doesNotMatch(message, /\.\./, message);
      assert.doesNotMatch(message, /--help/, message);
      assert.match(
        message,
        /^docker run of the Ray worker container vllm_qwen35 on spark2 failed \(exit 125\): docker: /,
      );
    });
  }

  it("reads the 20.10 GPU and image errors as fatal, with one period before the advice (the GPU runtime's on the host, not the spec)", () => {
    const gpu = rayRunFailure(what, 125, engine20.gpu);
    assert.equal(gpu.fatal, true);
    assert.ok(
      gpu.message.endsWith(
        'capabilities: [[gpu]]. Docker on spark2 cannot give containers GPUs: install the NVIDIA container toolkit there (nvidia-container-toolkit; then sudo nvidia-ctk runtime configure --runtime=docker and restart Docker) and deploy again.',
      ),
      gpu.message,
    );
    assert.equal(rayRunFailure(what, 125, engine20.noImage).fatal, true);
    const other = rayRunFailure(what, 125, 'docker: Error response from daemon: i/o timeout.');
    assert.equal(other.fatal, false);
    assert.ok(other.message.endsWith('i/o timeout. Check the docker daemon on that host.'), other.message);
  });
});

describe('a tool sentence inside a judge verdict', () => {
  it('clause drops the closing periods a later period would double, and nothing else', () => {
    assert.equal(
      clause('Error response from daemon: Container abc is not running.'),
      'Error response from daemon: Container abc is not running',
    );
    assert.equal(clause('no period'), 'no period');
    assert.equal(clause('v1.2 ..  '), 'v1.2');
  });

  it("ray status's verdict on a container docker calls not running never shows '..' once a caller adds its period", () => {
    const verdict = judgeRayStatus(
      { exitCode: 1, stdout: '', stderr: 'Error response from daemon: Container 4f2a is not running.\n' },
      { gpus: 2 },
      { host: 'spark1', container: 'vllm_qwen35' },
    );
    assert.equal(verdict.ok, false);
    assert.doesNotMatch(`${verdict.message}.`, /\.\./, verdict.message);
  });
});
