// The spec as a postmortem may show it: defaults applied, secrets out. Secret values found here are also
// removed from every other string of the report (failure messages and diagnostics quote commands and logs).
// What a secret is, and how text is redacted, is src/shared/secrets.ts's: the schema refuses the same flags.
import { deploySpecSchema } from '../config/schema.js';
import { isSecretEnvName, redactedMarker, secretArgs, secretsOfSpec } from '../shared/secrets.js';
import { cutWebhookUrls } from '../shared/webhook-shown.js';
import { isRecord } from './events.js';
import type { SpecReport } from './model.js';

/**
 * Applies the schema's defaults (when the input is a valid spec) and redacts env secrets and secret args; a
 * literal webhook URL is shown by its origin (a webhook's path is often its token). `secrets` are the secret
 * values the spec holds, to redact everywhere else.
 */
export function redactSpec(input: unknown): { report: SpecReport; secrets: string[] } {
  const parsed = deploySpecSchema.safeParse(input);
  const spec: unknown = structuredClone(parsed.success ? parsed.data : input);
  const secrets = secretsOfSpec(spec);
  const redactedFields: string[] = [];
  if (isRecord(spec)) {
    for (const section of ['ray', 'serve'] as const) {
      const part = spec[section];
      if (!isRecord(part)) continue;
      const env = part.env;
      if (isRecord(env)) {
        for (const [name, value] of Object.entries(env)) {
          if (!isSecretEnvName(name) || typeof value !== 'string' || value === '') continue;
          env[name] = redactedMarker;
          redactedFields.push(`${section}.env.${name}`);
        }
      }
      if (Array.isArray(part.args)) {
        const args = part.args as unknown[];
        for (const { index, inline } of secretArgs(args)) {
          const arg = args[index] as string;
          args[index] = inline ? `${arg.slice(0, arg.indexOf('='))}=${redactedMarker}` : redactedMarker;
          redactedFields.push(`${section}.args[${index}]`);
        }
      }
    }
  }
  const webhooks = cutWebhookUrls(spec);
  redactedFields.push(...webhooks.fields);
  secrets.push(...webhooks.urls);
  return { report: { effective: spec, valid: parsed.success, redactedFields }, secrets };
}
