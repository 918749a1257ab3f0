// Keeps secret values out of everything liftoff shows or records: failure messages, results, log tails.
// Pure (no Node builtins), so workflows may use it too.

/** What a secret value is replaced with. */
export const redactedMarker = '[redacted]';

// An env var whose name says it holds a credential. Matched anywhere in the name, case-insensitively:
// HF_TOKEN, HUGGING_FACE_HUB_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, …
const secretName = /TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;

export function isSecretEnvName(name: string): boolean {
  return secretName.test(name);
}

/** The values of the env vars whose names look secret (empty values left out: there is nothing to hide). */
export function secretEnvValues(env: Readonly<Record<string, string>> | undefined): string[] {
  if (!env) return [];
  return Object.entries(env)
    .filter(([name, value]) => isSecretEnvName(name) && value !== '')
    .map(([, value]) => value);
}

/** Values given to --api-key in the serve args: secrets that are not env vars. */
export function apiKeys(args: readonly string[]): string[] {
  const keys: string[] = [];
  args.forEach((arg, i) => {
    if (arg === '--api-key' && args[i + 1]) keys.push(args[i + 1] ?? '');
    else if (arg.startsWith('--api-key=')) keys.push(arg.slice('--api-key='.length));
  });
  return keys.filter((k) => k !== '');
}

/**
 * Replaces every occurrence of each secret in `text`. A secret is also found in the forms it takes
 * once written into a shell command (single-quoted, where `'` becomes `'\''`) or into JSON (escaped),
 * since commands and JSON details are what messages quote.
 */
export function redact(text: string, secrets: readonly string[]): string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === '') continue;
    forms.add(secret);
    forms.add(secret.replaceAll("'", `'\\''`));
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  if (forms.size === 0) return text;
  // One pass over the text, longest form first: a secret that contains another is replaced whole, and
  // the marker itself is never searched again.
  const ordered = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
  return text.replace(new RegExp(ordered.join('|'), 'g'), redactedMarker);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
