// Preflight's companion checks (issue 31) on two simulated hosts with simulated Docker, the real dev server and
// worker: a spec whose companions do not fit beside the main model is refused before anything is stopped, and so is
// a companion port held by a process the deploy would not stop. Each case builds on the state the one before left:
// the first deploys a spec without companions that serves, and every refusal after it leaves that server as it was.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { simDeploySpec } from '../../sim/spec.js';
import { headLaunches } from '../helpers/host-logs.js';
import { holdPort } from '../helpers/port-holder.js';
import { assertHeadServes, simServedModel } from '../helpers/serving.js';
import { sshRun } from '../helpers/ssh.js';
import { useSuiteCluster } from '../helpers/suites.js';
import { embeddingsCompanion, rerankerCompanion } from '../helpers/companions.js';
import { FailureType } from '../../src/shared/failures.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { progressQuery } from '../../src/workflows/deploy.js';

const cluster = 'companions-preflight';

describe('companion preflight: refused before anything is stopped', () => {
  const e2e = useSuiteCluster('companions-preflight', {
    vllm: { shards: 2, shardSeconds: 0.1, graphCaptureSeconds: 0.2 },
  });
  const base = () => simDeploySpec(e2e.sim, { cluster });
  const embeddings = (memoryMiB: number) => embeddingsCompanion(e2e.sim.hosts[0]!.name, { memoryMiB });

  /** What runs on each host, as its own Docker says (names and IDs): a stop or a relaunch would change it. */
  const containers = async (): Promise<string[]> =>
    Promise.all(
      e2e.sim.hosts.map(async (h) =>
        (await sshRun(e2e.sim, h.name, `docker ps --format '{{.Names}} {{.ID}}'`)).trim(),
      ),
    );
  const serving = async (): Promise<boolean> => {
    const res = await fetch(`http://${e2e.sim.hosts[0]!.address}:30000/v1/models`);
    const body = (await res.json()) as { data: { id: string }[] };
    return res.status === 200 && body.data.some((m) => m.id === simServedModel);
  };

  /** Runs a deploy that must be refused in preflight: its failure, and that stopServices never ran. */
  async function refused(spec: unknown): Promise<ApplicationFailure> {
    const handle = await startDeploy(e2e.client, spec as Parameters<typeof startDeploy>[1], 'cli');
    const err = await handle.result().then(
      () => assert.fail('the deploy succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowFailedError, String(err));
    assert.ok(err.cause instanceof ApplicationFailure, String(err.cause));
    const steps = (await handle.query(progressQuery)).steps;
    assert.equal(steps.find((s) => s.name === 'preflight')?.status, 'failed');
    assert.equal(steps.find((s) => s.name === 'stopServices')?.status, 'pending', 'nothing was stopped');
    return err.cause;
  }

  it('a good spec serves; one whose companion budget does not fit is refused with CompanionsDoNotFit, and the server is untouched', async () => {
    const result = await (await startDeploy(e2e.client, base(), 'cli')).result();
    await assertHeadServes(e2e.sim, result);
    const before = await containers();
    const launches = headLaunches(e2e.sim);

    // 0.85 of the GB10's 121690 MiB is 103437 MiB; 20480 MiB more does not fit.
    const failure = await refused({ ...base(), companions: [embeddings(20480)] });
    assert.equal(failure.type, FailureType.companionsDoNotFit, failure.message);
    assert.match(failure.message, /^preflight failed: nothing was stopped or removed:\n/);
    assert.ok(
      failure.message.includes(
        "spark1: companionMemory: on spark1, the main model's share, 103437 MiB (serve.args --gpu-memory-utilization 0.85, of 121690 MiB, MemTotal (unified memory)) and the companions' budgets, 20480 MiB (embeddings 20480 MiB (companions[0].memoryMiB)), come to 123917 MiB, 2227 MiB more than the host's 121690 MiB: lower serve.args --gpu-memory-utilization (to at most 0.83 here), or companions[0].memoryMiB",
      ),
      failure.message,
    );
    assert.match(failure.message, /serve\.args --gpu-memory-utilization/);
    assert.match(failure.message, /companions\[0\]\.memoryMiB/);
    assert.doesNotMatch(failure.message, /spark2: companion/, 'spark2 runs no companion and reads none');
    assert.deepEqual(await containers(), before, 'the serving containers are untouched');
    assert.equal(headLaunches(e2e.sim), launches, 'no launch');
    assert.equal(await serving(), true, 'the first deploy still serves');
  });

  it('a companion port held by an unrelated process, with no cleanup listed, is refused with CompanionPortInUse', async () => {
    const spark2 = e2e.sim.hosts[1]!;
    const before = await containers();
    const holder = await holdPort(e2e.sim, spark2, 8002, spark2.clusterIp);
    try {
      const spec = {
        ...base(),
        cleanup: { services: [], containers: [], disableServices: false },
        companions: [rerankerCompanion(spark2.name, { memoryMiB: 8192 })],
      };
      const failure = await refused(spec);
      assert.equal(failure.type, FailureType.companionPortInUse, failure.message);
      assert.match(
        failure.message,
        new RegExp(
          `spark2: companionPorts: companions\\[0\\]\\.port 8002 is in use on spark2 \\(LISTEN .*${spark2.clusterIp.replaceAll('.', '\\.')}:8002 .*\\), and the deploy stops nothing that could hold it`,
        ),
      );
      assert.match(failure.message, /pick another companions\[0\]\.port/);
    } finally {
      holder.kill('SIGKILL');
    }
    assert.deepEqual(await containers(), before, 'the serving containers are untouched');
    assert.equal(await serving(), true, 'the first deploy still serves');
  });

  it("a companion whose own image is not on its host, or whose volume's host path is missing, is refused in preflight", async () => {
    const before = await containers();
    const spec = {
      ...base(),
      companions: [
        embeddings(6144),
        {
          ...rerankerCompanion(e2e.sim.hosts[0]!.name),
          image: 'liftoff-test/reranker:absent',
          volumes: ['/srv/liftoff-absent/reranker:/models:ro'],
        },
      ],
    };
    const failure = await refused(spec);
    assert.equal(failure.type, FailureType.preflightFailed, failure.message);
    assert.match(
      failure.message,
      /spark1: companionImages: image liftoff-test\/reranker:absent \(companions\[1\]\.image\) is not on spark1 \(Error: No such image: liftoff-test\/reranker:absent\): run docker pull/,
    );
    assert.match(
      failure.message,
      /spark1: companionVolumes: missing on spark1: \/srv\/liftoff-absent\/reranker \(companions\[1\]\.volumes of reranker\)/,
    );
    assert.doesNotMatch(failure.message, /companionMemory|companionPorts/, 'the rest of the companions pass');
    assert.deepEqual(await containers(), before, 'the serving containers are untouched');
    assert.equal(await serving(), true, 'the first deploy still serves');
  });
});
