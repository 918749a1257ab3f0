// Preflight refusals that involve Docker, on real Docker Engines. A host whose Docker cannot give containers GPUs
// (no NVIDIA container toolkit): the deploy must refuse in preflight, naming the host and the fix, before anything on
// any host is stopped. Before preflight asked, the old units and containers were stopped on both hosts and only then
// did the Ray worker's `docker run` fail (`could not select device driver "" with capabilities: [[gpu]]`). The image
// missing on one host, and a volume source missing on one host (which a real engine would have made an empty folder
// of root's and mounted), are refused the same way. A stopped daemon: refused with its own words and the fix, the
// question of whether it runs asked once.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import { FailureType } from '../../src/shared/failures.js';
import { simDeploySpec } from '../../sim/spec.js';
import { clusterStatus, stopDockerDaemon } from '../../sim/cluster.js';
import { referenceContainers, referenceImages } from '../../sim/seed.js';
import { sshRun } from '../helpers/ssh.js';

const stateDir = '/tmp/liftoff-test-docker-preflight';
const cluster = 'e2e-docker-preflight';

/** Starts a deploy of the cluster and returns how it failed (undefined when it did not). */
async function deployError(e2e: ReturnType<typeof useE2eCluster>, workflowId: string): Promise<unknown> {
  const handle = await e2e.client.workflow.start(deploy, {
    taskQueue: TASK_QUEUE,
    workflowId,
    args: [simDeploySpec(e2e.sim, { cluster: 'e2e-docker-preflight' }), { trigger: 'cli' }],
  });
  return handle.result().then(
    () => undefined,
    (e: unknown) => e,
  );
}

/** A deploy of `spec` that preflight refused: its message. */
async function refusal(
  e2e: ReturnType<typeof useE2eCluster>,
  workflowId: string,
  spec: unknown,
): Promise<string> {
  const handle = await e2e.client.workflow.start(deploy, {
    taskQueue: TASK_QUEUE,
    workflowId,
    args: [spec, { trigger: 'cli' }],
  });
  return preflightMessage(
    await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    ),
  );
}

function preflightMessage(error: unknown): string {
  assert.ok(error instanceof WorkflowFailedError, `the deploy failed: ${String(error)}`);
  const cause = error.cause;
  assert.ok(cause instanceof ApplicationFailure);
  assert.equal(cause.type, FailureType.preflightFailed, cause.message);
  return cause.message;
}

describe('real Docker: preflight refusals', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 63,
    docker: 'real',
    noGpuRuntime: ['spark2'],
    vllm: { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
  });
  let error: unknown;

  before(async () => {
    error = await deployError(e2e, 'liftoff-e2e-docker-gpu-runtime');
  });

  it('a host without the NVIDIA container runtime is refused, naming the host, what its Docker said and the fix', () => {
    const message = preflightMessage(error);
    assert.match(message, /^ +spark2: gpus: .*could not select device driver/m);
    assert.match(message, /NVIDIA container toolkit/);
    assert.doesNotMatch(message, /^ +spark1: gpus/m, 'spark1 can give GPUs');
  });

  /** Nothing was stopped: the old units are active and the old containers run, and no other, on both hosts. */
  async function assertNothingStopped(): Promise<void> {
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
  }

  it('that refusal stopped nothing: the old units and containers still run on both hosts', async () => {
    await assertNothingStopped();
  });

  it('the image missing on one host is refused, naming that host and the fix; nothing is stopped', async () => {
    const image = simDeploySpec(e2e.sim).ray.image;
    const [, other] = referenceImages;
    await sshRun(e2e.sim, 'spark1', `docker rmi ${image}`);
    try {
      const message = await refusal(e2e, 'liftoff-e2e-docker-no-image', simDeploySpec(e2e.sim, { cluster }));
      assert.match(
        message,
        new RegExp(
          `^ +spark1: image: image ${image} is not on the host \\(Error: No such image: ${image}\\): run docker pull ${image} there, or docker load it$`,
          'm',
        ),
      );
      assert.doesNotMatch(message, /^ +spark2: image/m, 'spark2 has the image');
      await assertNothingStopped();
    } finally {
      await sshRun(e2e.sim, 'spark1', `docker tag ${other} ${image}`);
    }
  });

  it('a volume source missing on one host is refused, naming that host and the fix; nothing is stopped or created', async () => {
    const source = '/home/aurora/liftoff-data';
    await sshRun(e2e.sim, 'spark1', `mkdir -p ${source}`);
    const spec = simDeploySpec(e2e.sim, { cluster });
    spec.ray.volumes.push(`${source}:/data:ro`);
    const message = await refusal(e2e, 'liftoff-e2e-docker-no-volume', spec);
    assert.match(
      message,
      new RegExp(
        `^ +spark2: volumes: missing on the host: ${source}\\. Create them \\(mkdir -p\\) or fix ray\\.volumes; docker would create an empty root-owned folder instead$`,
        'm',
      ),
    );
    assert.doesNotMatch(message, /^ +spark1: volumes/m, 'spark1 has the folder');
    await assertNothingStopped();
    assert.equal(
      (await sshRun(e2e.sim, 'spark2', `test -e ${source} && echo there || echo absent`)).trim(),
      'absent',
      'no docker run made the folder on spark2',
    );
  });

  it('a stopped daemon is refused with what docker said, asking once whether it runs, and the fix', async () => {
    await stopDockerDaemon(stateDir, 'spark1');
    const message = preflightMessage(await deployError(e2e, 'liftoff-e2e-docker-daemon-stopped'));
    const line = /^ +spark1: docker: .*$/m.exec(message)?.[0] ?? '';
    assert.match(
      line,
      /Cannot connect to the Docker daemon at unix:\/\/\S+\. Is the docker daemon running\?/,
    );
    assert.match(line, /systemctl start docker/);
    assert.equal(line.match(/daemon running/gi)?.length, 1, line);
    // `npm run sim -- status` says so too, in the daemon's words.
    const spark1 = (await clusterStatus(stateDir)).find((h) => h.name === 'spark1');
    assert.equal(spark1?.dockerd, 'down');
    assert.match(
      spark1.dockerdError ?? '',
      /^Cannot connect to the Docker daemon at unix:\/\/\S+\. Is the docker daemon running\?$/,
    );
    assert.ok(
      (await clusterStatus(stateDir)).find((h) => h.name === 'spark2')?.units.every((u) => u.active),
      "spark2's old units still run",
    );
  });
});
