// What the worker-wide SSH pool buys a whole deploy (issue 18): on the reference layout (spark2 reachable only
// through spark1, its jump host), every activity of a deploy rides the worker's one connection per host, so the
// hosts' own sshd logs count at most 2 logins per host (the target: ≤ 1.5, ≤ 2 behind a jump host).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import { simDeploySpec } from '../../sim/spec.js';
import { countSshHandshakes } from '../../sim/cluster.js';

const stateDir = suiteStateDir('ssh-handshakes');

describe('SSH handshakes per host per deploy', () => {
  const e2e = useSuiteCluster('ssh-handshakes', {
    vllm: { shards: 4, shardSeconds: 0.05, graphCaptureSeconds: 0.2 },
  });

  it('a deploy behind a jump host logs in at most twice per host (once, with the connection kept)', async () => {
    const before = new Map(e2e.sim.hosts.map((h) => [h.name, countSshHandshakes(stateDir, h.name)]));
    const spec = simDeploySpec(e2e.sim, { cluster: 'e2e-handshakes' });
    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'liftoff-e2e-handshakes',
      args: [spec, { trigger: 'cli' }],
    });
    await handle.result();
    const perHost = Object.fromEntries(
      e2e.sim.hosts.map((h) => [h.name, countSshHandshakes(stateDir, h.name) - (before.get(h.name) ?? 0)]),
    );
    console.log(
      `FIGURE: SSH handshakes per host for one deploy (spark2 behind spark1): ${JSON.stringify(perHost)}`,
    );
    for (const [host, n] of Object.entries(perHost)) {
      assert.ok(n >= 1, `${host}: the deploy logged in`);
      assert.ok(n <= 2, `${host}: ${n} SSH logins for one deploy`);
    }
  });
});
