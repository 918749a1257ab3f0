// The serve.port check between "verify Ray" and "launch": its command, its judge on what `ss` printed, its plan
// entry, and that the deploy's step table, the worker's activities and the patch list all carry it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { loadSpecFile } from '../../src/config/load.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { servePortFree } from '../../src/steps/serve-port-free.js';
import { hostStepPlan } from '../../src/plan/host-plan.js';
import { hostStepActivities } from '../../src/activities/host-step.js';
import { deploySteps } from '../../src/workflows/steps.js';
import { patchIds } from '../../src/workflows/patches.js';
import type { PlanHost } from '../../src/steps/plan-entry.js';
import type { ExecResult } from '../../src/ssh/executor.js';

const spec = loadSpecFile(deploySpecSchema, 'examples/spark-qwen35.yaml');
const ref = {
  target: { name: 'spark1', host: '10.0.0.1', port: 22, user: 'root' },
  auth: {},
} as PlanHost['ref'];
const head: PlanHost = { name: 'spark1', role: 'head', clusterIp: '10.0.0.1', ref };
const worker: PlanHost = { ...head, name: 'spark2', role: 'worker' };
const answer = (stdout: string, exitCode = 0): Map<string, ExecResult> =>
  new Map([['listener', { exitCode, stdout, stderr: '', durationMs: 1 }]]);

describe('checkServePort (steps/serve-port-free.ts)', () => {
  it('reads the listeners of serve.port with ss, and fails the trip on an exit of ss', () => {
    const [cmd, ...rest] = servePortFree.commands({ spec, host: head });
    assert.equal(rest.length, 0);
    assert.equal(cmd?.command.text, `ss -Hltn 'sport = :${spec.serve.port}'`);
    assert.equal(cmd?.check, true);
  });

  it('passes when nothing listens', () => {
    assert.equal(
      servePortFree.judge(answer(''), { spec, host: head }),
      `spark1: port ${spec.serve.port} free`,
    );
  });

  it('refuses a held port, naming serve.port, the host, what listens and the fix', () => {
    const line = `LISTEN 0 4096 0.0.0.0:${spec.serve.port} 0.0.0.0:*`;
    assert.throws(
      () => servePortFree.judge(answer(`${line}\n`), { spec, host: head }),
      (err: unknown) => {
        assert.ok(err instanceof ApplicationFailure);
        assert.equal(err.type, 'ServePortInUse');
        assert.equal(err.nonRetryable, true);
        assert.match(
          err.message,
          new RegExp(`^serve.port ${spec.serve.port} is in use on the head spark1 \\(`),
        );
        assert.ok(err.message.includes(line));
        assert.match(err.message, /pick another serve\.port\.$/);
        return true;
      },
    );
  });

  it('is planned on the head only, and not at all with serve.backend multiproc', () => {
    const entry = hostStepPlan(servePortFree, { spec, host: head });
    assert.equal(entry?.step, 'checkServePort');
    assert.deepEqual(entry?.intent, [`nothing listens on serve.port ${spec.serve.port}, so vllm serve can`]);
    assert.equal(entry?.commands[0]?.change, false);
    assert.equal(hostStepPlan(servePortFree, { spec, host: worker }), undefined);
    const multiproc = { ...spec, serve: { ...spec.serve, backend: 'multiproc' as const } };
    assert.equal(hostStepPlan(servePortFree, { spec: multiproc, host: head }), undefined);
  });

  it('is a deploy step between verifyRayCluster and launchServe, an activity of its name, and a patch id', () => {
    const names = deploySteps.map((s) => s.name as string);
    assert.equal(names.indexOf('checkServePort'), names.indexOf('verifyRayCluster') + 1);
    assert.equal(names.indexOf('launchServe'), names.indexOf('checkServePort') + 1);
    assert.equal(typeof hostStepActivities.checkServePort, 'function');
    assert.ok(patchIds.includes('check-serve-port'));
  });
});
