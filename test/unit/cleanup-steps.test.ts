// Steps 2–4 as declarations (src/steps/): each judge reads its own commands' answers by name, the container lists
// the stop hands on are bounded, and the plan shows the very commands the activities run.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { raw } from '../../src/ssh/quote.js';
import {
  containerListsOf,
  judgeRemoval,
  listsToUse,
  planRemoveContainers,
  removalCommands,
  removalTargets,
} from '../../src/steps/remove-containers.js';
import { judgeStop, planStopServices, stopCommands, unitStatesOf } from '../../src/steps/stop-services.js';
import { gpuReads, gpuStateOf, judgeGpusClearStep, planGpusClear } from '../../src/steps/gpus-clear.js';
import { FailureType } from '../../src/shared/failures.js';
import { answers, failed, ok } from '../helpers/exec-answers.js';

const unitBlock = (active: string, file: string): string =>
  `Id=x\nLoadState=loaded\nActiveState=${active}\nUnitFileState=${file}\n`;

function failureOf(fn: () => unknown): ApplicationFailure {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, `an ApplicationFailure, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a failure');
}

describe('stopServices as a declaration', () => {
  const facts = { host: 'h1', user: 'aurora', loaded: ['a.service', 'b.service'], disable: true };

  it('judges the stop trip in its order: a sudo refusal first, then a unit still active, then one still enabled', () => {
    const refused = failureOf(() =>
      judgeStop(
        answers({
          stop: failed(1, 'sudo: a password is required\n'),
          disable: failed(1, 'sudo: a password is required\n'),
          'states-after': ok(`${unitBlock('active', 'enabled')}\n${unitBlock('active', 'enabled')}`),
        }),
        facts,
      ),
    );
    assert.equal(refused.type, FailureType.sudoNotPermitted);
    assert.equal(refused.nonRetryable, true);
    assert.match(
      refused.message,
      /aurora ALL=\(root\) NOPASSWD: \/usr\/bin\/systemctl stop -- a\.service b\.service/,
    );

    const active = failureOf(() =>
      judgeStop(
        answers({
          stop: ok(''),
          disable: ok(''),
          'states-after': ok(`${unitBlock('inactive', 'disabled')}\n${unitBlock('deactivating', 'enabled')}`),
        }),
        facts,
      ),
    );
    assert.equal(active.type, FailureType.serviceStillActive);
    assert.equal(active.nonRetryable, false);
    assert.match(active.message, /^On h1, b\.service is deactivating after systemctl stop\./);

    const enabled = failureOf(() =>
      judgeStop(
        answers({
          stop: ok(''),
          disable: failed(1, 'Failed to disable unit'),
          'states-after': ok(`${unitBlock('inactive', 'disabled')}\n${unitBlock('failed', 'enabled')}`),
        }),
        facts,
      ),
    );
    assert.equal(enabled.type, FailureType.serviceStillEnabled);
    assert.match(
      enabled.message,
      /b\.service still enabled after systemctl disable \(exit 1: Failed to disable unit\)/,
    );
  });

  it('returns the container lists read after the stop, and none when a list read failed', () => {
    const stopped = {
      stop: ok(''),
      disable: ok(''),
      'states-after': ok(`${unitBlock('inactive', 'disabled')}\n${unitBlock('failed', 'disabled')}`),
    };
    assert.deepEqual(
      judgeStop(answers({ ...stopped, containers: ok('a\nb,c\n'), labelled: ok('b\n') }), facts),
      { all: ['a', 'b', 'c'], labelled: ['b'] },
    );
    assert.equal(
      judgeStop(answers({ ...stopped, containers: failed(1, 'Cannot connect'), labelled: ok('') }), facts),
      undefined,
    );
    assert.equal(judgeStop(answers(stopped), facts), undefined, 'lists not asked for');
  });

  it('refuses a systemctl show whose blocks do not match the units', () => {
    assert.throws(
      () => unitStatesOf(unitBlock('active', 'enabled'), ['a', 'b'], 'h1'),
      /printed 1 blocks for 2 units/,
    );
  });

  it('plans the commands the activity runs: the list reads ride in the stop trip', () => {
    const planned = planStopServices(['a.service', 'gone.service'], true, 'c1', {
      uid: '1000',
      loadedUnits: ['a.service'],
    });
    const trip = planned.commands[1];
    assert.deepEqual(
      trip?.parts?.map((p) => p.text),
      stopCommands(raw('sudo -n '), ['a.service'], true, 'c1').map((c) => c.command.text),
    );
    assert.deepEqual(
      trip?.parts?.map((p) => p.change),
      [true, true, false, false, false],
    );
    assert.deepEqual(planned.intent, ['stop and disable a.service']);
  });
});

describe('removeContainers as a declaration', () => {
  it('removes the named containers that exist and every labelled one', () => {
    assert.deepEqual(removalTargets(['x', 'gone'], { all: ['x', 'y', 'old'], labelled: ['old'] }), [
      'x',
      'old',
    ]);
  });

  it('starts from the stop’s lists only on a first attempt soon after their read', () => {
    const lists = { all: ['x'], labelled: [], readAtMs: 1_000_000 };
    assert.equal(listsToUse(lists, 1, 1_030_000), lists);
    assert.equal(listsToUse(lists, 2, 1_030_000), undefined, 'a retry reads the host');
    assert.equal(listsToUse(lists, 1, 1_061_000), undefined, 'a resumed deploy reads the host');
    assert.equal(listsToUse(undefined, 1, 1_000_000), undefined);
  });

  it('passes no lists longer than its bound through the workflow', () => {
    const many = Array.from({ length: 513 }, (_, i) => `c${i}`).join('\n');
    assert.equal(containerListsOf(answers({ containers: ok(many), labelled: ok('') })), undefined);
    assert.equal(
      containerListsOf(answers({ containers: ok('a', { stdoutCutBytes: 1 }), labelled: ok('') })),
      undefined,
    );
  });

  it('fails, retryably, when a target is still listed after docker rm -f, naming docker’s words', () => {
    const left = failureOf(() =>
      judgeRemoval(answers({ remove: failed(1, 'Error: cannot kill'), after: ok('x\nother\n') }), 'h1', [
        'x',
        'old',
      ]),
    );
    assert.equal(left.type, FailureType.containerStillPresent);
    assert.equal(left.nonRetryable, false);
    assert.match(left.message, /^On h1, x still present after docker rm -f \(exit 1: Error: cannot kill\)\./);
    judgeRemoval(answers({ remove: ok(''), after: ok('other\n') }), 'h1', ['x', 'old']);
  });

  it('plans the list read only for a retry when the stop brought the lists', () => {
    const lists = { all: ['x'], labelled: [] };
    const withStop = planRemoveContainers(['x'], 'c1', lists, true);
    assert.match(withStop.commands[0]?.when ?? '', /retried/);
    assert.equal(planRemoveContainers(['x'], 'c1', lists, false).commands[0]?.when, undefined);
    assert.deepEqual(
      withStop.commands[1]?.parts?.map((p) => p.text),
      removalCommands(['x']).map((c) => c.command.text),
    );
  });
});

describe('verifyGpusClear as a declaration', () => {
  const meminfo = 'MemTotal: 131072000 kB\nMemAvailable: 120000000 kB\n';

  it('reads the state and hands it to nvidia-smi’s one judge', () => {
    const state = gpuStateOf(
      answers({
        gpus: ok('0, NVIDIA GB10, [N/A], [N/A]\n'),
        apps: ok('4242, python3, 2048\n'),
        meminfo: ok(meminfo),
      }),
      'h1',
    );
    assert.equal(state.unifiedMemory, true);
    assert.equal(state.memAvailableMiB, 117187);
    const busy = failureOf(() => judgeGpusClearStep(state, { maxUsedMiB: 1024, minAvailableMiB: 65536 }));
    assert.equal(busy.type, FailureType.gpuNotClear);
    assert.equal(busy.nonRetryable, false);
    assert.match(busy.message, /pid 4242 python3 \(2048 MiB\)/);
  });

  it('names every failed read, and calls a read cut at its bound untrustworthy', () => {
    const both = failureOf(() =>
      gpuStateOf(
        answers({
          gpus: failed(9, 'NVIDIA-SMI has failed'),
          apps: failed(9, 'NVIDIA-SMI has failed'),
          meminfo: ok(meminfo),
        }),
        'h1',
      ),
    );
    assert.equal(both.type, 'RemoteCommandError');
    assert.match(
      both.message,
      /--query-gpu exited with code 9: NVIDIA-SMI has failed; nvidia-smi --query-compute-apps/,
    );
    const cut = failureOf(() =>
      gpuStateOf(answers({ gpus: ok('0', { stdoutCutBytes: 1 }), apps: ok(''), meminfo: ok(meminfo) }), 'h1'),
    );
    assert.equal(cut.type, FailureType.hostOutputInvalid);
    assert.equal(cut.nonRetryable, true);
  });

  it('plans the one trip the activity runs', () => {
    const planned = planGpusClear({ maxUsedMiB: 1024, minAvailableMiB: 65536, clearTimeout: '2m' });
    assert.deepEqual(
      planned.commands[0]?.parts?.map((p) => p.text),
      gpuReads().map((c) => c.command.text),
    );
    assert.match(planned.commands[0]?.repeats ?? '', /gpu\.clearTimeout 2m/);
  });
});
