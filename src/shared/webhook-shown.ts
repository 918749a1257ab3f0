// How a webhook URL is shown: by its origin alone. A webhook's path or query is often its token, and a spec
// may hold a literal URL whose service liftoff does not know (webhook-tokens.ts knows a few), so reports
// (postmortem, schedule describe) show `https://hooks.example.com/[redacted]` wherever the spec or a
// notification's input holds one. Pure: no URL class, a regex that reads the URL once.
import { isObject, redactedMarker } from './secrets.js';

const urlParts = /^([a-z][a-z0-9+.-]*:)\/\/([^/?#\\]*)(.*)$/is;

/** `url` cut to its origin (userinfo dropped), with the marker where a path or query was. */
export function shownWebhookUrl(url: string): string {
  const m = urlParts.exec(url);
  if (!m) return redactedMarker;
  const [, scheme = '', authority = '', rest = ''] = m;
  const origin = `${scheme.toLowerCase()}//${authority.replace(/^[^@]*@/, '').toLowerCase()}`;
  return rest === '' || rest === '/' ? origin : `${origin}/${redactedMarker}`;
}

export interface ShownWebhooks {
  /** The fields whose URL was cut (`notify.webhooks[0].url`). */
  fields: string[];
  /** The URLs as they were, to redact wherever else they appear. */
  urls: string[];
}

/**
 * Cuts, in place, every literal webhook URL of `value` to what shownWebhookUrl keeps: a deploy spec's
 * `notify.webhooks[].url`, or a notify workflow's input's `webhooks[].url`. References are left as they are.
 */
export function cutWebhookUrls(value: unknown): ShownWebhooks {
  const out: ShownWebhooks = { fields: [], urls: [] };
  if (!isObject(value)) return out;
  const lists: Array<[string, unknown]> = [['webhooks', value.webhooks]];
  if (isObject(value.notify)) lists.push(['notify.webhooks', value.notify.webhooks]);
  for (const [at, list] of lists) {
    if (!Array.isArray(list)) continue;
    list.forEach((hook: unknown, i) => {
      if (!isObject(hook) || typeof hook.url !== 'string') return;
      const shown = shownWebhookUrl(hook.url);
      if (shown === hook.url) return;
      out.urls.push(hook.url);
      out.fields.push(`${at}[${i}].url`);
      hook.url = shown;
    });
  }
  return out;
}

const urlInText = /\bhttps?:\/\/[^\s"'<>]+/gi;

/** `text` with every http(s) URL in it cut to what shownWebhookUrl keeps: for messages about webhooks. */
export function cutUrlsInText(text: string): string {
  return text.replace(urlInText, (url) => shownWebhookUrl(url));
}
