// The companions' recordings (issue 31) for scripts/record-histories.ts: a supervised 2-host deploy with an
// embeddings server on spark1 and a reranker on spark2 (startCompanions starts and probes both), then its
// supervisor after the embeddings server's container is removed: failing, restarted alone (startCompanion and
// probeCompanion again, the main model and the reranker untouched), serving, then stopped by signal. Recorded on the
// simulated hosts' simulated Docker, whose vLLM serves /v1/embeddings and /v1/rerank, so no volumes are needed.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { simDeploySpec } from '../../sim/spec.js';
import { embeddingsCompanion, rerankerCompanion } from '../../test/helpers/companions.js';
import { deployWorkflowId, superviseWorkflowId } from '../../src/shared/constants.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { progressQuery } from '../../src/workflows/index.js';
import { stopSupervisionSignal } from '../../src/workflows/supervise-api.js';
import type { SuperviseState } from '../../src/workflows/supervise-state.js';
import {
  eventsOf,
  expectClosedAs,
  exportHistory,
  recording,
  say,
  scheduledActivities,
  superviseUntil,
  type SupervisedRecordingContext,
  within,
  type Recording,
} from './recording.js';

/** A supervised recording's context (scripts/lib/recording.ts), under the name the script knows it by. */
export type CompanionRecordingContext = SupervisedRecordingContext;

export const companionFiles = {
  deploy: 'deploy-companions.json',
  supervise: 'supervise-companion-restarted.json',
} as const;

/** The companion the recording removes, and where. */
const removed = { name: 'embeddings', container: 'liftoff-embeddings' } as const;

/** Both companions serving by the supervisor's last probe of each. */
function companionsServing(s: SuperviseState): boolean {
  return ['embeddings', 'reranker'].every(
    (n) => s.companions?.[n]?.status === 'serving' && s.companions[n]?.lastProbe?.ok === true,
  );
}

/** Every name in `wanted` among the activities the history scheduled, or an error that names what is missing. */
function expectActivities(json: string, wanted: readonly string[], what: string): void {
  const activities = scheduledActivities(eventsOf(json));
  const missing = wanted.filter((name) => !activities.includes(name));
  if (missing.length > 0)
    throw new Error(`${what} scheduled no ${missing.join(', ')} (it scheduled ${activities.join(', ')})`);
}

export async function recordCompanions(ctx: CompanionRecordingContext): Promise<Recording[]> {
  const { client, server, sim, cluster, supervise, step } = ctx;
  const [spark1, spark2] = sim.hosts;
  if (!spark1 || !spark2) throw new Error('the companions need a 2-host cluster');
  const deployId = deployWorkflowId(cluster);
  const supervisorId = superviseWorkflowId(cluster);
  say(
    `${step}: a supervised deploy with an embeddings server on ${spark1.name} and a reranker on ${spark2.name}; the embeddings server removed, restarted alone, stopped`,
  );
  const spec = {
    ...simDeploySpec(sim, { cluster }),
    supervise,
    companions: [embeddingsCompanion(spark1.name), rerankerCompanion(spark2.name)],
  };
  const handle = await startDeploy(client, spec, 'cli');
  const deployed = await within(handle.result());
  if (!deployed.supervision?.startsWith(`supervised by ${supervisorId}`))
    throw new Error(`the deploy did not start its supervisor: ${deployed.supervision ?? '(nothing said)'}`);
  const progress = await client.workflow.getHandle(deployId).query(progressQuery);
  const started = (progress.companions ?? []).map((c) => `${c.name} on ${c.host} ${c.status}`);
  if (started.join(', ') !== `embeddings on ${spark1.name} ready, reranker on ${spark2.name} ready`)
    throw new Error(`the deploy did not bring both companions up: ${started.join(', ') || '(none)'}`);
  say(`  served at ${deployed.endpoint}; ${started.join(', ')}`);
  const deployJson = await exportHistory(server, handle.firstExecutionRunId, deployId);
  expectClosedAs(eventsOf(deployJson), 'workflowExecutionCompletedEventAttributes', 'companions deploy');
  expectActivities(deployJson, ['startCompanion', 'probeCompanion'], 'the companions deploy');

  await superviseUntil(
    client,
    supervisorId,
    'a passed round with both companions probed',
    (s) => s.status === 'serving' && s.lastProbe?.verdict === 'passed' && companionsServing(s),
  );
  await promisify(execFile)(
    'ssh',
    ['-F', sim.sshConfigPath, '-o', 'BatchMode=yes', spark1.name, `docker rm -f ${removed.container}`],
    { timeout: 30_000 },
  );
  say(`  ${removed.container} removed on ${spark1.name}`);
  const back = await superviseUntil(
    client,
    supervisorId,
    `${removed.name} restarted and serving`,
    (s) => s.companions?.[removed.name]?.restarts.at(-1)?.outcome === 'serving',
  );
  const restart = back.companions?.[removed.name]?.restarts.at(-1);
  const restartEndedAt = restart?.endedAtMs ?? Date.now();
  if (back.relaunches.length > 0 || (back.companions?.reranker?.restarts.length ?? 0) > 0)
    throw new Error(`more than ${removed.name} was restarted: ${JSON.stringify(back)}`);
  // One round after the restart, with both probed again: the restart's state published before the stop.
  await superviseUntil(
    client,
    supervisorId,
    'a round after the restart with both companions serving',
    (s) => (s.lastProbe?.atMs ?? 0) > restartEndedAt && companionsServing(s),
  );
  const supervisor = client.workflow.getHandle(supervisorId);
  const { runId } = await supervisor.describe();
  await supervisor.signal(stopSupervisionSignal, { reason: 'record-histories: recorded' });
  const ended = (await within(client.workflow.getHandle(supervisorId, runId).result())) as {
    state: SuperviseState;
  };
  say(
    `  ${removed.name} restarted and serving in ${(((restart?.endedAtMs ?? 0) - (restart?.atMs ?? 0)) / 1000).toFixed(1)} s; supervisor ${ended.state.status}`,
  );
  const superviseJson = await exportHistory(server, runId, supervisorId);
  expectClosedAs(eventsOf(superviseJson), 'workflowExecutionCompletedEventAttributes', 'stopped supervisor');
  // The run exported is the one that restarted it (no continue-as-new between the removal and the stop).
  expectActivities(superviseJson, ['startCompanion', 'probeCompanion'], "the supervisor's run");

  const settings = `interval ${supervise.interval}, failureThreshold ${supervise.failureThreshold}`;
  return [
    recording(
      companionFiles.deploy,
      `a supervised deploy (${settings}) with an embeddings server on ${spark1.name} and a reranker on ${spark2.name} as companions: every step, then startCompanions starts the embeddings server (the larger budget first) and the reranker, each probed until its real request works, and the supervisor started`,
      handle.firstExecutionRunId,
      'succeeded',
      deployJson,
      { workflowType: 'deploy', workflowId: deployId },
    ),
    recording(
      companionFiles.supervise,
      `the supervisor of ${companionFiles.deploy} (${settings}) after ${removed.container} is removed on ${spark1.name} (docker rm -f): its probe fails ${supervise.failureThreshold} rounds while the main model passes, it is restarted alone (startCompanion, probeCompanion until ready; no relaunch, the reranker untouched), serving again, then stopped by signal`,
      runId,
      'succeeded',
      superviseJson,
      { workflowType: 'supervise', workflowId: supervisorId },
    ),
  ];
}
