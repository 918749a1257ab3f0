// Webhook URLs that are credentials: whoever has the URL can post to the channel, because its path or query is
// the token (Slack, Discord, Teams/Office connectors, Azure Logic Apps and Power Automate workflows with `sig=`,
// Google Chat with `key=`/`token=`). secrets.ts counts them among the values shaped like a credential: the
// schema refuses one written in the spec (it must come as { fromEnv } / { fromFile }) and redaction keeps its
// origin only. Linear: one pass cuts the text into URLs (a run from `http(s)://` to the next space or quote,
// never scanned twice), and each pattern is tried once, anchored, on each URL; group 1 is the origin kept.
// Pure (no Node builtins, no URL): workflows import it through the schema.

const rest = String.raw`[^\s"'<>]`;

const tokenWebhooks: ReadonlyArray<{ kind: string; source: string }> = [
  {
    kind: 'a Slack webhook URL (its path is its token)',
    source: String.raw`^(https?://hooks\.slack(?:-gov)?\.com)(?::\d+)?[/\\]${rest}+`,
  },
  {
    kind: 'a Discord webhook URL (its path is its token)',
    source: String.raw`^(https?://(?:(?:canary|ptb)\.)?discord(?:app)?\.com)(?::\d+)?[/\\]api[/\\](?:v\d+[/\\])?webhooks[/\\]${rest}+`,
  },
  {
    kind: 'a Teams (Office) webhook URL (its path is its token)',
    source: String.raw`^(https?://[a-z0-9.-]*\.webhook\.office\.com)(?::\d+)?[/\\]${rest}+`,
  },
  {
    kind: 'a Teams (Office) webhook URL (its path is its token)',
    source: String.raw`^(https?://outlook\.office(?:365)?\.com)(?::\d+)?[/\\]webhook${rest}*`,
  },
  {
    kind: 'a signed workflow URL (its sig= is its token)',
    source: String.raw`^(https?://[a-z0-9.-]*\.(?:logic\.azure\.com|api\.powerplatform\.com))(?::\d+)?(?=${rest}*[?&]sig=)${rest}+`,
  },
  {
    kind: 'a Google Chat webhook URL (its key= and token= are its token)',
    source: String.raw`^(https?://chat\.googleapis\.com)(?::\d+)?(?=${rest}*[?&](?:key|token)=)${rest}+`,
  },
];

const patterns = tokenWebhooks.map(({ kind, source }) => ({ kind, pattern: new RegExp(source, 'i') }));
const urlInText = new RegExp(String.raw`\bhttps?://${rest}+`, 'gi');

function shapeOfUrl(url: string) {
  return patterns.find(({ pattern }) => pattern.test(url));
}

/** What kind of token-bearing webhook URL `value` holds, or undefined. */
export function tokenWebhookShape(value: string): string | undefined {
  for (const [url] of value.matchAll(urlInText)) {
    const shape = shapeOfUrl(url);
    if (shape) return shape.kind;
  }
  return undefined;
}

/** `text` with every token-bearing webhook URL cut to its origin and `marker`. */
export function redactTokenWebhooks(text: string, marker: string): string {
  return text.replace(urlInText, (url) => {
    const shape = shapeOfUrl(url);
    return shape ? url.replace(shape.pattern, `$1/${marker}`) : url;
  });
}
