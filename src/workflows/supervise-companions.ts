// The supervisor's care of the companions (spec.companions): each round's companion probes folded into their state
// (supervise-companion-state.ts), and a companion that failed supervise.failureThreshold rounds in a row while the
// main model passed restarted alone (bringUpCompanion: its container removed and started again, then probed until
// ready), within its own budget; past it, left failed with a notification. The restart runs beside the rounds, so
// the main model stays probed meanwhile; a whole-cluster relaunch cancels it (the deploy brings every companion back
// after the main model) and starts their state over. A spec without companions does nothing here.
import { CancellationScope, isCancellation } from '@temporalio/workflow';
import type { CompanionRoundProbe } from '../activities/cluster-probe.js';
import type { CompanionInput } from '../activities/companions.js';
import { baseUrl } from '../host-commands/launch.js';
import { companionInput } from '../host-commands/step-inputs.js';
import type { ClusterRun } from './cluster-run.js';
import { bringUpCompanion } from './companions.js';
import { messageOf } from './failures.js';
import { notifyText, sendNotification } from './notify.js';
import {
  beginRestart,
  companionAction,
  endRestart,
  initialCompanions,
  recordCompanionProbe,
  type CompanionBudget,
  type CompanionState,
} from './supervise-companion-state.js';
import type { SuperviseState } from './supervise-state.js';

export interface CompanionSupervisor {
  /** What this round probes: every companion not being restarted (none without companions). */
  probeInputs(): CompanionInput[];
  /** Folds the round's companion probes in and starts what they call for: a restart, or leaving one failed. */
  afterRound(probes: readonly CompanionRoundProbe[] | undefined, mainPassed: boolean): Promise<void>;
  /** A restart is running (the run does not continue as new under it). */
  restarting(): boolean;
  /** Before a whole-cluster relaunch: the deploy removes and starts every companion itself. */
  cancelRestarts(): void;
  /** After a whole-cluster relaunch: every companion as that launch left it. */
  reset(): void;
}

export function companionSupervisor(
  cluster: ClusterRun,
  state: SuperviseState,
  budget: CompanionBudget,
  publish: () => Promise<void>,
): CompanionSupervisor {
  const { spec, hosts } = cluster;
  const fresh = (): Record<string, CompanionState> =>
    initialCompanions(
      spec.companions.map((c) => {
        const host = hosts.find((h) => h.name === c.host);
        return { name: c.name, host: c.host, endpoint: baseUrl(host?.clusterIp ?? c.host, c.port) };
      }),
    );
  if (spec.companions.length > 0) state.companions ??= fresh();
  const running = new Map<string, CancellationScope>();

  const restart = (c: CompanionState, cause: string): void => {
    const companion = spec.companions.find((x) => x.name === c.name);
    if (!companion) return;
    const entry = beginRestart(c, Date.now());
    const launchId = state.launch.launchId;
    const scope = new CancellationScope();
    running.set(c.name, scope);
    const n = c.restarts.length;
    const restarted = async (): Promise<void> => {
      try {
        const probe = await scope.run(() => bringUpCompanion(cluster, launchId, companion));
        endRestart(c, entry, Date.now(), probe.ok ? probe : { ok: false, error: probe.error });
      } catch (err) {
        // Cancelled by a whole-cluster relaunch, which starts the companions' state over.
        if (isCancellation(err)) return;
        endRestart(c, entry, Date.now(), { ok: false, error: messageOf(err) });
      } finally {
        running.delete(c.name);
      }
      await publish();
      await sendNotification(
        spec,
        'companionRestarted',
        notifyText.companionRestarted(spec.cluster, c.name, c.host, n, cause, entry.error),
        {
          companion: c.name,
          host: c.host,
          n,
          cause,
          outcome: entry.outcome,
          ...(entry.error ? { error: entry.error } : {}),
        },
      );
    };
    void restarted();
  };

  return {
    probeInputs: () =>
      spec.companions.flatMap((c) => {
        const host = hosts.find((h) => h.name === c.host);
        if (!host || running.has(c.name)) return [];
        return [companionInput(spec, state.launch.launchId, host, c)];
      }),
    afterRound: async (probes, mainPassed) => {
      const companions = state.companions;
      if (!companions || !probes) return;
      const nowMs = Date.now();
      for (const probe of probes) {
        const c = companions[probe.name];
        if (!c) continue;
        recordCompanionProbe(c, probe, mainPassed, nowMs);
        const cause = c.lastProbe?.error ?? 'its probe failed';
        const action = companionAction(c, budget, nowMs);
        if (action.kind === 'restart') restart(c, cause);
        if (action.kind === 'degrade') {
          c.status = 'degraded';
          await sendNotification(
            spec,
            'companionFailed',
            notifyText.companionFailed(
              spec.cluster,
              c.name,
              c.host,
              `${action.reason}; last failure: ${cause}`,
            ),
            { companion: c.name, host: c.host, reason: action.reason, cause },
          );
        }
      }
    },
    restarting: () => running.size > 0,
    cancelRestarts: () => {
      for (const scope of running.values()) scope.cancel();
      running.clear();
    },
    reset: () => {
      if (spec.companions.length > 0) state.companions = fresh();
    },
  };
}
