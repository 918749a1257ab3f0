// The spec as a postmortem may show it: defaults applied, secrets out. Secret values found here are also
// removed from every other string of the report (failure messages and diagnostics quote commands and logs).
import { deploySpecSchema } from '../config/schema.js';
import { isSecretEnvName, redact, redactedMarker } from '../shared/redact.js';
import { isRecord } from './events.js';
import type { SpecReport } from './model.js';

// A command-line flag that takes a credential: --api-key, --hf-token, --secret, --password=…. Only the flag's
// last word counts, so --max-num-batched-tokens or --tokenizer keep their values.
const secretFlag = /^--?(?:[\w-]*-)?(?:api-?key|key|token|secret|password|passwd|credentials?)$/i;

export function isSecretFlag(flag: string): boolean {
  return secretFlag.test(flag);
}

export interface RedactedSpec {
  report: SpecReport;
  /** The secret values the spec holds, to redact everywhere else. */
  secrets: string[];
}

/** Applies the schema's defaults (when the input is a valid spec) and redacts env secrets and secret args. */
export function redactSpec(input: unknown): RedactedSpec {
  const parsed = deploySpecSchema.safeParse(input);
  const spec: unknown = structuredClone(parsed.success ? parsed.data : input);
  const secrets: string[] = [];
  const redactedFields: string[] = [];
  if (isRecord(spec)) {
    for (const section of ['ray', 'serve'] as const) {
      const part = spec[section];
      if (!isRecord(part)) continue;
      const env = part.env;
      if (isRecord(env)) {
        for (const [name, value] of Object.entries(env)) {
          if (!isSecretEnvName(name) || typeof value !== 'string' || value === '') continue;
          secrets.push(value);
          env[name] = redactedMarker;
          redactedFields.push(`${section}.env.${name}`);
        }
      }
      if (Array.isArray(part.args)) {
        const args = part.args as unknown[];
        args.forEach((arg, i) => {
          if (typeof arg !== 'string') return;
          const eq = arg.indexOf('=');
          if (eq > 0 && isSecretFlag(arg.slice(0, eq))) {
            secrets.push(arg.slice(eq + 1));
            args[i] = `${arg.slice(0, eq)}=${redactedMarker}`;
            redactedFields.push(`${section}.args[${i}]`);
          } else if (isSecretFlag(arg) && typeof args[i + 1] === 'string') {
            secrets.push(args[i + 1] as string);
            args[i + 1] = redactedMarker;
            redactedFields.push(`${section}.args[${i + 1}]`);
          }
        });
      }
    }
  }
  return {
    report: { effective: spec, valid: parsed.success, redactedFields },
    secrets: secrets.filter((s) => s !== ''),
  };
}

/** Every string inside `value` with the secrets replaced; the structure is kept. */
export function redactDeep<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redact(v, secrets);
    if (Array.isArray(v)) return v.map(walk);
    if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
