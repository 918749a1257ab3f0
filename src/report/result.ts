// What the deploy produced: the workflow's result when it completed, else the summary it kept in its memo.
import { isRecord, payloadValues, type HistoryEventView } from './events.js';
import type { ResultReport } from './model.js';
import { dropUndefined, numberOr, stringOr } from './values.js';

export function resultReport(
  close: HistoryEventView | undefined,
  memo: Record<string, unknown>,
): ResultReport | undefined {
  const summary = isRecord(memo.summary) ? memo.summary : {};
  const value =
    close?.kind === 'workflowExecutionCompleted' ? payloadValues(close.attrs.result)[0] : undefined;
  const r = isRecord(value) ? value : {};
  const smoke = isRecord(r.smoke) ? r.smoke : {};
  const out = dropUndefined({
    endpoint: stringOr(r.endpoint) ?? stringOr(summary.endpoint),
    model: stringOr(r.model) ?? stringOr(summary.model),
    loadSeconds: numberOr(r.loadSeconds) ?? numberOr(summary.loadSeconds),
    totalSeconds: numberOr(r.totalSeconds) ?? numberOr(summary.totalSeconds),
    tokensPerSecond: numberOr(smoke.tokensPerSecond) ?? numberOr(summary.tokensPerSecond),
    smokeText: stringOr(smoke.text),
  });
  return Object.keys(out).length > 0 ? out : undefined;
}
