// The `notify` section of the spec: webhooks that hear of deploys and of the supervisor's decisions. A URL may
// be a secret reference, resolved by the worker inside the activity; one whose path or query is its token (Slack,
// Discord, Teams…) must be: the spec's rule for credential-shaped values (shared/secrets.ts) refuses it literal.
// Where a URL may go is the worker's policy's to say (webhook-policy.ts), not the schema's.
import { z } from 'zod';
import { secretRefSchema } from './env-schema.js';

export const notifyEvents = [
  'deploySucceeded',
  'deployFailed',
  'lost',
  'relaunched',
  'degraded',
  'recovered',
  'rolledBack',
  'companionRestarted',
  'companionFailed',
] as const;
export type NotifyEvent = (typeof notifyEvents)[number];

/** Webhooks a spec may have: each event is one POST to each, retried; more would be a way to flood from the worker. */
const maxWebhooks = 10;

const httpUrl = z.string().refine((s) => /^https?:\/\/[^\s/]+/.test(s), {
  error: (issue) =>
    `${JSON.stringify(issue.input)} is not an http(s) URL; write e.g. https://hooks.example.com/liftoff, or { fromEnv: NAME } when the URL is a secret`,
});

const webhook = z.strictObject({
  url: z.union([httpUrl, secretRefSchema]),
  /** Which events to send; default every one. */
  events: z
    .array(z.enum(notifyEvents, { error: `expected one of ${notifyEvents.join(', ')}` }))
    .min(1, 'expected at least one event (or leave events out for all)')
    .default([...notifyEvents]),
  /** Add a Slack-compatible `text` field to the JSON. */
  slack: z.boolean().default(true),
});

export const notifySchema = z
  .strictObject({
    webhooks: z
      .array(webhook)
      .max(maxWebhooks, {
        error: (issue) =>
          `${Array.isArray(issue.input) ? issue.input.length : 'too many'} webhooks; a spec may have at most ${maxWebhooks} (each event is posted to every one of them): keep those that need it, or post to one receiver that fans out`,
      })
      .default([]),
  })
  .prefault({});
