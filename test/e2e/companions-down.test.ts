// A companion service (issue 31) seen everywhere its deploy is, and gone after `liftoff down`, on two simulated
// hosts (simulated Docker) with the real dev server and worker: one embeddings server on spark1 beside the 2-host
// model. `deploy --follow`'s plain lines, `liftoff status` and the postmortem show it under startCompanions; down
// removes its container (labelled liftoff.cluster) with the Ray container and names both. Times are printed as
// figures, never asserted.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simDeploySpec } from '../../sim/spec.js';
import { sshRun } from '../helpers/ssh.js';
import { useSuiteCluster } from '../helpers/suites.js';
import { embeddingsCompanion } from '../helpers/companions.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { followPlain } from '../../src/cli/follow.js';
import { clusterStatus, renderStatus } from '../../src/commands/status.js';
import { renderDown, takeDown } from '../../src/commands/down.js';
import { buildPostmortem, renderHtml, renderMarkdown } from '../../src/report/index.js';
import { deployWorkflowId } from '../../src/shared/constants.js';
import { formatDuration } from '../../src/config/duration.js';

const cluster = 'companions-down';

describe('a companion beside the 2-host model: followed, in status and the postmortem, removed by down', () => {
  const e2e = useSuiteCluster('companions-down', {
    vllm: { shards: 4, shardSeconds: 0.1, graphCaptureSeconds: 0.2 },
  });
  const figures: string[] = [];
  after(() => process.stdout.write(figures.map((f) => `# FIGURE: ${f}\n`).join('')));

  const spark1 = () => e2e.sim.hosts[0]!.name;
  const specOf = () => ({
    ...simDeploySpec(e2e.sim, { cluster }),
    companions: [embeddingsCompanion(spark1())],
  });
  /** `docker ps -a` on the host: NAME CLUSTER-LABEL a line. */
  const containers = async (host: string): Promise<string[]> =>
    (await sshRun(e2e.sim, host, `docker ps -a --format '{{.Names}} {{.Label "liftoff.cluster"}}'`))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');

  it('deploy --follow shows the companion under its step; status and the postmortem name it', async () => {
    const handle = await startDeploy(e2e.client, specOf(), 'cli');
    const lines: string[] = [];
    const result = handle.result();
    await followPlain(handle, result, (line) => lines.push(line));
    await result;
    const started = lines.findIndex((l) => l === '▶ Start the companion services');
    const ready = lines.findIndex((l) =>
      /^ {2}embeddings on spark1: ready in \S+ — an embedding of \d+ dimensions$/.test(l),
    );
    const done = lines.findIndex((l) => l.startsWith('✔ Start the companion services'));
    assert.ok(started !== -1 && ready > started && done > ready, lines.join('\n'));

    const status = renderStatus(await clusterStatus(e2e.client, cluster));
    assert.match(
      status,
      /^startCompanions +done .*\n {2}embeddings@spark1 +ready +\S+ +an embedding of \d+ dimensions$/m,
      status,
    );

    const pm = buildPostmortem(await e2e.client.workflow.getHandle(deployWorkflowId(cluster)).fetchHistory());
    assert.equal(pm.companions?.length, 1, JSON.stringify(pm.companions));
    const [c] = pm.companions ?? [];
    assert.equal(c?.name, 'embeddings');
    assert.equal(c?.host, spark1());
    assert.equal(c?.outcome, 'ready');
    assert.ok((c?.probes ?? 0) >= 1);
    assert.match(
      renderMarkdown(pm),
      /^\| `embeddings` \| `spark1` \| ready \| \+\S+s \| \S+ \| \d+ \| `an embedding of \d+ dimensions` \|$/m,
    );
    assert.match(
      renderHtml(pm),
      /<tr data-companion="embeddings"><td>embeddings<\/td><td>spark1<\/td><td class="outcome-ready">ready<\/td>/,
    );
    figures.push(`companion embeddings ready in ${formatDuration(c?.durationMs ?? 0)} (${c?.probes} probes)`);
  });

  it('down removes the companion container with the Ray container, and says so', async () => {
    const before = await containers(spark1());
    assert.ok(before.includes(`liftoff-embeddings ${cluster}`), before.join('\n'));
    const t0 = Date.now();
    const down = await takeDown(e2e.client, cluster);
    figures.push(`liftoff down with a companion: ${formatDuration(Date.now() - t0)}`);
    assert.equal(down.alreadyDown, false);
    const head = down.hosts.find((h) => h.host === spark1());
    assert.equal(
      head?.removed,
      `spark1: removed vllm_qwen35, liftoff-embeddings (Ray, the server and the companion embeddings stopped)`,
    );
    assert.match(
      renderDown(down),
      /^ {2}spark1: removed vllm_qwen35, liftoff-embeddings \(.*\); GPUs clear$/m,
    );
    for (const h of e2e.sim.hosts)
      assert.deepEqual(
        (await containers(h.name)).filter((l) => l.endsWith(` ${cluster}`) || l.startsWith('liftoff-')),
        [],
        `${h.name}: no container of ${cluster} is left`,
      );
  });
});
