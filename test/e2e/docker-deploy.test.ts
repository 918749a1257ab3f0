// The whole deploy on two simulated hosts that each run a real Docker Engine (sim/real-docker.ts): real Temporal dev
// server, real worker, real sshd, real dockerd and containerd and runc per host; inside the containers the
// simulated ray and vllm, and nvidia-smi on the hosts, simulate the GPUs. Every check asks the hosts' own Docker.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { useSuiteCluster } from '../helpers/suites.js';
import { assertHeadServes } from '../helpers/serving.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import { simDeploySpec } from '../../sim/spec.js';
import { referenceContainers } from '../../sim/seed.js';
import { sshRun } from '../helpers/ssh.js';

const cluster = 'e2e-docker-deploy';

describe('deploy on 2 simulated hosts with a real Docker Engine each', () => {
  const e2e = useSuiteCluster('docker-deploy', {
    docker: 'real',
    vllm: { shards: 8, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
  });
  let result: DeployResult;
  /** Every container of each host before the deploy: the reference ones, seeded on the real engines. */
  const before_: Record<string, string[]> = {};

  before(async () => {
    for (const h of e2e.sim.hosts) before_[h.name] = await containerNames(h.name);
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'liftoff-e2e-docker-deploy',
      args: [simDeploySpec(e2e.sim, { cluster }), { trigger: 'cli' }],
    });
    result = await handle.result();
  });

  async function containerNames(host: string): Promise<string[]> {
    const out = await sshRun(e2e.sim, host, "docker ps -a --format '{{.Names}}'");
    return out
      .split('\n')
      .filter((n) => n.length > 0)
      .sort();
  }

  it('the hosts ran the reference containers on their real engines before the deploy', () => {
    const reference = referenceContainers('gb10')
      .map((c) => c.name)
      .sort();
    for (const h of e2e.sim.hosts) assert.deepEqual(before_[h.name], reference, h.name);
  });

  it('removes the old containers: one container per host, labelled with the cluster and its role, running', async () => {
    for (const [i, h] of e2e.sim.hosts.entries()) {
      const out = await sshRun(
        e2e.sim,
        h.name,
        `docker ps -a --format '{{.Names}} {{.State}} {{.Label "liftoff.cluster"}} {{.Label "liftoff.role"}}'`,
      );
      assert.deepEqual(
        out.trim().split('\n'),
        [`vllm_qwen35 running ${cluster} ${i === 0 ? 'head' : 'worker'}`],
        `${h.name}'s containers`,
      );
    }
  });

  it('no old GPU process is left; the hosts agree on the image ID', async () => {
    const ids = new Set<string>();
    for (const h of e2e.sim.hosts) {
      const apps = await sshRun(
        e2e.sim,
        h.name,
        'nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader',
      );
      assert.ok(!/python3/.test(apps), `${h.name}: no old GPU process left: ${apps}`);
      ids.add(
        (
          await sshRun(
            e2e.sim,
            h.name,
            'docker image inspect --format {{.Id}} hellohal2064/vllm-qwen3.5-gb10',
          )
        ).trim(),
      );
    }
    assert.equal(ids.size, 1, `one image ID on every host: ${[...ids].join(', ')}`);
  });

  it('has a Ray cluster of 2 nodes and 2 GPUs, inside the real containers', async () => {
    const status = parseRayStatus(await sshRun(e2e.sim, 'spark1', 'docker exec vllm_qwen35 ray status'));
    assert.equal(status.activeNodes.length, 2);
    assert.deepEqual(status.resources.GPU, { used: 2, total: 2 });
  });

  it('the server answers on the head, and the smoke test got an answer', async () => {
    await assertHeadServes(e2e.sim, result);
    process.stdout.write(
      `# deploy on real Docker took ${result.totalSeconds.toFixed(1)} s, load ${result.loadSeconds.toFixed(1)} s\n`,
    );
  });
});
