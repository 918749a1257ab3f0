// The supervisor with its defaults (a round every 30 s, lost after 3 failed rounds) on the time-skipping test
// server: the intervals are skipped, everything else is real. The deploy, the probes, the bundle and the
// relaunch are the real activities over real sshd against the simulated 2-host cluster; only the waiting
// between rounds takes no real time (it took 90 s of it on the dev server). Launches are counted on the head
// itself (launches.log). The detection time is workflow time, read from the supervisor's history, and printed
// as a figure, never asserted.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { useSuiteCluster } from '../helpers/suites.js';
import { superviseWorkflowId } from '../../src/shared/constants.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { supervisionQuery, type SuperviseState } from '../../src/workflows/supervise-api.js';
import { formatDuration } from '../../src/config/duration.js';
import { simDeploySpec } from '../../sim/spec.js';

const cluster = 'supervise-defaults';

describe('supervise with its defaults on the time-skipping server (real probes over SSH)', () => {
  const e2e = useSuiteCluster('supervise-defaults', {
    timeSkipping: true,
    vllm: { shards: 6, shardSeconds: 0.1, graphCaptureSeconds: 0.3 },
  });

  const headDir = () => e2e.sim.hosts[0]!.hostDir;
  const launches = (): { pid: number }[] =>
    readFileSync(join(headDir(), 'launches.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { pid: number });
  const supervisor = () => e2e.client.workflow.getHandle(superviseWorkflowId(cluster));
  const state = () => supervisor().query(supervisionQuery);

  /**
   * Looks at the supervisor's state every 10 s of workflow time until `pred` holds. The server skips those
   * 10 s whenever no task is outstanding; between two looks its clock is held (it runs at real speed).
   */
  async function until(what: string, pred: (s: SuperviseState) => boolean, workflowMs: number) {
    const deadline = (await e2e.env.currentTimeMs()) + workflowMs;
    for (;;) {
      const s = await state().catch(() => undefined);
      if (s && pred(s)) return s;
      if ((await e2e.env.currentTimeMs()) > deadline)
        throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s?.status)}`);
      await e2e.env.sleep('10s');
    }
  }

  it('defaults: a killed vLLM is lost after 3 rounds of 30s, bundled, relaunched once, serving again', async () => {
    const handle = await startDeploy(
      e2e.client,
      { ...simDeploySpec(e2e.sim, { cluster }), supervise: {} },
      'cli',
    );
    // Awaiting the result lets the server skip the deploy's own poll intervals.
    const result = await handle.result();
    assert.match(result.supervision ?? '', /supervised by liftoff-supervise-defaults-supervise/);
    const passed = await until('a passed round', (x) => x.status === 'serving' && x.rounds >= 1, 10 * 60_000);
    assert.equal(passed.lastProbe?.verdict, 'passed', JSON.stringify(passed.lastProbe));
    assert.equal(launches().length, 1);

    // SIGKILL: no last words in its log, as an engine that dies.
    process.kill(launches().at(-1)!.pid, 'SIGKILL');
    const killedAtMs = await e2e.env.currentTimeMs();
    const lost = await until('lost', (s) => s.status !== 'serving', 10 * 60_000);
    assert.equal(
      lost.consecutiveFailures,
      3,
      'lost after supervise.failureThreshold (3) failed rounds in a row',
    );
    const back = await until(
      'serving again',
      (s) => s.status === 'serving' && s.relaunches.length > 0,
      60 * 60_000,
    );
    assert.equal(back.relaunches.length, 1, 'relaunched once');
    const entry = back.relaunches[0]!;
    assert.equal(entry.outcome, 'serving');
    assert.equal(launches().length, 2, 'the launch count is exactly 2');
    assert.match(entry.cause, /spark1 health: GET \/health failed/);
    const head = entry.bundle?.hosts.find((h) => h.host === 'spark1');
    assert.ok(head?.reachable, JSON.stringify(entry.bundle));
    assert.match(head.serveLogTail ?? '', /Application startup complete/, 'the serve log of the lost launch');
    assert.equal(head.container?.running, true, 'the Ray container still ran: only vLLM died');
    assert.match(head.rayStatus ?? '', /Active:/);
    assert.ok(entry.bundle!.collectedAtMs <= entry.startedAtMs, 'bundled before the relaunch started');
    const models = await fetch(`http://${e2e.sim.hosts[0]!.address}:30000/v1/models`);
    assert.equal(models.status, 200, 'the endpoint answers');

    // Workflow time from the supervisor's history: lost when it scheduled the bundle (the first thing it does
    // on a loss), serving again when the relaunch deploy (its child) completed.
    const events = (await supervisor().fetchHistory()).events ?? [];
    const bundledAtMs = events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'collectFailureBundle')
      .map((e) => tsToMs(e.eventTime))
      .find((t) => t >= killedAtMs);
    const servingAtMs = events
      .filter((e) => e.childWorkflowExecutionCompletedEventAttributes)
      .map((e) => tsToMs(e.eventTime))
      .find((t) => t >= killedAtMs);
    assert.ok(
      bundledAtMs !== undefined && servingAtMs !== undefined,
      'the loss and the relaunch are in history',
    );
    process.stdout.write(
      `# defaults (30s × 3), workflow time from the supervisor's history: detection ${formatDuration(bundledAtMs - killedAtMs)} after the kill; lost → serving ${formatDuration(servingAtMs - bundledAtMs)}\n`,
    );
  });
});
