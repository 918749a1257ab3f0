// Notifications: a small workflow per event that POSTs to every webhook subscribed to it, each retried with
// backoff, and records what failed. Deploys and the supervisor start it and do not wait for it (abandoned
// child), so a webhook that is down never blocks them; its failures are in this workflow's history and result,
// and in its memo, where `liftoff status` reads them (one visibility list, no history to fetch).
import { deprecatePatch, proxyActivities, startChild, upsertMemo, uuid4 } from '@temporalio/workflow';
import type { DeploySpec } from '../config/schema.js';
import type { NotifyEvent } from '../config/notify.js';
import { deployWorkflowId } from '../shared/constants.js';
import type { Activities } from './activity-options.js';
import { messageOf } from './failures.js';
import { patches } from './patches.js';
import { slackEscape, slackHostText } from '../shared/host-markup.js';

// The `text` of each notification, as Slack reads it: every part escaped (& < >), and what came from a host or a
// server (a failure's message, a probe's error, the reason of a degraded cluster) in a code span, so a server's
// error body cannot ping a channel, disguise a link or load an image.
export const notifyText = {
  deployFailed: (cluster: string, message: string): string =>
    `✖ deploy of ${slackEscape(cluster)} failed: ${slackHostText(message)}`,
  deploySucceeded: (cluster: string, model: string, endpoint: string): string =>
    `✔ ${slackEscape(cluster)} is serving ${slackEscape(model)} at ${slackEscape(endpoint)}`,
  lost: (cluster: string, cause: string): string =>
    `✖ ${slackEscape(cluster)} is lost: ${slackHostText(cause)}`,
  relaunched: (cluster: string, n: number, cause: string): string =>
    `↻ relaunching ${slackEscape(cluster)} (#${n}): ${slackHostText(cause)}`,
  recovered: (cluster: string, launchId: string): string =>
    `✔ ${slackEscape(cluster)} is serving again (${slackEscape(launchId)})`,
  degraded: (cluster: string, reason: string): string =>
    `✖ ${slackEscape(cluster)} is degraded: ${slackHostText(reason)}`,
  rolledBack: (cluster: string, from: number | undefined, to: number, cause: string): string =>
    `↩ ${slackEscape(cluster)} rolled back${from !== undefined ? ` from revision ${from}` : ''} to revision ${to}, serving again: ${slackHostText(cause)}`,
  companionRestarted: (
    cluster: string,
    name: string,
    host: string,
    n: number,
    cause: string,
    error: string | undefined,
  ): string =>
    error === undefined
      ? `↻ companion ${slackEscape(name)} on ${slackEscape(host)} of ${slackEscape(cluster)} restarted alone (#${n}), serving again: ${slackHostText(cause)}`
      : `✖ companion ${slackEscape(name)} on ${slackEscape(host)} of ${slackEscape(cluster)} restarted alone (#${n}) and still fails: ${slackHostText(error)}`,
  companionFailed: (cluster: string, name: string, host: string, reason: string): string =>
    `✖ companion ${slackEscape(name)} on ${slackEscape(host)} of ${slackEscape(cluster)} is left failed: ${slackHostText(reason)}`,
};

export interface NotifyInput {
  cluster: string;
  event: NotifyEvent;
  text: string;
  details: Record<string, unknown>;
  webhooks: DeploySpec['notify']['webhooks'];
}

const { postWebhook } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 6 },
});

export async function notify(input: NotifyInput): Promise<{ delivered: number; failed: string[] }> {
  const { webhooks, ...message } = input;
  const results = await Promise.allSettled(
    webhooks.map((w) => postWebhook({ ...message, url: w.url, slack: w.slack })),
  );
  const failed = results.flatMap((r, i) =>
    r.status === 'rejected' ? [`webhook ${i + 1}: ${messageOf(r.reason)}`] : [],
  );
  const delivered = results.length - failed.length;
  deprecatePatch(patches.notifyRecord);
  upsertMemo({ notify: { cluster: input.cluster, event: input.event, delivered, failed } });
  return { delivered, failed };
}

/**
 * Starts the notification of `event` to the spec's webhooks that want it; nothing at all (no command in
 * history) when none does. Never throws: a notification that cannot start is not the caller's failure.
 */
export async function sendNotification(
  spec: DeploySpec,
  event: NotifyEvent,
  text: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  const webhooks = spec.notify.webhooks.filter((w) => w.events.includes(event));
  if (webhooks.length === 0) return;
  const input: NotifyInput = { cluster: spec.cluster, event, text, details, webhooks };
  try {
    await startChild(notify, {
      workflowId: `${deployWorkflowId(spec.cluster)}-notify-${event}-${uuid4()}`,
      args: [input],
      parentClosePolicy: 'ABANDON',
    });
  } catch {
    // Recorded in history as the failed start; the deploy or supervision goes on.
  }
}
