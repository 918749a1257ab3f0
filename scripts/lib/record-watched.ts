// The watched supervisor's recording (issue 33) for scripts/record-histories.ts: a supervised 2-host deploy whose
// supervisor reports a healthy cluster every three rounds (interval 1 s, reportEvery 3 s), so its healthy rounds run
// in watchServingCluster; vLLM is SIGKILLed, the watch comes back with the failed round, the rounds go one at a time
// until the cluster is lost, relaunched and serving, then watched again and stopped by signal while a watch runs
// (the watch cancelled).
import { simDeploySpec } from '../../sim/spec.js';
import { superviseWorkflowId } from '../../src/shared/constants.js';
import { startDeploy } from '../../src/temporal/start-deploy.js';
import { stopSupervisionSignal } from '../../src/workflows/supervise-api.js';
import type { SuperviseState } from '../../src/workflows/supervise-state.js';
import {
  eventsOf,
  expectClosedAs,
  exportHistory,
  recording,
  say,
  scheduledActivities,
  killHeadVllmUntilRelaunched,
  superviseUntil,
  type SupervisedRecordingContext,
  within,
  type Recording,
} from './recording.js';

export const watchedFile = 'supervise-watched.json';

export async function recordWatched(ctx: SupervisedRecordingContext): Promise<Recording> {
  const { client, server, sim, cluster, step } = ctx;
  const supervise = { ...ctx.supervise, reportEvery: '3s' };
  say(
    `${step}: a watched supervisor (reportEvery ${supervise.reportEvery}): vLLM SIGKILLed mid-watch, relaunched, stopped`,
  );
  const supervisorId = superviseWorkflowId(cluster);
  const deployed = await within(
    (await startDeploy(client, { ...simDeploySpec(sim, { cluster }), supervise }, 'cli')).result(),
  );
  if (!deployed.supervision?.startsWith(`supervised by ${supervisorId}`))
    throw new Error(`the deploy did not start its supervisor: ${deployed.supervision ?? '(nothing said)'}`);
  // One round alone, then two watches of three.
  await superviseUntil(
    client,
    supervisorId,
    'seven passed rounds',
    (s) => s.status === 'serving' && s.rounds >= 7,
  );
  const back = await killHeadVllmUntilRelaunched(client, sim, supervisorId);
  // A watch has come back after the relaunch (three rounds more), and the next one runs when the stop comes.
  const roundsBack = back.rounds;
  await superviseUntil(client, supervisorId, 'a watch after the relaunch', (s) => s.rounds >= roundsBack + 4);
  // Past the interval that follows a report, into the next watch (three rounds, about two seconds).
  await new Promise((r) => setTimeout(r, 1500));
  const supervisor = client.workflow.getHandle(supervisorId);
  const { runId } = await supervisor.describe();
  await supervisor.signal(stopSupervisionSignal, { reason: 'record-histories: recorded' });
  const ended = (await within(client.workflow.getHandle(supervisorId, runId).result())) as {
    state: SuperviseState;
  };
  say(
    `  ${ended.state.rounds} rounds, relaunch #${back.relaunches.length} served; supervisor ${ended.state.status}`,
  );
  const json = await exportHistory(server, runId, supervisorId);
  const events = eventsOf(json);
  expectClosedAs(events, 'workflowExecutionCompletedEventAttributes', 'stopped supervisor');
  if (!scheduledActivities(events).includes('watchServingCluster'))
    throw new Error('the supervisor never watched: no watchServingCluster in its history');
  if (!events.some((e) => 'activityTaskCancelRequestedEventAttributes' in e))
    throw new Error('the stop did not cancel a running watch (no cancel request in the history)');
  return recording(
    watchedFile,
    `a supervisor (interval ${supervise.interval}, reportEvery ${supervise.reportEvery}, failureThreshold ${supervise.failureThreshold}) whose healthy rounds run in watches: vLLM SIGKILLed, the watch returns the failed round, lost, bundle, relaunch deploy as its child, serving and watched again, stopped by signal while a watch runs`,
    runId,
    'succeeded',
    json,
    { workflowType: 'supervise', workflowId: supervisorId },
  );
}
