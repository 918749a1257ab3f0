// Revisions and rollback (issue 30) on two simulated hosts that each run a real Docker Engine, with the real dev
// server and worker and the CLI as a user runs it. Each case builds on the state the one before left:
//  1. a failed upgrade rolls back to the known-good by itself (revisions 1 replaced, 2 bad, 3 serving restores 1),
//     one rolledBack webhook, and a schedule refuses the bad spec without stopping anything;
//  2. a revision lost within its bake window is marked bad and the known-good comes back (4 bad, 5 restores 3);
//  3. an image rebuilt under the same tag shows in `revisions --diff` as the hosts' imageId, `rollback --to` pins
//     the old ID, and a rollback whose image is gone from a host is refused before anything is stopped;
//  4. a rollback that fails too leaves the cluster degraded with both failures, and no third launch.
// Launches are counted on the head itself (launches.log), containers asked of the hosts' own Docker. Times are
// printed as figures, never asserted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { stringify } from 'yaml';
import { runLiftoff, type CliRun } from '../helpers/cli.js';
import { headLaunches } from '../helpers/host-logs.js';
import { assertHeadServes } from '../helpers/serving.js';
import { sshRun } from '../helpers/ssh.js';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait.js';
import { setFaults } from '../../sim/cluster.js';
import { hostDocker } from '../../sim/real-docker.js';
import { simDeploySpec } from '../../sim/spec.js';
import { readClusterRevisions } from '../../src/activities/revisions.js';
import type { RevisionDiff, RevisionsReport } from '../../src/commands/revisions.js';
import type { FleetLine, FleetReport } from '../../src/commands/fleet-status.js';
import type { StatusReport } from '../../src/commands/status.js';
import { formatDuration } from '../../src/config/duration.js';
import { deployWorkflowId, superviseWorkflowId } from '../../src/shared/constants.js';
import { FailureType } from '../../src/shared/failures.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { plan } from '../../src/workflows/index.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { progressQuery } from '../../src/workflows/deploy.js';
import type { DeployProgress, DeployResult, StepName } from '../../src/workflows/steps.js';
import { supervisionQuery } from '../../src/workflows/supervise-api.js';

const stateDir = suiteStateDir('rollback');
const cluster = 'rollback';
const workflowId = deployWorkflowId(cluster);
const image = 'hellohal2064/vllm-qwen3.5-gb10';
const container = 'vllm_qwen35';
const goodArgs = ['--gpu-memory-utilization', '0.85', '--max-model-len', '32768'];

/**
 * The upgrade that fails after the stop: a flag vLLM does not know. The simulated `vllm serve` refuses it as
 * vLLM's argparse does (`vllm serve: error: unrecognized arguments: --bogus-flag`, exit 2) before it records a
 * launch, so the bad revision adds no line to launches.log. Another way it could fail after a launch, without that
 * refusal: `--gpu-memory-utilization 0.99` (vLLM's "Free memory on device … is less than desired" ValueError),
 * launches: 1.
 */
const badUpgrade = {
  args: [...goodArgs, '--bogus-flag'],
  cause: /unrecognized arguments: --bogus-flag/,
  launches: 0,
};

interface Heard {
  event: string;
  cluster: string;
  details: Record<string, unknown>;
}

type CliResult = DeployResult & { workflowId: string; runId: string };
type CliFailure = { failed: true; workflowId: string; runId: string; type: string; message: string };

describe('revisions and rollback on 2 hosts with a real Docker Engine each', () => {
  // The webhook receiver is up before the worker starts (this hook is registered first), so its origin is in the
  // list the worker's policy is made from.
  const heard: Heard[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      heard.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Heard);
      res.writeHead(204).end();
    });
  });
  const webhookOrigins: string[] = [];
  let hookUrl = '';
  before(async () => {
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    webhookOrigins.push(origin);
    hookUrl = `${origin}/hook`;
  });
  const e2e = useSuiteCluster('rollback', {
    docker: 'real',
    vllm: { shards: 6, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
    workerPolicy: { webhooks: webhookOrigins },
  });
  const dir = tempDir('liftoff-rollback-');
  const figures: string[] = [];
  after(() => {
    process.stdout.write(figures.map((f) => `# FIGURE: ${f}\n`).join(''));
    receiver.close();
  });

  const specOf = (args: string[], extra: Record<string, unknown> = {}) => {
    const base = simDeploySpec(e2e.sim, { cluster });
    // simDeploySpec leaves failures as they failed (onFailure: leave); this suite is about rolling back.
    return {
      ...base,
      serve: { ...base.serve, args },
      notify: { webhooks: [{ url: hookUrl }] },
      rollout: { onFailure: 'rollback' as const },
      ...extra,
    };
  };
  const liftoff = (args: string[]): Promise<CliRun> =>
    runLiftoff(args, { ...process.env, ...e2e.temporalEnv }, 300_000);
  const specFile = (name: string, spec: unknown): string => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, stringify(spec));
    return file;
  };
  const revisionsJson = async (): Promise<RevisionsReport> => {
    const r = await liftoff(['revisions', cluster, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return JSON.parse(r.stdout) as RevisionsReport;
  };
  const statuses = (r: RevisionsReport) =>
    r.revisions.map(
      (v) => `${v.number} ${v.status}${v.restores !== undefined ? ` restores ${v.restores}` : ''}`,
    );
  /** The container's ID, start and image on each host: a refused deploy must leave all three as they were. */
  const containerState = async (): Promise<string[]> =>
    Promise.all(
      e2e.sim.hosts.map(async (h) =>
        (
          await sshRun(
            e2e.sim,
            h.name,
            `docker inspect --format '{{.Id}} {{.State.Status}} {{.State.StartedAt}} {{.Image}}' ${container}`,
          )
        ).trim(),
      ),
    );
  const imageIdOn = async (host: string): Promise<string> =>
    (await sshRun(e2e.sim, host, `docker image inspect --format '{{.Id}}' ${image}`)).trim();
  const step = (p: DeployProgress, name: StepName) => {
    const s = p.steps.find((x) => x.name === name);
    assert.ok(s, `step ${name}`);
    return s;
  };
  const failureOf = async (run: Promise<unknown>): Promise<ApplicationFailure> => {
    const err = await run.then(
      () => assert.fail('the deploy succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowFailedError, String(err));
    assert.ok(err.cause instanceof ApplicationFailure, String(err.cause));
    return err.cause;
  };
  const rolledBackHooks = () => heard.filter((h) => h.event === 'rolledBack');
  /** The cluster's line of `liftoff status --json` (the fleet view, from visibility) once it is in `state`. */
  const fleetLine = (state: string): Promise<FleetLine> =>
    waitFor(
      `${cluster} ${state} in the fleet view`,
      async () => {
        const r = await liftoff(['status', '--json']);
        assert.equal(r.code, 0, r.stderr);
        const line = (JSON.parse(r.stdout) as FleetReport).clusters.find((c) => c.cluster === cluster);
        return line?.state === state ? line : undefined;
      },
      30_000,
      { everyMs: 500 },
    );
  const clusterStatusJson = async (): Promise<StatusReport> => {
    const r = await liftoff(['status', cluster, '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as StatusReport;
  };
  const serving = async (): Promise<number> =>
    (await fetch(`http://${e2e.sim.hosts[0]!.address}:30000/v1/models`).catch(() => undefined))?.status ?? 0;

  it('a failed upgrade rolls back to the known-good: revisions 1 replaced, 2 bad, 3 serving restores 1; one webhook; a schedule refuses the bad spec', async () => {
    const first = await (await startDeploy(e2e.client, specOf(goodArgs), 'cli')).result();
    assert.equal(first.revision, 1);
    assert.equal(first.rolledBack, undefined);
    await assertHeadServes(e2e.sim, first);
    const launchesBefore = headLaunches(e2e.sim);

    const bad = specOf(badUpgrade.args);
    // The plan says beforehand what a failure after the stop would bring back.
    const planned = await e2e.client.workflow.execute(plan, {
      taskQueue: TASK_QUEUE,
      workflowId: `liftoff-plan-${cluster}`,
      args: [bad],
    });
    assert.deepEqual([planned.wouldStart, planned.onFailure?.rollbackTo], [true, 1]);
    assert.match(planned.onFailure?.why ?? '', /^it rolls back to revision 1 \(/);
    const cli = await liftoff(['deploy', '-c', specFile('upgrade', bad), '--follow', '--json']);
    // What was asked failed, though the known-good serves again.
    assert.equal(cli.code, 1, cli.stdout + cli.stderr);
    const result = JSON.parse(cli.stdout) as CliResult;
    assert.deepEqual(
      [result.rolledBack?.from, result.rolledBack?.to],
      [2, 1],
      JSON.stringify(result.rolledBack),
    );
    assert.match(result.rolledBack?.cause ?? '', badUpgrade.cause);
    assert.match(result.rolledBack?.failedRun ?? '', new RegExp(`^${workflowId}:${result.runId}$`));
    assert.equal(result.revision, 3);
    await assertHeadServes(e2e.sim, result);
    assert.equal(
      headLaunches(e2e.sim) - launchesBefore,
      badUpgrade.launches + 1,
      'the bad launch (when it got as far as a launch) and the rollback, nothing more',
    );

    const revisions = await revisionsJson();
    assert.deepEqual(statuses(revisions), ['1 replaced', '2 bad', '3 serving restores 1']);
    assert.equal(revisions.current, 3);
    assert.match(revisions.revisions[1]?.badReason ?? '', badUpgrade.cause);
    const table = await liftoff(['revisions', cluster]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^\*3 .* serving \(restores 1\)$/m, table.stdout);

    // liftoff status: the cluster's revision and its last rollback; the fleet view's REV column says so too.
    const line = await fleetLine('serving');
    assert.deepEqual([line.revision, line.rolledBack], [3, { from: 2, to: 1, outcome: 'serving' }]);
    const fleetText = await liftoff(['status']);
    assert.match(fleetText.stdout, /^rollback\s+serving\s+3 \(↩ from 2\)\s/m, fleetText.stdout);
    const { revision } = await clusterStatusJson();
    assert.equal(revision?.current, 3);
    const { atMs: _at, cause, ...lastRollback } = revision?.lastRollback ?? { atMs: 0, cause: '' };
    assert.deepEqual(lastRollback, { bad: 2, restores: 1, outcome: 'serving', revision: 3 });
    assert.match(cause, badUpgrade.cause);
    const statusText = await liftoff(['status', cluster]);
    assert.match(
      statusText.stdout,
      /^rollback: revision 2 failed: .*; rolled back to revision 1, serving again as revision 3$/m,
      statusText.stdout,
    );

    const hook = await waitFor('the rolledBack webhook', () => rolledBackHooks()[0], 30_000);
    assert.equal(hook.cluster, cluster);
    assert.deepEqual([hook.details.from, hook.details.to, hook.details.revision], [2, 1, 3]);
    assert.match(String(hook.details.cause), badUpgrade.cause);

    // The outage: from the failed run's removal of the serving container to the rollback's server answering.
    const failedRun = await e2e.client.workflow.getHandle(workflowId, result.runId).query(progressQuery);
    assert.equal(failedRun.rolledBackTo, 1);
    const rollbackRun = await e2e.client.workflow.getHandle(workflowId).query(progressQuery);
    assert.equal(rollbackRun.trigger, 'rollback');
    const down = step(failedRun, 'stopServices').startedAtMs ?? 0;
    const removed = step(failedRun, 'removeContainers').startedAtMs ?? 0;
    const healthy = step(rollbackRun, 'waitHealthy').endedAtMs ?? 0;
    const smoked = step(rollbackRun, 'smokeTest').endedAtMs ?? 0;
    figures.push(
      `failed upgrade → rollback: outage ${formatDuration(healthy - removed)} from the serving container's removal to the rollback's server healthy (${formatDuration(smoked - down)} from the stop of services to its smoke test passed); liftoff deploy --follow took ${formatDuration(cli.ms)} (whole CLI process, exit ${cli.code})`,
    );

    // A schedule does not deploy the bad spec again unasked: refused in preflight, nothing stopped.
    const containersBefore = await containerState();
    const launchesNow = headLaunches(e2e.sim);
    const scheduled = await startDeploy(e2e.client, bad, 'schedule');
    const refusal = await failureOf(scheduled.result());
    assert.equal(refusal.type, FailureType.badRevision, refusal.message);
    assert.match(
      refusal.message,
      /^preflight failed: nothing was stopped or removed: this spec is revision 2 of rollback, marked bad \(/,
    );
    const steps = (await scheduled.query(progressQuery)).steps;
    assert.equal(steps.find((s) => s.name === 'preflight')?.status, 'failed');
    assert.equal(steps.find((s) => s.name === 'stopServices')?.status, 'pending');
    assert.deepEqual(await containerState(), containersBefore, 'the serving containers are untouched');
    assert.equal(headLaunches(e2e.sim), launchesNow);
    assert.equal(await serving(), 200);
    // Settled: a late notification would show here.
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(rolledBackHooks().length, 1, 'exactly one rolledBack notification');
  });

  it('bake window: a revision lost soon after it served is marked bad and the known-good comes back', async () => {
    const supervise = { interval: '1s', failureThreshold: 2, backoff: '1s', maxRelaunches: 3, window: '1h' };
    const specB = specOf(['--gpu-memory-utilization', '0.85', '--max-model-len', '16384'], {
      supervise,
      rollout: { onFailure: 'rollback' as const, bakeTime: '2m' },
    });
    const deployed = await (await startDeploy(e2e.client, specB, 'cli')).result();
    assert.equal(deployed.revision, 4);
    assert.match(deployed.supervision ?? '', /supervised by/);
    const supervisor = e2e.client.workflow.getHandle(superviseWorkflowId(cluster));
    await waitFor(
      'a passed round',
      async () => {
        const s = await supervisor.query(supervisionQuery).catch(() => undefined);
        return s?.status === 'serving' && s.lastProbe?.verdict === 'passed' ? s : undefined;
      },
      60_000,
    );
    const deployRunB = (await e2e.client.workflow.getHandle(workflowId).describe()).runId;
    const launchesBefore = headLaunches(e2e.sim);
    const hooksBefore = rolledBackHooks().length;

    // A hung engine: /health stays 200, completions never answer.
    setFaults(stateDir, 'spark1', { completions: 'hang' });
    const wedgedAt = Date.now();
    try {
      await waitFor(
        'revision 4 marked bad',
        async () => {
          const { revisions } = await readClusterRevisions(e2e.client, cluster);
          return revisions.find((r) => r.number === 4)?.status === 'bad' ? true : undefined;
        },
        60_000,
      );
    } finally {
      // Gone once the revision is judged, so the known-good's server answers its smoke test.
      setFaults(stateDir, 'spark1', {});
    }
    const markedAt = Date.now();
    await waitFor(
      'the rollback deploy',
      async () => {
        const d = await e2e.client.workflow.getHandle(workflowId).describe();
        return d.runId !== deployRunB ? d : undefined;
      },
      60_000,
    );
    const rollback = e2e.client.workflow.getHandle(workflowId);
    const restored = (await rollback.result()) as DeployResult;
    assert.deepEqual([restored.rolledBack?.from, restored.rolledBack?.to], [4, 3]);
    assert.match(restored.rolledBack?.cause ?? '', /^lost within its bake window \(2m\): /);
    assert.equal(restored.revision, 5);
    await assertHeadServes(e2e.sim, restored);
    const progress = await rollback.query(progressQuery);
    assert.equal(progress.trigger, 'rollback');
    const servingAt = step(progress, 'smokeTest').endedAtMs ?? Date.now();

    const ended = await supervisor.describe();
    assert.equal(ended.status.name, 'COMPLETED');
    assert.match(
      JSON.stringify(ended.memo?.supervise),
      /revision 4 is bad \(lost within its bake window \(2m\): .*\): rolling back to revision 3/,
    );
    assert.equal(headLaunches(e2e.sim), launchesBefore + 1, 'the rollback only: no relaunch of revision 4');
    const revisions = await revisionsJson();
    assert.deepEqual(statuses(revisions), [
      '1 replaced',
      '2 bad',
      '3 replaced restores 1',
      '4 bad',
      '5 serving restores 3',
    ]);
    assert.match(revisions.revisions[3]?.badReason ?? '', /bake window/);
    await waitFor('the second rolledBack webhook', () => rolledBackHooks()[hooksBefore], 30_000);
    figures.push(
      `bake window (interval 1s, threshold 2): revision marked bad ${formatDuration(markedAt - wedgedAt)} after the wedge; serving again (the rollback's smoke test passed) ${formatDuration(servingAt - wedgedAt)} after it`,
    );
  });

  it('an image rebuilt under the same tag: revisions --diff names each host’s imageId, rollback --to pins the old ID, and a rollback whose image is gone from a host is refused in preflight', async () => {
    const [spark1, spark2] = e2e.sim.hosts;
    assert.ok(spark1 && spark2);
    const oldId = await imageIdOn('spark1');
    assert.equal(await imageIdOn('spark2'), oldId);
    // Rebuilt on spark1 with a trivial change, under the same tag; spark2 gets that build too (docker save | load),
    // as hosts that pulled the moved tag do: preflight refuses hosts that disagree on the image.
    const tarball = join(dir, 'rebuilt.tar');
    let newId = '';
    try {
      const built = await sshRun(
        e2e.sim,
        'spark1',
        `printf 'FROM ${image}\\nLABEL liftoff.test.rebuilt=${Date.now()}\\n' | DOCKER_BUILDKIT=0 docker build -q -t ${image} - 2>&1`,
      );
      newId = await imageIdOn('spark1');
      assert.notEqual(newId, oldId, built);
      for (const [host, args] of [
        [spark1, ['save', '-o', tarball, image]],
        [spark2, ['load', '-q', '-i', tarball]],
      ] as const) {
        const r = await hostDocker(host, [...args], 120_000);
        assert.equal(r.code, 0, `docker ${args.join(' ')} on ${host.name}: ${r.stderr}`);
      }
      rmSync(tarball, { force: true });
      assert.equal(await imageIdOn('spark2'), newId);

      const rebuilt = await (await startDeploy(e2e.client, specOf(goodArgs), 'cli')).result();
      assert.equal(rebuilt.revision, 6);
      const diff = await liftoff(['revisions', cluster, '--diff', '1', '6', '--json']);
      assert.equal(diff.code, 0, diff.stdout + diff.stderr);
      const changes = (JSON.parse(diff.stdout) as RevisionDiff).changes;
      for (const host of ['spark1', 'spark2'])
        assert.deepEqual(
          changes.find((c) => c.field === `${host}.imageId`),
          { field: `${host}.imageId`, from: oldId, to: newId, outsideSpec: true },
          JSON.stringify(changes),
        );
      assert.deepEqual(
        changes.filter((c) => c.field.startsWith('spec.')),
        [],
        'the spec is the same: only what the hosts said changed',
      );
      const text = await liftoff(['revisions', cluster, '--diff', '1', '6']);
      assert.match(text.stdout, /^outside the spec \(what the hosts reported\):$/m, text.stdout);
      assert.match(text.stdout, new RegExp(`^  spark1\\.imageId: ${oldId} → ${newId}$`, 'm'), text.stdout);

      const back = await liftoff(['rollback', cluster, '--to', '1', '--follow', '--json']);
      assert.equal(back.code, 0, back.stdout + back.stderr);
      const restored = JSON.parse(back.stdout) as CliResult;
      assert.equal(restored.revision, 7);
      assert.deepEqual(
        [restored.rolledBack?.to, restored.rolledBack?.from, restored.rolledBack?.cause],
        [1, undefined, 'asked for (liftoff rollback --to 1)'],
      );
      for (const line of await containerState())
        assert.match(line, new RegExp(` running \\S+ ${oldId}$`), 'the container runs the old image, by ID');
      const seven = (await revisionsJson()).revisions.find((r) => r.number === 7);
      assert.deepEqual([seven?.image, seven?.status, seven?.restores], [oldId, 'serving', 1]);
      figures.push(
        `liftoff rollback --to 1 --follow (pinned to the old image ID): ${formatDuration(back.ms)}`,
      );

      // Revision 6's image gone from spark2: its rollback is refused before anything is stopped.
      await sshRun(e2e.sim, 'spark2', `docker rmi -f ${newId}`);
      const containersBefore = await containerState();
      const launchesBefore = headLaunches(e2e.sim);
      const refused = await liftoff(['rollback', cluster, '--to', '6', '--follow', '--json']);
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      const failure = JSON.parse(refused.stdout) as CliFailure;
      assert.equal(failure.type, FailureType.rollbackRefused, failure.message);
      const [said, ...missing] = failure.message.split('\n');
      assert.equal(said, 'preflight failed: nothing was stopped or removed: revision 6 cannot be restored:');
      assert.match(
        missing[0] ?? '',
        new RegExp(
          `^  spark2: image ${newId.slice(7, 19)} of revision 6 is gone \\(the host has no such image\\)`,
        ),
        failure.message,
      );
      const end = missing.indexOf('preflight found too:');
      const gone = end < 0 ? missing : missing.slice(0, end);
      assert.ok(
        gone.every((l) => l.startsWith('  spark2: ')),
        `only spark2 lacks what revision 6 ran: ${failure.message}`,
      );
      const steps = (await e2e.client.workflow.getHandle(workflowId).query(progressQuery)).steps;
      assert.equal(steps.find((s) => s.name === 'stopServices')?.status, 'pending');
      assert.deepEqual(await containerState(), containersBefore, 'the serving containers are untouched');
      assert.equal(headLaunches(e2e.sim), launchesBefore);
      assert.equal(await serving(), 200);
    } finally {
      // Both hosts back on the original image under the tag, the rebuild gone: what case 4 and the next run expect.
      rmSync(tarball, { force: true });
      for (const host of ['spark1', 'spark2'])
        await sshRun(
          e2e.sim,
          host,
          `docker tag ${oldId} ${image}${newId ? ` && { docker rmi ${newId} >/dev/null 2>&1 || true; }` : ''}`,
        );
    }
  });

  it('a rollback that fails too: RollbackFailed with both failures, the cluster degraded, two launches and no third', async () => {
    const launchesBefore = headLaunches(e2e.sim);
    // Every load on the head fails from here: the upgrade's and the known-good's alike.
    setFaults(stateDir, 'spark1', { crashAtShard: 2 });
    try {
      const upgrade = specOf(['--gpu-memory-utilization', '0.85', '--max-model-len', '8192']);
      const cli = await liftoff(['deploy', '-c', specFile('doomed', upgrade), '--follow', '--json']);
      assert.equal(cli.code, 1, cli.stdout + cli.stderr);
      const failure = JSON.parse(cli.stdout) as CliFailure;
      assert.equal(failure.type, FailureType.rollbackFailed, failure.message);
      assert.match(failure.message, /^rollback to revision 7 failed too: .*SafetensorError/s);
      assert.match(failure.message, /\nrevision 8 had failed: .*SafetensorError/s);
      assert.equal(headLaunches(e2e.sim) - launchesBefore, 2, 'the upgrade and the rollback');
      // Nothing tries a third time.
      await new Promise((r) => setTimeout(r, 5_000));
      assert.equal(headLaunches(e2e.sim) - launchesBefore, 2, 'no third launch');

      const line = await fleetLine('degraded');
      assert.match(line.reason ?? '', /^rollback to revision 7 failed too: /);
      assert.deepEqual([line.revision, line.rolledBack], [7, { from: 8, to: 7, outcome: 'failed' }]);
      const rollback = (await clusterStatusJson()).revision?.lastRollback;
      assert.deepEqual([rollback?.bad, rollback?.restores, rollback?.outcome], [8, 7, 'failed']);
      assert.match(rollback?.error ?? '', /^rollback to revision 7 failed too: /);
      const revisions = await revisionsJson();
      assert.deepEqual(
        statuses(revisions).slice(6),
        ['7 replaced restores 1', '8 bad'],
        'the failed rollback records no revision, and nothing serves',
      );
      figures.push(
        `failed upgrade whose rollback failed too: liftoff deploy --follow took ${formatDuration(cli.ms)}`,
      );
    } finally {
      setFaults(stateDir, 'spark1', {});
    }
  });
});
