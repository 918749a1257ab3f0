// Failures as the history stores them (Temporal's Failure: message, one …FailureInfo, cause) turned into text,
// and the workflow's own failure into the report's FailureReport.
import type { HostDiagnostics } from '../activities/types.js';
import { isRecord, payloadValues } from './events.js';
import type { FailureReport } from './model.js';
import { dropUndefined, stringArray, stringOr } from './values.js';

/** The workflow's failure; the deploy's details[0] ({ step, causeDetails, diagnostics, teardown }) unpacked. */
export function failureReport(failure: unknown): FailureReport {
  const f = isRecord(failure) ? failure : {};
  const info = isRecord(f.applicationFailureInfo) ? f.applicationFailureInfo : {};
  const [details] = payloadValues(info.details);
  const causes: string[] = [];
  for (let c = f.cause; isRecord(c); c = c.cause) causes.push(failureText(c, false));
  const deployDetails =
    isRecord(details) && ('diagnostics' in details || 'step' in details) ? details : undefined;
  return dropUndefined({
    type: stringOr(info.type) ?? failureKind(f),
    message: stringOr(f.message) ?? '',
    step: stringOr(deployDetails?.step),
    nonRetryable: typeof info.nonRetryable === 'boolean' ? info.nonRetryable : undefined,
    causes,
    diagnostics: Array.isArray(deployDetails?.diagnostics)
      ? (deployDetails.diagnostics as HostDiagnostics[])
      : [],
    teardown:
      deployDetails && Array.isArray(deployDetails.teardown)
        ? stringArray(deployDetails.teardown)
        : undefined,
    details: deployDetails ? undefined : details,
  });
}

/** One line per failure: "Type: message" and its causes, e.g. a heartbeat timeout and what came before it. */
export function failureText(failure: unknown, withCauses = true): string {
  if (!isRecord(failure)) return String(failure);
  const info = isRecord(failure.applicationFailureInfo) ? failure.applicationFailureInfo : undefined;
  const type = stringOr(info?.type) ?? failureKind(failure);
  let text = `${type}: ${stringOr(failure.message) ?? ''}`;
  if (withCauses && isRecord(failure.cause)) text += ` (cause: ${failureText(failure.cause)})`;
  return text;
}

function failureKind(f: Record<string, unknown>): string {
  if (isRecord(f.timeoutFailureInfo)) return `Timeout(${enumText(f.timeoutFailureInfo.timeoutType) ?? '?'})`;
  if (isRecord(f.canceledFailureInfo)) return 'Cancelled';
  if (isRecord(f.terminatedFailureInfo)) return 'Terminated';
  if (isRecord(f.activityFailureInfo)) return 'ActivityFailure';
  if (isRecord(f.childWorkflowExecutionFailureInfo)) return 'ChildWorkflowFailure';
  if (isRecord(f.serverFailureInfo)) return 'ServerFailure';
  return 'Error';
}

/** "TIMEOUT_TYPE_HEARTBEAT" / "Heartbeat" → "heartbeat". */
export function enumText(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const known = ['TIMEOUT_TYPE', 'WORKFLOW_TASK_FAILED_CAUSE', 'RETRY_STATE'];
  const prefix = known.find((p) => value.startsWith(`${p}_`));
  return (prefix ? value.slice(prefix.length + 1) : value).toLowerCase().replaceAll('_', ' ');
}
