// Where a webhook may go: the worker posts only to `https://` at public addresses, unless its policy lists the
// URL's origin (worker-policy.ts `webhooks`), so a spec's author cannot make the worker scan or poke its own
// network (the cloud metadata service, the Temporal frontend, the compose network, local admin ports). What can
// be judged from the URL alone is checked here, at validation for a literal URL and in the activity for one
// from a secret reference; a host name is checked when the activity resolves it (checked-lookup.ts), each
// connection anew, so a name that changes its answer (DNS rebinding) cannot slip past. Messages name the origin,
// never the path or query (a webhook's path is often its token).
import { isIP } from 'node:net';
import { insideAddress, type InsideAddress } from './ip-ranges.js';
import { settingHint, type WorkerPolicy } from './worker-policy.js';

/** A webhook URL as the worker judges it. */
export interface WebhookTarget {
  url: URL;
  /** scheme://host[:port], as URL.origin writes it: all a message may show. */
  origin: string;
  /** The policy lists the origin: any address, http too. */
  listed: boolean;
}

/** The address a URL's host names when it is an IP literal (brackets off); undefined for a name. */
function ipLiteralOf(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) !== 0 ? host : undefined;
}

/** The refusal of a webhook whose address lies inside (an IP literal, or what its name resolved to). */
export function insideRefusal(origin: string, inside: InsideAddress, policy: WorkerPolicy): string {
  return `the webhook at ${origin} is refused: ${origin} resolves to ${inside.kind} (${inside.range} is not allowed); list ${origin} under ${settingHint('webhooks', policy)} to allow it`;
}

export type WebhookCheck = { ok: true; target: WebhookTarget } | { ok: false; message: string };

/**
 * What the policy says of `url` before any resolution: refused (not http(s), plain http to an unlisted origin,
 * an IP literal inside), or a target to post to, whose name (when not listed) is still to be checked once
 * resolved. The message never holds the URL's path or query.
 */
export function checkWebhookUrl(url: string, policy: WorkerPolicy): WebhookCheck {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {
      ok: false,
      message: 'the webhook URL is not a URL; write e.g. https://hooks.example.com/liftoff',
    };
  }
  const origin = parsed.origin;
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return {
      ok: false,
      message: `the webhook at ${parsed.protocol}// is not an http(s) URL; write e.g. https://hooks.example.com/liftoff`,
    };
  }
  const listed = policy.webhooks.includes(origin);
  if (!listed) {
    if (parsed.protocol !== 'https:') {
      return {
        ok: false,
        message: `the webhook at ${origin} is refused: plain http:// goes only to the origins the worker lists (webhooks: ${policy.webhooks.length > 0 ? policy.webhooks.join(', ') : 'none'}); use https:// to a public address, or list ${origin} under ${settingHint('webhooks', policy)} to allow it`,
      };
    }
    const literal = ipLiteralOf(parsed);
    const inside = literal !== undefined ? insideAddress(literal) : undefined;
    if (inside) return { ok: false, message: insideRefusal(origin, inside, policy) };
  }
  return { ok: true, target: { url: parsed, origin, listed } };
}
