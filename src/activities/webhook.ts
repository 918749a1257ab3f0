// A webhook notification: one JSON POST, with an optional Slack-compatible `text`. The URL can be a credential
// (a Slack webhook's path is its token), so no message or failure shows more of it than its origin. Temporal's
// retry policy (the notify workflow's) does the retrying with backoff.
import { ApplicationFailure } from '@temporalio/common';
import { resolveValue } from './secrets.js';
import type { WebhookInput, WebhookResult } from './types.js';

const timeoutMs = 10_000;

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(not a URL)';
  }
}

export async function postWebhook(input: WebhookInput): Promise<WebhookResult> {
  const url = (await resolveValue('notify.webhooks[].url', input.url)) ?? '';
  const where = originOf(url);
  const body = JSON.stringify({
    event: input.event,
    cluster: input.cluster,
    ...(input.slack ? { text: input.text } : {}),
    details: input.details,
  });
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw ApplicationFailure.create({
      type: 'WebhookFailed',
      message: `POST to the webhook at ${where} failed: ${cause.split(url).join(where)}`,
    });
  }
  await res.body?.cancel();
  if (!res.ok) {
    throw ApplicationFailure.create({
      type: 'WebhookFailed',
      message: `the webhook at ${where} answered HTTP ${res.status}`,
      // A 4xx other than 408/429 says the request itself is wrong: retrying cannot help.
      nonRetryable: res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429,
    });
  }
  return { status: res.status };
}
