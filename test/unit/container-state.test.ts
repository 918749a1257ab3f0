import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { containerStateOf } from '../../src/activities/docker.js';
import { judgeContainer, parseContainerInspect } from '../../src/parsers/container-state.js';

/** `docker inspect --type container -- NAME` of one container, the fields liftoff reads, as docker prints them. */
function inspected(state: { Status: string; Running: boolean; ExitCode: number }): string {
  return JSON.stringify([
    { Id: 'f3a9', State: { ...state, Pid: state.Running ? 4242 : 0 }, Config: { Labels: {}, Env: [] } },
  ]);
}
const read = (res: { exitCode: number; stdout: string; stderr: string }) =>
  containerStateOf(res, 'vllm_x', 'spark2');

describe('judgeContainer: one sentence for a container that does not run, from its docker inspect', () => {
  it('a running container is ok', () => {
    const state = read({
      exitCode: 0,
      stdout: inspected({ Status: 'running', Running: true, ExitCode: 0 }),
      stderr: '',
    });
    assert.deepEqual(judgeContainer(state, 'the Ray container vllm_x'), { ok: true });
  });

  it('an exited one says its status and exit code', () => {
    const state = read({
      exitCode: 0,
      stdout: inspected({ Status: 'exited', Running: false, ExitCode: 137 }),
      stderr: '',
    });
    assert.deepEqual(judgeContainer(state, 'the Ray container vllm_x'), {
      ok: false,
      message: 'the Ray container vllm_x is exited (exit code 137)',
    });
  });

  it("docker's `No such container` is gone", () => {
    const state = read({ exitCode: 1, stdout: '[]', stderr: 'Error: No such container: vllm_x\n' });
    assert.deepEqual(judgeContainer(state, "rank 1's container vllm_x"), {
      ok: false,
      message: "rank 1's container vllm_x is gone",
    });
  });

  it('a watch that knows only the status (no exit code) says the status alone', () => {
    assert.deepEqual(judgeContainer({ running: false, status: 'running (its main process is gone)' }, 'c'), {
      ok: false,
      message: 'c is running (its main process is gone)',
    });
  });
});

describe('parseContainerInspect: docker inspect read field by field, whatever the host printed', () => {
  it('reads the id, state, string labels and env', () => {
    const text = JSON.stringify([
      {
        Id: 'f3a9',
        State: { Status: 'running', Running: true, ExitCode: 0 },
        Config: { Labels: { 'liftoff.role': 'companion', bad: 7 }, Env: ['A=1', 2] },
      },
    ]);
    assert.deepEqual(parseContainerInspect(text), {
      id: 'f3a9',
      running: true,
      status: 'running',
      exitCode: 0,
      labels: { 'liftoff.role': 'companion' },
      env: ['A=1'],
    });
  });

  it('names no container for an empty array, another shape or not JSON', () => {
    for (const text of ['[]', '{}', '[1]', 'Error: No such object', '[{"State": "running"}'])
      assert.equal(parseContainerInspect(text), undefined, text);
    assert.deepEqual(parseContainerInspect('[{"State": "running", "Config": null}]'), {
      running: false,
      labels: {},
      env: [],
    });
  });
});
