// Secret references in the spec ({ fromEnv } / { fromFile }) are resolved here, on the worker, inside the
// activity that needs the value: values never travel through Temporal (inputs, results, heartbeats, failures).
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { EnvSpec, EnvValue, SecretRef } from '../config/schema.js';
import { FailureType } from '../shared/failures.js';
import { isSecretEnvName } from '../shared/secrets.js';

export interface ResolvedEnv {
  values: Record<string, string>;
  /** Names whose values must stay hidden: every referenced value, and literals under secret-looking names. */
  secretNames: Set<string>;
}

async function resolveRef(name: string, ref: SecretRef): Promise<string> {
  if ('fromEnv' in ref) {
    const value = process.env[ref.fromEnv];
    if (value === undefined || value === '') {
      throw ApplicationFailure.create({
        type: FailureType.invalidSpec,
        message: `${name} refers to the environment variable ${ref.fromEnv}, which is not set where the liftoff worker runs. Set it in the worker's environment and deploy again.`,
        nonRetryable: true,
      });
    }
    return value;
  }
  // The schema allows ~/ paths; they mean the worker's home.
  const path = ref.fromFile.startsWith('~/') ? join(homedir(), ref.fromFile.slice(2)) : ref.fromFile;
  try {
    return (await readFile(path, 'utf8')).replace(/\r?\n$/, '');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw ApplicationFailure.create({
      type: FailureType.invalidSpec,
      message: `${name} refers to the file ${ref.fromFile}, which the liftoff worker cannot read (${code}). Put the secret there on the worker's host and deploy again.`,
      nonRetryable: true,
    });
  }
}

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

/** The secret values among `env`s, for redacting text before it leaves the activity. */
export async function secretValues(...envs: EnvSpec[]): Promise<string[]> {
  const out: string[] = [];
  for (const env of envs) {
    const resolved = await resolveEnv(env).catch(() => undefined);
    if (!resolved) continue;
    for (const name of resolved.secretNames) {
      const v = resolved.values[name];
      if (v) out.push(v);
    }
  }
  return out;
}

/** One value that may be a reference (e.g. serve.env.VLLM_API_KEY); undefined or empty when not set. */
export async function resolveValue(name: string, value: EnvValue | undefined): Promise<string | undefined> {
  if (value === undefined) return undefined;
  const resolved = typeof value === 'string' ? value : await resolveRef(name, value);
  return resolved === '' ? undefined : resolved;
}
