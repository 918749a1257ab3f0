// Secret references in the spec ({ fromEnv } / { fromFile }) are resolved here, on the worker, inside the
// activity that needs the value: values never travel through Temporal (inputs, results, heartbeats, failures).
import { activityFailure } from './activity-failure.js';
import type { EnvSpec, EnvValue, SecretRef } from '../config/schema.js';
import { FailureType } from '../shared/failures.js';
import { isSecretEnvName } from '../shared/secrets.js';
import { envRefusal, readSecretFile, SecretFileError } from '../config/policy-check.js';
import { activeWorkerPolicy } from './worker-policy.js';

export interface ResolvedEnv {
  values: Record<string, string>;
  /** Names whose values must stay hidden: every referenced value, and literals under secret-looking names. */
  secretNames: Set<string>;
}

async function resolveRef(name: string, ref: SecretRef): Promise<string> {
  // The worker's policy, not the spec, decides which variables and files a reference may read.
  const policy = activeWorkerPolicy();
  if ('fromEnv' in ref) {
    const refusal = envRefusal(ref.fromEnv, policy);
    if (refusal) throw invalidSpec(`${name}.fromEnv: ${refusal}`);
    const value = process.env[ref.fromEnv];
    if (value === undefined || value === '') {
      throw invalidSpec(
        `${name} refers to the environment variable ${ref.fromEnv}, which is not set where the liftoff worker runs. Set it in the worker's environment and deploy again.`,
      );
    }
    return value;
  }
  try {
    return await readSecretFile(ref.fromFile, policy);
  } catch (err) {
    if (!(err instanceof SecretFileError)) throw err;
    throw invalidSpec(
      err.code !== undefined
        ? `${name} refers to the file ${ref.fromFile}, which the liftoff worker cannot read (${err.code}). Put the secret there on the worker's host and deploy again.`
        : `${name}.fromFile: ${err.message}`,
    );
  }
}

const invalidSpec = (message: string) => activityFailure(FailureType.invalidSpec, message, true);

export async function resolveEnv(env: EnvSpec): Promise<ResolvedEnv> {
  const values: Record<string, string> = {};
  const secretNames = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (typeof value === 'string') {
      values[name] = value;
      if (isSecretEnvName(name)) secretNames.add(name);
    } else {
      values[name] = await resolveRef(name, value);
      secretNames.add(name);
    }
  }
  return { values, secretNames };
}

/** The values of the secret names of a resolved env: what text leaving the activity must not show. */
export function secretsOf({ values, secretNames }: ResolvedEnv): string[] {
  return [...secretNames].map((n) => values[n] ?? '').filter((v) => v !== '');
}

/** The secret values among `env`s, for redacting text before it leaves the activity. */
export async function secretValues(...envs: EnvSpec[]): Promise<string[]> {
  const resolved = await Promise.all(envs.map((env) => resolveEnv(env).catch(() => undefined)));
  return resolved.flatMap((r) => (r ? secretsOf(r) : []));
}

/** One value that may be a reference (e.g. serve.env.VLLM_API_KEY); undefined or empty when not set. */
export async function resolveValue(name: string, value: EnvValue | undefined): Promise<string | undefined> {
  if (value === undefined) return undefined;
  const resolved = typeof value === 'string' ? value : await resolveRef(name, value);
  return resolved === '' ? undefined : resolved;
}
