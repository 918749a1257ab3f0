// Failure scenarios of the deploy on a real simulated cluster (part of issue 4): a deploy that cannot succeed must
// not tear down the running one, and a failure must name the host and the cause. The refusals that involve Docker
// (a missing image or volume source, no GPU runtime, a stopped daemon) are in docker-preflight.test.ts, on real
// Docker Engines.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { deployFailureOf } from '../helpers/deploy-failure.js';
import { assertReferenceDeploymentRuns } from '../helpers/reference-deployment.js';
import { deployWorkflowId } from '../../src/shared/constants.js';
import { clusterStatus, setFaults, setHostDown, setHostUp } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { holdPort } from '../helpers/port-holder.js';
import type { DeployProgress } from '../../src/workflows/steps.js';

const stateDir = suiteStateDir('failures');
const rayTokenVar = 'SIM_TEST_FAILURES_RAY_TOKEN';
type Spec = ReturnType<typeof simDeploySpec>;

describe('deploy failures on a simulated cluster', () => {
  const e2e = useSuiteCluster('failures', {
    // Both hosts have a management link of their own: no jump host in these scenarios.
    clusterOnly: [],
    vllm: { shards: 6, shardSeconds: 0.2, graphCaptureSeconds: 0.2 },
    // The worker lets specs read the test's variable (its own setting, never the spec's).
    workerPolicy: { fromEnv: [rayTokenVar] },
  });
  // Not shaped like a known credential: only the container's secret list can redact it.
  const rayToken = `failures-ray-secret-${randomBytes(9).toString('hex')}`;
  process.env[rayTokenVar] = rayToken;

  const deployExpectingFailure = (spec: unknown): Promise<ApplicationFailure> =>
    deployFailureOf(e2e.client, 'failures', spec);

  /** The reference state: the old deployment still runs (units active, old containers up and holding GPUs). */
  async function assertOldDeploymentUntouched(): Promise<void> {
    for (const host of await assertReferenceDeploymentRuns(stateDir)) {
      assert.ok(host.gpuProcesses.length >= 3, `${host.name}: GPU memory still held by the old deployment`);
    }
  }

  const base = () => simDeploySpec(e2e.sim, { cluster: 'failures' });

  for (const [name, mutate, expected] of [
    [
      'the model weights are missing',
      (s: Spec) => (s.serve.model = 'Org/Absent-Model'),
      /spark1: model: .*models--Org--Absent-Model/,
    ],
    [
      'the interconnect interface is missing',
      (s: Spec) => (s.ray.env.NCCL_SOCKET_IFNAME = 'enp9s0'),
      /spark2: addresses: .*NCCL_SOCKET_IFNAME=enp9s0/,
    ],
  ] as const) {
    it(`preflight fails when ${name}; nothing on any host is stopped or removed`, async () => {
      const spec = base();
      mutate(spec);
      const failure = await deployExpectingFailure(spec);
      assert.equal(failure.type, 'PreflightFailed');
      assert.match(failure.message, expected);
      assert.match(failure.message, /nothing was stopped or removed/);
      await assertOldDeploymentUntouched();
    });
  }

  it('preflight fails when a host is unreachable, naming it; the other host is untouched', async () => {
    await setHostDown(stateDir, 'spark2', 'sshd');
    try {
      const failure = await deployExpectingFailure(base());
      assert.equal(failure.type, 'PreflightFailed');
      assert.match(failure.message, /spark2: ssh: /);
    } finally {
      await setHostUp(stateDir, 'spark2');
    }
    await assertOldDeploymentUntouched();
  });

  it('GPU memory still held past gpu.clearTimeout fails naming host, PID, process and MiB', async () => {
    setFaults(stateDir, 'spark2', { gpuHeldAfterKillSeconds: 600 });
    try {
      const spec = base();
      spec.gpu.clearTimeout = '8s';
      const failure = await deployExpectingFailure(spec);
      assert.equal(failure.type, 'GpuNotClear');
      assert.match(failure.message, /^verifyGpusClear failed: .*spark2/s);
      assert.match(failure.message, /\b\d+\b.*python3.*\d+ MiB/s);
      assert.doesNotMatch(failure.message, /spark1/, 'spark1 freed its memory');
    } finally {
      setFaults(stateDir, 'spark2', {});
    }
  });

  it('a Ray worker that cannot reach the head fails the Ray gate within its window, naming the host and quoting its log (a ray.env secret it prints redacted)', async () => {
    // The worker's container prints its HF_TOKEN (a ray.env secret) in the very line the failure quotes.
    setFaults(stateDir, 'spark2', { rayCannotReachHead: true, rayJoinErrorPrintsEnv: 'HF_TOKEN' });
    try {
      const plain = base();
      const spec = {
        ...plain,
        ray: {
          ...plain.ray,
          verifyTimeout: '25s',
          env: { ...plain.ray.env, HF_TOKEN: { fromEnv: rayTokenVar } },
        },
      };
      const started = Date.now();
      const failure = await deployExpectingFailure(spec);
      const seconds = (Date.now() - started) / 1000;
      assert.equal(failure.type, 'RayClusterIncomplete');
      assert.match(failure.message, /spark2/);
      assert.match(failure.message, /Failed to connect to GCS at address/);
      // The quoted line carried the secret: it is redacted in the message and nowhere in the history.
      assert.match(failure.message, /Failed to connect to GCS at address .* HF_TOKEN=\[redacted\]/);
      assert.ok(!failure.message.includes(rayToken), 'the ray.env secret is not in the failure message');
      const history = await e2e.client.workflow.getHandle(deployWorkflowId('failures')).fetchHistory();
      const historyText = JSON.stringify(history, (_key, value: unknown) =>
        value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value,
      );
      assert.ok(!historyText.includes(rayToken), 'the ray.env secret is nowhere in the history');
      // Ended on Ray's own definitive line (the worker's `ray start` gave up, or still runs but cannot join), not by
      // spending ray.verifyTimeout ("not joined yet" otherwise).
      assert.match(
        failure.message,
        /spark2: container (vllm_qwen35 exited \(code \d+\)|running but cannot join the head): Failed to connect to GCS/,
      );
      console.log(
        `FIGURE: Ray gate failed ${seconds.toFixed(1)} s into the deploy, naming spark2 and quoting its GCS line`,
      );
      // onFailure defaults to leave: the containers stay up for inspection, and the failure says so.
      const details = failure.details?.[0] as { teardown?: string[] };
      assert.deepEqual(details.teardown, ['left for inspection (onFailure: leave)']);
      const head = (await clusterStatus(stateDir)).find((h) => h.name === 'spark1');
      assert.ok(
        head?.containers.some((c) => c.name === 'vllm_qwen35' && c.running),
        'the Ray head container was left running',
      );
    } finally {
      setFaults(stateDir, 'spark2', {});
    }
  });

  it('serve.port held on the head once Ray runs fails checkServePort, naming the port and its listener; vllm serve never starts', async () => {
    const spark1 = e2e.sim.hosts.find((h) => h.name === 'spark1');
    assert.ok(spark1);
    const spec = base();
    // A port no old unit or container of the reference state holds, so only this process does.
    spec.serve.port = 8123;
    const holder = await holdPort(e2e.sim, spark1, spec.serve.port, '0.0.0.0');
    try {
      const failure = await deployExpectingFailure(spec);
      assert.equal(failure.type, 'ServePortInUse', failure.message);
      assert.match(
        failure.message,
        /^checkServePort failed: serve\.port 8123 is in use on the head spark1 \(LISTEN[^)]*:8123 [^)]*\) with the old services and containers gone; .* pick another serve\.port\./,
      );
      const { progress } = failure.details?.[0] as { progress: DeployProgress };
      const status = new Map(progress.steps.map((st) => [st.name, st.status]));
      assert.equal(status.get('verifyRayCluster'), 'done');
      assert.equal(status.get('checkServePort'), 'failed');
      assert.equal(status.get('launchServe'), 'pending', 'vllm serve was never started');
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
