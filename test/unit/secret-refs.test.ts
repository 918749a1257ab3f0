// Secret references are resolved on the worker: from its environment or a file on its host; failures name the
// reference and the fix, never a value. They run under a worker policy that allows the test's variables and its
// secrets folder (what a policy refuses is tested in worker-policy.test.ts).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import {
  resolveEnv as resolveAny,
  resolveValue as resolveOne,
  secretValues as valuesOf,
} from '../../src/activities/secrets.js';
import { bindWorkerPolicy } from '../../src/activities/worker-policy.js';
import { workerPolicyFrom } from '../../src/config/worker-policy.js';

describe('secret references', () => {
  const dir = mkdtempSync(join(homedir(), '.liftoff-secrets-test-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const policy = workerPolicyFrom({ secretsDir: dir, fromEnv: ['UNIT_SECRET', 'UNIT_MISSING'] }, 'the test');
  const resolveEnv = bindWorkerPolicy(policy, resolveAny);
  const resolveValue = bindWorkerPolicy(policy, resolveOne);
  const secretValues = bindWorkerPolicy(policy, valuesOf);

  it('resolves fromEnv and fromFile (also ~/ paths), and marks every referenced value secret', async () => {
    process.env.UNIT_SECRET = 'env-secret-value';
    writeFileSync(join(dir, 'token'), 'file-secret-value\n');
    const r = await resolveEnv({
      HF_TOKEN: { fromEnv: 'UNIT_SECRET' },
      OTHER: { fromFile: `~/${relative(homedir(), join(dir, 'token'))}` },
      PLAIN: 'plain',
      API_KEY_EMPTY: '',
    });
    assert.deepEqual(r.values, {
      HF_TOKEN: 'env-secret-value',
      OTHER: 'file-secret-value',
      PLAIN: 'plain',
      API_KEY_EMPTY: '',
    });
    assert.deepEqual([...r.secretNames].sort(), ['API_KEY_EMPTY', 'HF_TOKEN', 'OTHER']);
    assert.deepEqual((await secretValues({ A: { fromEnv: 'UNIT_SECRET' } }, { B: 'x' })).sort(), [
      'env-secret-value',
    ]);
    assert.equal(await resolveValue('serve.env.VLLM_API_KEY', undefined), undefined);
    assert.equal(
      await resolveValue('serve.env.VLLM_API_KEY', { fromEnv: 'UNIT_SECRET' }),
      'env-secret-value',
    );
  });

  it('fails non-retryably, naming the reference and the fix, when the worker lacks the value', async () => {
    delete process.env.UNIT_MISSING;
    await assert.rejects(resolveEnv({ HF_TOKEN: { fromEnv: 'UNIT_MISSING' } }), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.nonRetryable, true);
      assert.equal(err.type, 'InvalidSpec');
      assert.match(err.message, /HF_TOKEN refers to the environment variable UNIT_MISSING, which is not set/);
      return true;
    });
    await assert.rejects(
      resolveEnv({ HF_TOKEN: { fromFile: join(dir, 'absent') } }),
      /cannot read \(ENOENT\)/,
    );
  });
});
