// The cluster's recent notifications, for `liftoff status`: each is a small workflow that records in its memo
// what it delivered and what failed (src/workflows/notify.ts), so one visibility list shows a webhook that is
// down without fetching any history. Those still retrying are counted as pending.
import type { Client } from '@temporalio/client';
import { deployWorkflowId } from '../shared/constants.js';
import type { NotifyEvent } from '../config/notify.js';
import { formatTime } from '../report/format.js';
import { cutUrlsInText } from '../shared/webhook-shown.js';

/** The newest this many notifications are read: enough for the last few supervisor decisions. */
const listCap = 50;
const shownFailures = 5;

export interface FailedNotification {
  workflowId: string;
  event: NotifyEvent;
  /** When the notification ended, ISO. */
  at: string;
  /** One line per webhook that failed after its retries (the URL shown only by its origin). */
  errors: string[];
}

export interface NotificationsReport {
  /** Notifications listed (newest first, up to a cap). */
  listed: number;
  /** Still retrying. */
  pending: number;
  /** Ended with every webhook delivered. */
  delivered: number;
  /** Ended with at least one webhook failed, newest first. */
  failed: FailedNotification[];
}

export async function listNotifications(
  client: Client,
  cluster: string,
): Promise<NotificationsReport | undefined> {
  const prefix = `${deployWorkflowId(cluster)}-notify-`;
  const report: NotificationsReport = { listed: 0, pending: 0, delivered: 0, failed: [] };
  const query = `WorkflowType = 'notify' AND WorkflowId STARTS_WITH '${prefix.replaceAll("'", "\\'")}'`;
  try {
    for await (const info of client.workflow.list({ query })) {
      report.listed += 1;
      const memo = (info.memo ?? {}) as { notify?: { event?: NotifyEvent; failed?: string[] } };
      if (info.status.name === 'RUNNING') report.pending += 1;
      else if ((memo.notify?.failed ?? []).length > 0) {
        report.failed.push({
          workflowId: info.workflowId,
          event: memo.notify?.event ?? (info.workflowId.slice(prefix.length).split('-')[0] as NotifyEvent),
          at: (info.closeTime ?? info.startTime).toISOString(),
          // What the memo holds as the worker wrote it: any URL in it is shown by its origin here all the
          // same (a memo of an older liftoff, or a message that quotes one).
          errors: (memo.notify?.failed ?? []).map(cutUrlsInText),
        });
      } else if (memo.notify) report.delivered += 1;
      if (report.listed >= listCap) break;
    }
  } catch {
    // A server whose visibility cannot answer this query (no STARTS_WITH): status goes on without the section.
    return undefined;
  }
  if (report.listed === 0) return undefined;
  report.failed.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  return report;
}

export function renderNotifications(r: NotificationsReport): string {
  const lines = [
    `notifications: ${r.failed.length} failed, ${r.delivered} delivered, ${r.pending} retrying (of the last ${r.listed})`,
  ];
  for (const f of r.failed.slice(0, shownFailures)) {
    lines.push(`  ✗ ${f.event} ${formatTime(Date.parse(f.at))}: ${f.errors.join('; ')}`);
  }
  return lines.join('\n');
}
