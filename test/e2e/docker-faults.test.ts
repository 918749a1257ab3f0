// Container faults, cancel and teardown on two simulated hosts that each run a real Docker Engine
// (sim/real-docker.ts): real Temporal dev server, real worker, real sshd, real dockerd per host. A container that is
// not liftoff's holds the deploy's name on a host; the worker's Ray container is removed under a supervised,
// serving cluster; it is removed mid-load (onFailure: teardown); and `liftoff cancel` stops a load. Every check
// asks the hosts' own Docker; a bystander container that is not the cluster's must outlive all of it.
// `npm run sim -- status` is checked here too: on real Docker it lists the daemons' containers.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { runLiftoff } from '../helpers/cli.js';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { headLaunches } from '../helpers/host-logs.js';
import { sshRun } from '../helpers/ssh.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitFor, waitUntil } from '../helpers/wait.js';
import { deployWorkflowId, superviseWorkflowId } from '../../src/shared/constants.js';
import { FailureType } from '../../src/shared/failures.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { progressQuery } from '../../src/workflows/index.js';
import {
  stopSupervisionSignal,
  supervisionQuery,
  type SuperviseState,
} from '../../src/workflows/supervise-api.js';
import type { DeployProgress } from '../../src/workflows/steps.js';
import type { CancelReport } from '../../src/commands/cancel.js';
import type { HostStatus } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';

const execFileAsync = promisify(execFile);
const stateDir = suiteStateDir('docker-faults');
const cluster = 'e2e-docker-faults';
const workflowId = deployWorkflowId(cluster);
const image = 'hellohal2064/vllm-qwen3.5-gb10';
const container = 'vllm_qwen35';
const supervise = { interval: '2s', failureThreshold: 2, backoff: '1s', maxRelaunches: 3, window: '1h' };

describe('container faults, cancel and teardown on real Docker Engines', () => {
  const e2e = useSuiteCluster('docker-faults', {
    docker: 'real',
    // About 8 s of load: long enough to act in the middle of it.
    vllm: { shards: 24, shardSeconds: 0.3, graphCaptureSeconds: 0.3 },
  });
  const spec = (extra: Record<string, unknown> = {}) => ({
    ...simDeploySpec(e2e.sim, { cluster }),
    ...extra,
  });
  const specFile = join(tempDir('liftoff-docker-faults-'), 'cluster.yaml');
  const liftoff = (args: string[]) => runLiftoff(args, { ...process.env, ...e2e.temporalEnv });
  const progress = (): Promise<DeployProgress> =>
    e2e.client.workflow.getHandle(workflowId).query(progressQuery);

  /** `docker ps -a` on the host, as NAME STATE CLUSTER-LABEL LAUNCH-LABEL lines, sorted. */
  async function containers(host: string): Promise<string[]> {
    const out = await sshRun(
      e2e.sim,
      host,
      `docker ps -a --format '{{.Names}} {{.State}} {{.Label "liftoff.cluster"}} {{.Label "liftoff.launch"}}'`,
    );
    return out
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => l.trimEnd())
      .sort();
  }

  /** Waits for the current deploy to be this far into its load. */
  const loading = (shards: number): Promise<void> =>
    waitUntil(
      `the load past shard ${shards}`,
      async () => ((await progress()).load?.shardsDone ?? 0) >= shards,
      90_000,
    );

  before(async () => {
    writeFileSync(specFile, stringify(spec()));
    // Not the cluster's, not in its cleanup list: nothing liftoff does may touch it.
    for (const h of e2e.sim.hosts)
      await sshRun(e2e.sim, h.name, `docker run -d --init --name bystander --entrypoint sleep ${image} 3600`);
  });

  it("a container that is not liftoff's holding the deploy's name is removed, and the deploy's own takes the name", async () => {
    const foreignId = (
      await sshRun(
        e2e.sim,
        'spark2',
        `docker run -d --init --name ${container} --label owner=someone-else --entrypoint sleep ${image} 3600`,
      )
    ).trim();
    assert.match(foreignId, /^[0-9a-f]{64}$/);
    const handle = await startDeploy(e2e.client, spec(), 'cli');
    const result = await handle.result();
    const steps = (await handle.query(progressQuery)).steps;
    const removed = steps.find((s) => s.name === 'removeContainers')?.detail ?? '';
    assert.match(removed, new RegExp(`spark2: removed [^;]*\\b${container}\\b`), removed);
    const [now] = JSON.parse(await sshRun(e2e.sim, 'spark2', `docker inspect ${container}`)) as [
      { Id: string; State: { Status: string }; Config: { Labels: Record<string, string> } },
    ];
    assert.notEqual(now.Id, foreignId, 'another container holds the name now');
    assert.equal(now.State.Status, 'running');
    assert.equal(now.Config.Labels['liftoff.cluster'], cluster);
    assert.equal(now.Config.Labels['liftoff.launch'], result.launchId);
    assert.equal(now.Config.Labels.owner, undefined, "the foreign container's label is gone with it");
  });

  it("`npm run sim -- status` lists the real daemons' containers, as `docker ps -a` on each host does", async () => {
    const cli = (...args: string[]) =>
      execFileAsync(
        process.execPath,
        ['--import', 'tsx', 'sim/cli.ts', '--state-dir', stateDir, 'status', ...args],
        {
          env: { ...process.env, NO_COLOR: '1' },
          timeout: 60_000,
        },
      );
    const hosts = JSON.parse((await cli('--json')).stdout) as HostStatus[];
    for (const h of e2e.sim.hosts) {
      const listed = hosts.find((s) => s.name === h.name);
      assert.equal(listed?.dockerd, 'up', h.name);
      const docker = (await containers(h.name)).map((l) => {
        const [name, state] = l.split(' ');
        return `${name} ${state === 'running'}`;
      });
      assert.ok(docker.length >= 2, `${h.name}: ${docker.join('; ')}`);
      assert.deepEqual(listed.containers.map((c) => `${c.name} ${c.running}`).sort(), docker, h.name);
    }
    const text = (await cli()).stdout;
    assert.match(text, /^spark1 .*sshd up, link up, dockerd up$/m, text);
    assert.match(text, new RegExp(`^  container ${container} \\(${image}\\): running$`, 'm'), text);
    assert.match(text, new RegExp(`^  container bystander \\(${image}\\): running$`, 'm'), text);
  });

  it("the worker's Ray container removed under supervision: lost, named, relaunched, serving again", async () => {
    const handle = await startDeploy(e2e.client, spec({ supervise }), 'cli');
    await handle.result();
    const supervisor = e2e.client.workflow.getHandle(superviseWorkflowId(cluster));
    const state = () => supervisor.query(supervisionQuery);
    const until = (what: string, pred: (s: SuperviseState) => boolean, ms: number) =>
      waitFor(
        what,
        async () => {
          const s = await state().catch(() => undefined);
          return s && pred(s) ? s : undefined;
        },
        ms,
      );
    await until(
      'a passed round',
      (s) => s.status === 'serving' && s.lastProbe?.verdict === 'passed',
      120_000,
    );
    const launchesBefore = headLaunches(e2e.sim);
    await sshRun(e2e.sim, 'spark2', `docker rm -f ${container}`);
    const removedAt = Date.now();
    const lost = await until('lost', (s) => s.status !== 'serving', 120_000);
    const lostAt = lost.lostAtMs ?? Date.now();
    const cause = lost.recentFailures.at(-1)?.failures.join('; ') ?? '';
    assert.match(cause, new RegExp(`spark2 container: the Ray container ${container} is gone`), cause);
    const back = await until(
      'serving again',
      (s) => s.status === 'serving' && s.relaunches.length === 1,
      300_000,
    );
    const entry = back.relaunches[0]!;
    assert.equal(entry.outcome, 'serving', entry.error);
    assert.equal(headLaunches(e2e.sim), launchesBefore + 1, 'exactly one more launch');
    for (const [i, h] of e2e.sim.hosts.entries()) {
      const mine = (await containers(h.name)).filter((l) => l.startsWith(`${container} `));
      assert.equal(mine.length, 1, `${h.name}: ${mine.join('; ')}`);
      assert.match(mine[0]!, new RegExp(`^${container} running ${cluster} \\S+$`), `${h.name} (${i})`);
    }
    console.log(
      `FIGURE: real Docker, worker container removed under supervision: lost ${((lostAt - removedAt) / 1000).toFixed(1)} s after the removal; serving again ${(((entry.endedAtMs ?? 0) - lostAt) / 1000).toFixed(1)} s after lost`,
    );
    await supervisor.signal(stopSupervisionSignal, { reason: 'the test moves on' });
    await supervisor.result().catch(() => undefined);
  });

  it("the worker's Ray container removed mid-load fails the load as RayWorkerLost naming it; onFailure: teardown removes the rest", async () => {
    const handle = await startDeploy(e2e.client, spec({ onFailure: 'teardown' }), 'cli');
    await loading(3);
    await sshRun(e2e.sim, 'spark2', `docker rm -f ${container}`);
    const removedAt = Date.now();
    const error = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    const failedAt = Date.now();
    assert.ok(error instanceof WorkflowFailedError, `the deploy failed: ${String(error)}`);
    assert.ok(error.cause instanceof ApplicationFailure);
    assert.equal(error.cause.type, FailureType.rayWorkerLost, error.cause.message);
    assert.match(error.cause.message, new RegExp(`the Ray container ${container} on spark2 is gone`));
    const teardown = (await handle.query(progressQuery)).teardown ?? [];
    assert.deepEqual(teardown, [
      `spark1: removed ${container} (Ray and the server stopped)`,
      'spark2: nothing to remove',
    ]);
    for (const h of e2e.sim.hosts)
      assert.deepEqual(
        await containers(h.name),
        ['bystander running'],
        `${h.name}: only the bystander is left`,
      );
    console.log(
      `FIGURE: real Docker, worker container removed mid-load: RayWorkerLost ${((failedAt - removedAt) / 1000).toFixed(1)} s after the removal (poll 1s), teardown included`,
    );
  });

  it("`liftoff cancel` during the load removes this launch's containers on every host, and nothing else", async () => {
    const started = await liftoff(['deploy', '-c', specFile, '--json']);
    assert.equal(started.code, 0, started.stderr + started.stdout);
    await loading(3);
    const launch = (await progress()).launchId;
    for (const h of e2e.sim.hosts)
      assert.ok((await containers(h.name)).includes(`${container} running ${cluster} ${launch}`), h.name);
    const cancel = await liftoff(['cancel', cluster, '--json']);
    assert.equal(cancel.code, 0, cancel.stderr + cancel.stdout);
    const report = JSON.parse(cancel.stdout) as CancelReport;
    assert.equal(report.outcome, 'CANCELLED');
    assert.equal(report.step, 'waitHealthy');
    assert.deepEqual(report.teardown, [
      `spark1: removed ${container} (Ray and the server stopped)`,
      `spark2: removed ${container} (Ray stopped)`,
    ]);
    for (const h of e2e.sim.hosts) {
      assert.deepEqual(
        await containers(h.name),
        ['bystander running'],
        `${h.name}: only the bystander is left`,
      );
      const apps = await sshRun(e2e.sim, h.name, 'nvidia-smi --query-compute-apps=pid --format=csv,noheader');
      assert.equal(apps.trim(), '', `${h.name}: no GPU memory held`);
    }
    await assert.rejects(
      fetch(`http://${e2e.sim.hosts[0]!.address}:30000/health`),
      'the server port is closed',
    );
    const again = await liftoff(['cancel', cluster, '--json']);
    assert.equal(again.code, 2);
    assert.match(
      again.stdout,
      new RegExp(`is not running \\(workflow ${workflowId} is CANCELLED\\); nothing to cancel`),
    );
    console.log(
      `FIGURE: real Docker, cancel mid-load → CANCELLED with teardown in ${cancel.ms} ms (whole CLI process)`,
    );
  });
});
