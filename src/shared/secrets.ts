// The one home for "what is a secret": which env names and vllm flags carry a credential, which values look like
// one whatever their name, and how secrets are kept out of everything liftoff shows or records (failure
// messages, results, log tails, reports). The schema refuses what these rules call a secret and every redaction
// hides it, so the two cannot disagree: a secret-named env value, a secret flag's value, and any value of the
// spec shaped like a credential (credentialShape: `hf_…`, `sk-…`, `://user:password@`) are refused, so none
// reaches a workflow's input, its history, a host's `ps` or `docker inspect`; the spec names them with
// `{ fromEnv }` / `{ fromFile }` instead. Pure (no Node builtins): workflows import it through the schema.
import { tail } from './text.js';
import { redactTokenWebhooks, tokenWebhookShape } from './webhook-tokens.js';

/** What a secret value is replaced with. */
export const redactedMarker = '[redacted]';

// An env var whose name says it holds a credential. Matched anywhere in the name, case-insensitively:
// HF_TOKEN, HUGGING_FACE_HUB_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, …
const secretEnvName = /TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;

export function isSecretEnvName(name: string): boolean {
  return secretEnvName.test(name);
}

/** The values of the env vars whose names look secret (empty values left out: there is nothing to hide). */
export function secretEnvValues(env: Readonly<Record<string, unknown>> | undefined): string[] {
  return Object.entries(env ?? {}).flatMap(([name, value]) =>
    typeof value === 'string' && value !== '' && isSecretEnvName(name) ? [value] : [],
  );
}

// ---- Flags ----
//
// vllm's argument parser reads `--api_key` as `--api-key` and accepts any unambiguous prefix of a flag, so
// `--api-k=S` and `--api-ke S` set the API key too. A flag is therefore compared by its normalised name:
// lower-case, `_` read as `-`, the leading dashes and any `=value` removed.
//
// The flags whose value is (or points at) a credential. A prefix of one of them counts once it reaches past the
// flag's first word (`--api-k`, `--hf-t`, `--ssl-k`, `--key-f`): that is where vllm's prefixes become
// unambiguous. Shorter ones are not secret: `--api`, `--hf` and `--ssl` are ambiguous in vllm
// (`--api-server-count`, `--hf-overrides`, `--ssl-certfile`), which refuses them itself, and as names of their own
// they name no credential. A one-word flag (`--credentials`) counts only whole.
const secretFlags = ['api-key', 'hf-token', 'ssl-keyfile', 'key-file', 'credentials'] as const;

// Beyond the list, a flag is secret when its last word is a credential word (the env-name rule's words, as whole
// words: `--aws-secret`, `--db-password`, `--openai-apikey`, `--key`), or when a credential word is followed by
// `file`/`path` (`--token-file`, `--password-path`). Whole words, and the last one, because vllm has many flags
// that merely mention tokens or keys and take no credential: `--max-num-batched-tokens`, `--tokenizer`,
// `--return-tokens-as-token-ids`, `--long-prefill-token-threshold`, `--kv-cache-dtype`.
const credentialWord = /^(?:key|apikey|keyfile|token|secret|password|passwd|credentials?)$/;
const pathWord = /^(?:file|path)$/;

// vllm flags that end in a credential word but take no value: `--allow-credentials` is the CORS switch.
const notSecretFlags = ['allow-credentials'] as const;

/** The flag's name as vllm reads it (`--API_Key=x` → `api-key`); undefined when `arg` is not a flag. */
export function flagName(arg: string): string | undefined {
  const m = /^--?([A-Za-z0-9][A-Za-z0-9_-]*)/.exec(arg);
  if (!m?.[1]) return undefined;
  return m[1].toLowerCase().replaceAll('_', '-');
}

function isUnambiguousPrefix(name: string, flag: string): boolean {
  const firstDash = flag.indexOf('-');
  const minimum = firstDash < 0 ? flag.length : firstDash + 2;
  return name.length >= minimum && flag.startsWith(name);
}

/** Whether a command-line argument (`--api-key`, `--api_key=S`, `--hf-t`, …) is a flag whose value is a credential. */
export function isSecretFlag(arg: string): boolean {
  const name = flagName(arg);
  if (name === undefined) return false;
  if (secretFlags.some((flag) => isUnambiguousPrefix(name, flag))) return true;
  if (notSecretFlags.some((flag) => flag.startsWith(name))) return false;
  const words = name.split('-').filter((w) => w !== '');
  const last = words.at(-1) ?? '';
  const beforeLast = words.at(-2) ?? '';
  return credentialWord.test(last) || (pathWord.test(last) && credentialWord.test(beforeLast));
}

/** Where a secret value sits in an argument list. */
export interface SecretArg {
  /** Index of the argument holding the value. */
  index: number;
  /** The secret value itself. */
  value: string;
  /** True for `--flag=value` (the value is the part after `=` of `args[index]`), false for `--flag value`. */
  inline: boolean;
}

/**
 * The credentials an argument list carries: the value after `=` of a secret flag, or the argument that follows
 * it. An argument that is itself a flag (`--` and no whitespace) is not taken as the value: vllm's parser would
 * not take it either (`--hf-token` may stand alone, meaning the cached login).
 */
export function secretArgs(args: readonly unknown[]): SecretArg[] {
  const found = args.flatMap((arg, i): SecretArg[] => {
    if (typeof arg !== 'string' || !isSecretFlag(arg)) return [];
    const eq = arg.indexOf('=');
    if (eq >= 0) return [{ index: i, value: arg.slice(eq + 1), inline: true }];
    const next = args[i + 1];
    return typeof next === 'string' && !/^--\S*$/.test(next)
      ? [{ index: i + 1, value: next, inline: false }]
      : [];
  });
  return found.filter((s) => s.value !== '');
}

/** The secret values of an argument list (see secretArgs). */
export function secretArgValues(args: readonly unknown[]): string[] {
  return secretArgs(args).map((s) => s.value);
}

/** A plain object (not null, not an array): what a spec or an input read as `unknown` may be. */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Every secret value a spec carries as plain text, for redaction: literal values of secret-named env entries
 * (ray.env, serve.env) and values of secret flags in the args. References ({ fromEnv } / { fromFile }) hold no
 * secret. Takes any input, since a report may show a spec the schema refused or an older liftoff stored.
 */
export function secretsOfSpec(spec: unknown): string[] {
  if (!isObject(spec)) return [];
  const out: string[] = [];
  for (const section of ['ray', 'serve'] as const) {
    const part = spec[section];
    if (!isObject(part)) continue;
    if (isObject(part.env)) out.push(...secretEnvValues(part.env));
    if (Array.isArray(part.args)) out.push(...secretArgValues(part.args as unknown[]));
  }
  return out;
}

// ---- Values ----

// Credentials recognised by their shape, whatever names them: Hugging Face tokens, `sk-` API keys (OpenAI,
// Anthropic, most OpenAI-compatible servers), the password of a URL's userinfo (`scheme://user:pass@host`), and
// webhook URLs whose path or query is their token (webhook-tokens.ts).
// A token needs 16 characters after its prefix, at the start of a word: model names, paths and flags that merely
// contain `hf_` or `sk-` (`hf_transfer`, `/data/hf_cache`, `task-sk-1`) are not taken for one. Linear: each
// pattern starts at a fixed prefix and its runs cannot overlap.
const hfToken = /\bhf_[A-Za-z0-9]{16,}/;
const apiKey = /\bsk-[A-Za-z0-9_-]{16,}/;
const urlUserinfoPassword = /(:\/\/[^\s/:@"']+:)[^\s/@"']+(?=@)/;
const credentialValue = new RegExp(`${hfToken.source}|${apiKey.source}`, 'g');
const urlPassword = new RegExp(urlUserinfoPassword.source, 'g');

/**
 * What kind of credential `value` contains by its shape (`a Hugging Face token`, …), or undefined. The same
 * shapes redactText hides; the schema refuses a spec value that has one, whatever field holds it.
 */
export function credentialShape(value: string): string | undefined {
  if (hfToken.test(value)) return 'a Hugging Face token (hf_…)';
  if (apiKey.test(value)) return 'an API key (sk-…)';
  if (urlUserinfoPassword.test(value)) return 'a password in a URL (scheme://user:password@host)';
  return tokenWebhookShape(value);
}

/**
 * Every string of the spec shaped like a credential (credentialShape), with where it is.
 * The whole spec is the workflow's input: any field that holds one stores it in the history, and the env, args
 * and URLs also put it in a host's `ps` and `docker inspect`.
 */
export function credentialShapedValues(
  value: unknown,
  path: PropertyKey[] = [],
): Array<{ path: PropertyKey[]; kind: string }> {
  if (typeof value === 'string') {
    const kind = credentialShape(value);
    return kind !== undefined ? [{ path, kind }] : [];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => credentialShapedValues(v, [...path, i]));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([k, v]) => credentialShapedValues(v, [...path, k]));
  return [];
}

// Secret flags quoted in text: a command line (`--api-key S`, `--api_key='S'`), or vllm's `non-default args: {…,
// 'api_key': 'S'}` line, which echoes the parsed flags by their Python names.
const flagInText = /(?<![\w-])(--?[A-Za-z0-9][\w-]*'?)(=|\s+)(?!--)(\S+)/g;
const flagInPythonDict = /'(\w+)'(:\s*\[?\s*)'[^']*'/g;

/**
 * Replaces every occurrence of each secret in `text`, then everything the rules above recognise as a credential.
 * A secret is also found in the forms it takes once written into a shell command (single-quoted, where `'`
 * becomes `'\''`) or into JSON (escaped), since commands and JSON details are what messages quote.
 */
export function redactText(text: string, secrets: readonly string[]): string {
  const redacted = redactValues(text, secrets)
    .replace(flagInText, (whole, flag: string, sep: string) =>
      isSecretFlag(flag) ? `${flag}${sep}${redactedMarker}` : whole,
    )
    .replace(flagInPythonDict, (whole, key: string, sep: string) =>
      isSecretFlag(`--${key}`) ? `'${key}'${sep}'${redactedMarker}'` : whole,
    )
    .replace(credentialValue, redactedMarker)
    .replace(urlPassword, `$1${redactedMarker}`);
  return redactTokenWebhooks(redacted, redactedMarker);
}

/**
 * The end of `text`, redacted first and cut after: cut first, a secret that straddles the cut keeps its end,
 * which no longer matches the secret and so survives redaction.
 */
export function redactedTail(text: string, secrets: readonly string[], maxBytes?: number): string {
  return tail(redactText(text, secrets), maxBytes);
}

function redactValues(text: string, secrets: readonly string[]): string {
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

/** Every string inside `value` redacted (see redactText); the structure is kept. */
export function redactDeep<T>(value: T, secrets: readonly string[]): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactText(v, secrets);
    if (Array.isArray(v)) return v.map(walk);
    if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
