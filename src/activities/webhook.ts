// A webhook notification: one JSON POST, with an optional Slack-compatible `text`. Where it may go is the worker
// policy's to say (config/webhook-policy.ts): https:// to public addresses, or an origin the policy lists; a name
// is checked as it is resolved for the connection (checked-lookup.ts). A redirect is a failure, never followed
// (node's http does not follow one: a 307 would re-send the POST and its body elsewhere). The URL can be a
// credential, and what failed is the spec author's to read, so a message shows the origin and what happened,
// never the path, an errno, or the address a name resolved to. Temporal's retry policy (the notify workflow's)
// does the retrying with backoff; a refusal, a redirect and most 4xx are final.
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { activityFailure } from './activity-failure.js';
import { checkWebhookUrl, insideRefusal, type WebhookTarget } from '../config/webhook-policy.js';
import { FailureType } from '../shared/failures.js';
import { checkedLookup, InsideAddressError } from './checked-lookup.js';
import { resolveValue } from './secrets.js';
import type { WebhookInput } from './types.js';
import { activeWorkerPolicy } from './worker-policy.js';

const timeoutMs = 10_000;

const failed = (message: string, final: boolean) =>
  activityFailure(FailureType.webhookFailed, message, final);
const refused = (message: string) => activityFailure(FailureType.webhookRefused, message, true);

/** One POST to `target`; resolves with the answer's status, rejects with the request's error. */
function post(target: WebhookTarget, body: string): Promise<number> {
  const send = target.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req: ClientRequest = send(target.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'user-agent': 'liftoff',
      },
      // A fresh connection a POST, so every one resolves and checks its name again.
      agent: false,
      ...(target.listed ? {} : { lookup: checkedLookup }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    req.on('response', (res: IncomingMessage) => {
      // The answer's body is not read: nothing in it is shown, and a receiver cannot make the worker hold it.
      res.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export async function postWebhook(input: WebhookInput): Promise<{ status: number }> {
  const url = (await resolveValue('notify.webhooks[].url', input.url)) ?? '';
  const policy = activeWorkerPolicy();
  // A literal URL was checked at validation; one from a secret reference is checked here, by the same rules.
  const check = checkWebhookUrl(url, policy);
  if (!check.ok) throw refused(check.message);
  const { target } = check;
  const where = target.origin;
  const body = JSON.stringify({
    event: input.event,
    cluster: input.cluster,
    ...(input.slack ? { text: input.text } : {}),
    details: input.details,
  });
  let status: number;
  try {
    status = await post(target, body);
  } catch (err) {
    if (err instanceof InsideAddressError) throw refused(insideRefusal(where, err.inside, policy));
    const timedOut = err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
    throw failed(
      `the webhook at ${where} could not be reached${timedOut ? ` (no answer within ${timeoutMs / 1000} s)` : ''}`,
      false,
    );
  }
  if (status >= 300 && status < 400) {
    throw failed(`the webhook at ${where} redirected (HTTP ${status}); redirects are not followed`, true);
  }
  if (status < 200 || status >= 300) {
    // A 4xx other than 408/429 says the request itself is wrong: retrying cannot help.
    throw failed(
      `the webhook at ${where} answered HTTP ${status}`,
      status >= 400 && status < 500 && status !== 408 && status !== 429,
    );
  }
  return { status };
}
