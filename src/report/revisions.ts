// A cluster's revisions read offline, from an export of its workflow's history (`temporal workflow show
// --workflow-id liftoff-cluster:NAME --output json`): the revisions the run started with, then each recordRevision,
// markRevisionBad, release and handover applied by the same rules the workflow applies (workflows/cluster-record.ts),
// and, when the run ended or continued as new, the record it handed on, which is the workflow's own word.
import { isRecord, payloadValues, type HistoryEventView } from './events.js';
import { markRevisionBad, newRecord, recordRevision, released } from '../workflows/cluster-record.js';
import type { ClusterRecord, RevisionToRecord } from '../shared/cluster-api.js';
import type { Revision } from '../shared/revisions.js';

export class NotAClusterHistoryError extends Error {
  override name = 'NotAClusterHistoryError';
}

export function revisionsFromHistory(events: readonly HistoryEventView[]): {
  cluster: string;
  revisions: Revision[];
} {
  const started = events.find((e) => e.kind === 'workflowExecutionStarted');
  const type = started && isRecord(started.attrs.workflowType) ? started.attrs.workflowType.name : undefined;
  if (!started || type !== 'cluster')
    throw new NotAClusterHistoryError(
      `expected the history of a cluster's workflow (liftoff-cluster:NAME), got ${typeof type === 'string' ? `a ${type} workflow` : 'no start event'}`,
    );
  const input = payloadValues(started.attrs.input)[0];
  const cluster = isRecord(input) && typeof input.cluster === 'string' ? input.cluster : '(unknown)';
  const record: ClusterRecord = newRecord(cluster, started.timeMs);
  record.revisions =
    revisionsIn(isRecord(input) && isRecord(input.carry) ? input.carry.record : undefined) ??
    (isRecord(input) && Array.isArray(input.revisions) ? (input.revisions as Revision[]) : []);
  for (const e of events) {
    if (e.kind === 'workflowExecutionUpdateAccepted') {
      const request = isRecord(e.attrs.acceptedRequest) ? e.attrs.acceptedRequest : {};
      const call = isRecord(request.input) ? request.input : {};
      const [arg] = payloadValues(call.args);
      if (call.name === 'recordRevision' && isRecord(arg))
        recordRevision(record, arg as RevisionToRecord, e.timeMs);
      if (call.name === 'markRevisionBad' && isRecord(arg) && typeof arg.number === 'number')
        markRevisionBad(record, arg.number, typeof arg.reason === 'string' ? arg.reason : 'bad');
      if (call.name === 'release' || call.name === 'handOver') released(record, 'history', e.timeMs);
    }
    const handedOn =
      e.kind === 'workflowExecutionCompleted'
        ? revisionsIn(payloadValues(e.attrs.result)[0])
        : e.kind === 'workflowExecutionContinuedAsNew'
          ? revisionsIn(fromCarry(payloadValues(e.attrs.input)[0]))
          : undefined;
    if (handedOn) record.revisions = handedOn;
  }
  return { cluster, revisions: record.revisions };
}

function fromCarry(input: unknown): unknown {
  return isRecord(input) && isRecord(input.carry) ? input.carry.record : undefined;
}

function revisionsIn(record: unknown): Revision[] | undefined {
  return isRecord(record) && Array.isArray(record.revisions) ? (record.revisions as Revision[]) : undefined;
}
