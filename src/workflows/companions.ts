// The companions (spec.companions): started by the deploy once the main model answered its smoke test, the largest
// memory budget first, each after the one before it answers its probe (vLLM profiles the free memory as it starts,
// so on unified memory the order matters). The supervisor restarts one alone the same way (bringUpCompanion).
import { ApplicationFailure, sleep } from '@temporalio/workflow';
import type { CompanionProbe } from '../activities/companions.js';
import { startOrder, type CompanionSpec } from '../config/companions.js';
import { formatDuration, parseDuration } from '../config/duration.js';
import { companionInput } from '../host-commands/step-inputs.js';
import { FailureType } from '../shared/failures.js';
import type { ClusterRun, DeployRun } from './cluster-run.js';
import { messageOf } from './failures.js';
import { publishDetails } from './step-tracker.js';
import type { CompanionProgress } from './steps.js';

/** How often a starting companion is probed. */
export const companionPollMs = 5_000;

/** startCompanions: every companion of the spec, one after the other, each ready before the next starts. */
export async function startCompanions(run: DeployRun): Promise<void> {
  const { spec, tracker, progress, launchId } = run;
  if (spec.companions.length === 0) return tracker.skip('startCompanions', 'no companions');
  const order = startOrder(spec.companions);
  const states: CompanionProgress[] = order.map((c) => ({ name: c.name, host: c.host, status: 'pending' }));
  progress.companions = states;
  await tracker.run('startCompanions', async () => {
    for (const [i, companion] of order.entries()) {
      const state = states[i];
      if (!state) continue;
      await bringUpCompanion(run, launchId, companion, (change) => {
        Object.assign(state, change);
        publishDetails(progress);
      });
    }
    tracker.detail(
      'startCompanions',
      states.map((s) => `${s.name} on ${s.host}: ready in ${formatDuration(s.durationMs ?? 0)}`).join('; '),
    );
  });
}

/**
 * Starts one companion's container and probes it until it does its work: the container stopping, or its
 * readyTimeout passing, fails it. `report` hears each change of its state.
 */
export async function bringUpCompanion(
  { spec, hosts, acts }: ClusterRun,
  launchId: string,
  companion: CompanionSpec,
  report: (state: Partial<CompanionProgress>) => void = () => undefined,
): Promise<CompanionProbe> {
  const host = hosts.find((h) => h.name === companion.host);
  if (!host) {
    throw ApplicationFailure.nonRetryable(
      `companion ${companion.name}: no host ${companion.host}`,
      FailureType.invalidSpec,
    );
  }
  const input = companionInput(spec, launchId, host, companion);
  const startedAtMs = Date.now();
  report({ status: 'starting', startedAtMs });
  const { startCompanion } = acts('startCompanions', 'startCompanion');
  const { probeCompanion } = acts('startCompanions', 'probeCompanion');
  try {
    await startCompanion(input);
    const deadline = startedAtMs + (parseDuration(companion.readyTimeout) ?? 600_000);
    for (;;) {
      await sleep(companionPollMs);
      const probe = await probeCompanion(input);
      if (probe.ok) {
        report({ status: 'ready', durationMs: Date.now() - startedAtMs, detail: probe.detail });
        return probe;
      }
      report({ detail: probe.error });
      const where = `companion ${companion.name} (${input.container} on ${host.name})`;
      if (!probe.running) {
        throw ApplicationFailure.create({
          type: FailureType.companionFailed,
          message: `${where} stopped before it was ready: ${probe.error}${probe.logTail ? `\n--- container log (tail) ---\n${probe.logTail}` : ''}`,
          nonRetryable: true,
          details: [{ companion: companion.name, host: host.name }],
        });
      }
      if (Date.now() >= deadline) {
        throw ApplicationFailure.create({
          type: FailureType.companionNotReady,
          message: `${where} did not pass its ${companion.probe} probe within readyTimeout ${companion.readyTimeout}: ${probe.error}. Raise companions[].readyTimeout if it loads slowly, or check \`docker logs ${input.container}\` there.`,
          nonRetryable: true,
          details: [{ companion: companion.name, host: host.name }],
        });
      }
    }
  } catch (err) {
    // Its own error (a docker run refused, its port taken, its probe's last answer), so every view names it.
    report({ status: 'failed', durationMs: Date.now() - startedAtMs, detail: messageOf(err).split('\n')[0] });
    throw err;
  }
}
