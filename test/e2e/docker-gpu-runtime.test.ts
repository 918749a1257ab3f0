// A host whose Docker cannot give containers GPUs (no NVIDIA container toolkit), on real Docker Engines: the
// deploy must refuse in preflight, naming the host and the fix, before anything on any host is stopped. Before
// preflight asked, the old units and containers were stopped on both hosts and only then did the Ray worker's
// `docker run` fail (`could not select device driver "" with capabilities: [[gpu]]`).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import { FailureType } from '../../src/shared/failures.js';
import { simDeploySpec } from '../../sim/spec.js';
import { clusterStatus } from '../../sim/cluster.js';
import { referenceContainers } from '../../sim/seed.js';
import { sshRun } from '../helpers/ssh.js';

const stateDir = '/tmp/liftoff-test-docker-gpu-runtime';

describe('real Docker: a host without the NVIDIA container runtime', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 63,
    docker: 'real',
    noGpuRuntime: ['spark2'],
    vllm: { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
  });
  let error: unknown;

  before(async () => {
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'liftoff-e2e-docker-gpu-runtime',
      args: [simDeploySpec(e2e.sim, { cluster: 'e2e-docker-gpus' }), { trigger: 'cli' }],
    });
    error = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
  });

  it('is refused in preflight, naming the host, what its Docker said and the fix', () => {
    assert.ok(error instanceof WorkflowFailedError, `the deploy failed: ${String(error)}`);
    const cause = error.cause;
    assert.ok(cause instanceof ApplicationFailure);
    assert.equal(cause.type, FailureType.preflightFailed, cause.message);
    assert.match(cause.message, /^ +spark2: gpus: .*could not select device driver/m);
    assert.match(cause.message, /NVIDIA container toolkit/);
    assert.doesNotMatch(cause.message, /^ +spark1: gpus/m, 'spark1 can give GPUs');
  });

  it('stopped nothing: the old units and containers still run on both hosts', async () => {
    const reference = referenceContainers('gb10')
      .map((c) => c.name)
      .sort();
    for (const host of await clusterStatus(stateDir)) {
      assert.ok(
        host.units.every((u) => u.active),
        `${host.name}: every old unit is still active`,
      );
      const running = await sshRun(e2e.sim, host.name, "docker ps --format '{{.Names}}'");
      assert.deepEqual(
        running
          .split('\n')
          .filter((n) => n.length > 0)
          .sort(),
        reference,
        `${host.name}: the old containers still run, and no other`,
      );
    }
  });
});
