// A cluster's own workflow, `liftoff-cluster:<name>`: the record of which hosts the cluster holds and what it
// does on them, for as long as it holds them. The first deploy that passes preflight starts it (Update-with-Start
// of `hold`); it ends when `liftoff down` releases the hosts or another cluster's deploy takes them over. Other
// clusters find a host's holder by the search attribute LiftoffHostIds; `liftoff status` reads the memo.
// docs/architecture.md ("The cluster's life") says why it is a record beside the deploy and the supervisor
// rather than their parent.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { deployWorkflowId, searchAttributes, superviseWorkflowId } from '../shared/constants.js';
import {
  clusterQuery,
  deployEndedSignal,
  handOverUpdate,
  holdUpdate,
  markRevisionBadUpdate,
  recordRevisionUpdate,
  releaseUpdate,
  revisionsQuery,
  supervisionChangedSignal,
  type ClusterRecord,
  type HeldCluster,
  type HoldInput,
} from '../shared/cluster-api.js';
import type { Revision } from '../shared/revisions.js';
import { currentRevisionOf } from '../shared/rollback.js';
import {
  deployEnded,
  handedOver,
  hold,
  markRevisionBad,
  newRecord,
  recordRevision,
  released,
  supervisionChanged,
} from './cluster-record.js';
import { stopSupervisionSignal } from './supervise-api.js';
import { patches } from './patches.js';
import { hostDigests } from '../shared/host-digest.js';

export interface ClusterInput {
  cluster: string;
  /** Carried over by continue-as-new. */
  carry?: HeldCluster;
  /** A new tenure starts with the revisions the last one ended with: a cluster's history outlives a `down`. */
  revisions?: Revision[];
}

/**
 * The hosts' LiftoffHostIds: their digests (shared/host-digest.ts), which fit Temporal's 2048-byte cap for any
 * cluster a spec can name; a run begun before them keeps the full machine ids it started with.
 */
function hostIdsAttribute(hosts: readonly { machineId: string }[]): string[] {
  const ids = hosts.map((h) => h.machineId);
  return patched(patches.clusterHostDigests) ? hostDigests(ids) : ids;
}

export async function cluster(input: ClusterInput): Promise<ClusterRecord> {
  const held: HeldCluster = input.carry ?? { record: newRecord(input.cluster, Date.now()), spec: undefined };
  const { record } = held;
  if (!input.carry && input.revisions && input.revisions.length > 0) {
    record.revisions = input.revisions;
    record.revision = currentRevisionOf(input.revisions);
  }
  let ended = false;

  const publish = (): void => {
    upsertSearchAttributes([
      { key: searchAttributes.cluster, value: record.cluster },
      { key: searchAttributes.hostIds, value: ended ? [] : hostIdsAttribute(record.hosts) },
    ]);
    // The revisions stay out of the memo (each holds a spec): `liftoff revisions` queries them.
    const { revisions: _revisions, ...summary } = record;
    upsertMemo({ record: summary });
  };
  const signalSupervisor = async (reason: string): Promise<void> => {
    try {
      await getExternalWorkflowHandle(superviseWorkflowId(record.cluster)).signal(stopSupervisionSignal, {
        reason,
      });
    } catch {
      // No supervisor runs.
    }
  };

  setHandler(clusterQuery, () => held);
  setHandler(revisionsQuery, () => record.revisions ?? []);
  setHandler(recordRevisionUpdate, (revision) => {
    const number = recordRevision(record, revision, Date.now());
    publish();
    return number;
  });
  setHandler(markRevisionBadUpdate, ({ number, reason }) => {
    markRevisionBad(record, number, reason);
    publish();
  });
  setHandler(
    holdUpdate,
    (hold_) => {
      hold(record, hold_, Date.now());
      held.spec = hold_.spec;
      publish();
      return held;
    },
    { validator: (_hold: HoldInput) => refuseWhenEnded(ended, record) },
  );
  setHandler(
    handOverUpdate,
    async ({ to, by }) => {
      handedOver(record, to, by, Date.now());
      ended = true;
      publish();
      // Its supervisor must not relaunch into the hosts, nor its running deploy go on: both end here.
      await signalSupervisor(record.reason ?? `handed over to ${to}`);
      if (record.lastDeploy?.outcome === 'running') {
        await getExternalWorkflowHandle(deployWorkflowId(record.cluster))
          .cancel()
          .catch(() => undefined);
      }
      return held;
    },
    { validator: (_to: { to: string; by: string }) => refuseWhenEnded(ended, record) },
  );
  setHandler(releaseUpdate, ({ by }) => {
    if (!ended) released(record, by, Date.now());
    ended = true;
    publish();
    return record;
  });
  setHandler(deployEndedSignal, (e) => {
    deployEnded(record, e, Date.now());
    publish();
  });
  setHandler(supervisionChangedSignal, (change) => {
    if (ended) return;
    supervisionChanged(record, change);
    publish();
  });

  publish();
  await condition(() => ended || workflowInfo().continueAsNewSuggested);
  await condition(allHandlersFinished);
  if (!ended) return await continueAsNew<typeof cluster>({ cluster: record.cluster, carry: held });
  return record;
}

function refuseWhenEnded(ended: boolean, record: ClusterRecord): void {
  if (ended) throw new Error(`${record.cluster} is ${record.state}: ${record.reason ?? ''}`);
}
