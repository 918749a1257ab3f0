// A deploy whose SSH user is not root but an ordinary user in the docker group, as at the reference site, on two
// simulated hosts that each run a real Docker Engine (sim/real-docker.ts): the containers' processes belong to root,
// which the user may not signal, and liftoff's liveness checks (the Ray workers' main process during the load, the
// server's launch marker, the head's polls) must still tell a running process from a gone one (issue 27 finding 1:
// `kill -0` answered "Operation not permitted" and the load failed at its first worker poll).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { useSuiteCluster } from '../helpers/suites.js';
import { assertHeadServes } from '../helpers/serving.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import { simDeploySpec } from '../../sim/spec.js';
import { simContainerVolumes } from '../../sim/real-docker.js';
import { sshRun } from '../helpers/ssh.js';
import { embeddingsCompanion } from '../helpers/companions.js';
import { deployWorkflowId } from '../../src/shared/constants.js';
import { progressQuery } from '../../src/workflows/deploy.js';

const cluster = 'e2e-docker-nonroot';
const sshUser = 'liftoff';

describe('deploy as a non-root SSH user in the docker group, on real Docker Engines', () => {
  const e2e = useSuiteCluster('docker-nonroot', {
    docker: 'real',
    sshUser,
    vllm: { shards: 8, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
  });
  let result: DeployResult;
  /** What each host's nvidia-smi showed the SSH user before the deploy: the reference containers' processes. */
  const gpuAppsBefore: Record<string, string[]> = {};

  before(async () => {
    for (const h of e2e.sim.hosts)
      gpuAppsBefore[h.name] = (
        await sshRun(
          e2e.sim,
          h.name,
          'nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader',
        )
      )
        .split('\n')
        .filter((l) => l.length > 0);
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: deployWorkflowId(cluster),
      // A companion too: its preflight reads (its volumes' host paths), its docker run and its probe's docker
      // inspect run as the same user.
      args: [
        {
          ...simDeploySpec(e2e.sim, { cluster }),
          companions: [
            embeddingsCompanion(e2e.sim.hosts[0]!.name, { volumes: simContainerVolumes(e2e.sim) }),
          ],
        },
        { trigger: 'cli' },
      ],
    });
    result = await handle.result();
  });

  it('every host logs the SSH user in as itself: not root, in the docker group', async () => {
    for (const h of e2e.sim.hosts) {
      const [user, uid, groups] = (await sshRun(e2e.sim, h.name, 'id -un; id -u; id -Gn')).trim().split('\n');
      assert.equal(user, sshUser, h.name);
      assert.notEqual(uid, '0', h.name);
      assert.ok(groups?.split(' ').includes('docker'), `${h.name}: groups ${groups}`);
    }
  });

  it("the user's nvidia-smi showed the old containers' processes (root's, in other PID namespaces) before the deploy", () => {
    for (const h of e2e.sim.hosts)
      assert.equal(gpuAppsBefore[h.name]?.length, 3, `${h.name}: ${gpuAppsBefore[h.name]?.join('; ')}`);
  });

  it("each container's main process belongs to root, and the SSH user may not signal it", async () => {
    for (const h of e2e.sim.hosts) {
      const out = await sshRun(
        e2e.sim,
        h.name,
        "p=$(docker inspect --format '{{.State.Pid}}' vllm_qwen35); stat -c %u /proc/$p; kill -0 $p 2>&1; echo kill=$?",
      );
      const [owner, ...rest] = out.trim().split('\n');
      assert.equal(owner, '0', `${h.name}: the main process's owner`);
      assert.match(rest.join('\n'), /not permitted[\s\S]*kill=[1-9]/i, `${h.name}: ${out}`);
    }
  });

  it('the load completes and the server answers: the deploy reaches serving', async () => {
    await assertHeadServes(e2e.sim, result);
    process.stdout.write(
      `# deploy as a non-root user on real Docker took ${result.totalSeconds.toFixed(1)} s, load ${result.loadSeconds.toFixed(1)} s\n`,
    );
  });

  it("the companion starts and answers its probe as that user, and its container is root's", async () => {
    const progress = await e2e.client.workflow.getHandle(deployWorkflowId(cluster)).query(progressQuery);
    assert.deepEqual(
      progress.companions?.map((c) => [c.name, c.status, c.detail]),
      [['embeddings', 'ready', 'an embedding of 1024 dimensions']],
    );
    const spark1 = e2e.sim.hosts[0]!.name;
    const out = await sshRun(
      e2e.sim,
      spark1,
      "docker inspect --format '{{.State.Status}} {{.State.Pid}}' liftoff-embeddings | { read s p; echo $s; stat -c %u /proc/$p; }",
    );
    assert.deepEqual(out.trim().split('\n'), ['running', '0'], out);
  });
});
