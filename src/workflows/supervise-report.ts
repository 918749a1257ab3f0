// The supervisor's word to its cluster's workflow (src/workflows/cluster.ts): its state when it changes, and the
// wait before the next relaunch were the cluster lost now, so `liftoff status` shows both without a worker.
import { getExternalWorkflowHandle, patched } from '@temporalio/workflow';
import {
  clusterWorkflowId,
  supervisionChangedSignal,
  type SupervisionChange,
} from '../shared/cluster-api.js';
import { patches } from './patches.js';
import { backoffIfLostNow, type Budget, type SuperviseState } from './supervise-state.js';
import { supervisionRecorder } from './metrics.js';

/** Sends a change only: a round that changes nothing sends nothing. */
export function clusterReporter(cluster: string): (state: SuperviseState, budget: Budget) => Promise<void> {
  let last = '';
  // A cluster deployed before clusters held hosts has no workflow to tell; the first refusal ends the telling.
  let reachable = true;
  const recordMetrics = supervisionRecorder(cluster);
  return async (state, budget) => {
    recordMetrics(state, budget);
    if (!reachable || state.status === 'stopped') return;
    const change: SupervisionChange = {
      state: state.status,
      ...(state.reason !== undefined ? { reason: state.reason.split('\n')[0] ?? '' } : {}),
      servingSinceMs: state.launch.servingSinceMs,
      ...withBackoff(backoffIfLostNow(state, budget, Date.now())),
    };
    const key = JSON.stringify(change);
    if (key === last || !patched(patches.superviseReportsToCluster)) return;
    last = key;
    try {
      await getExternalWorkflowHandle(clusterWorkflowId(cluster)).signal(supervisionChangedSignal, change);
    } catch {
      reachable = false;
    }
  };
}

function withBackoff(ms: number | undefined): { nextBackoffMs?: number } {
  return ms === undefined ? {} : { nextBackoffMs: ms };
}
