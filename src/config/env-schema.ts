// The spec's env maps (ray.env, serve.env) and the secret references their values may be. Pure: workflows
// validate with it.
import { z } from 'zod';
import { isSecretEnvName } from '../shared/secrets.js';
import { problemCheck, shown } from './errors.js';
import { maxItems, maxRenderedBytes } from './limits.js';
import { argText, envName, utf8Bytes, workerPath } from './text-fields.js';

// Env names that must not carry a secret reference. A secret's value reaches the GPU host's shell environment
// (envTransport exports it there before `docker run`/`docker exec`, so docker can complete `-e NAME`), and
// these names steer that shell or the docker CLI: a spec could point docker at another daemon, preload a
// library, or change what `docker` means.
const hostSteering = /^(PATH|HOME|IFS|ENV|BASH_ENV|SHELL|LD_[A-Za-z0-9_]*|DOCKER_[A-Za-z0-9_]*)$/;

/** Why `name` may not be a secret reference's variable or the name of an env entry holding one; else undefined. */
function hostSteeringEnvProblem(name: string): string | undefined {
  if (!hostSteering.test(name)) return undefined;
  return (
    `${name} steers the GPU host's shell or docker CLI, and a secret reference's value is exported in that ` +
    'shell: name the variable something else (PATH, HOME, IFS, ENV, BASH_ENV, SHELL, LD_* and DOCKER_* are refused)'
  );
}

/**
 * A secret is named, never written: the spec travels through Temporal's history, so the worker resolves the
 * reference (its own environment variable, or a file on its host) inside the activity that needs the value.
 */
export const secretRefSchema = z.union([
  z.strictObject({
    fromEnv: envName.superRefine(problemCheck(hostSteeringEnvProblem)),
  }),
  z.strictObject({ fromFile: workerPath }),
]);
export type SecretRef = z.infer<typeof secretRefSchema>;
/** An env value in the spec: plain text, or a reference to a secret. */
export type EnvValue = string | SecretRef;

const envRecord = z
  // Each value fits the rendered cap; the map as a whole is checked against it before this runs.
  .record(z.string(), z.union([argText(maxRenderedBytes), secretRefSchema]))
  .default({})
  .superRefine((env, ctx) => {
    for (const [name, value] of Object.entries(env)) {
      // Checked here rather than as the record's key schema, whose failure zod reports without the name.
      if (!envName.safeParse(name).success) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `${shown(name)} is not an environment variable name (letters, digits and "_", not starting with a digit)`,
        });
      }
      // Secret references and secret-looking names travel to docker through the host shell's environment.
      const viaHostShell = typeof value !== 'string' || isSecretEnvName(name);
      const steering = viaHostShell ? hostSteeringEnvProblem(name) : undefined;
      if (steering) ctx.addIssue({ code: 'custom', path: [name], message: steering });
      if (typeof value === 'string' && value !== '' && isSecretEnvName(name)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `looks like a secret; a value written in the spec would be stored in Temporal's history. Reference it instead: ${name}: { fromEnv: ${name} } (read from the worker's environment) or ${name}: { fromFile: /path/on/the/worker/host }`,
        });
      }
    }
  });

/** What the env as written costs on a host: its entries and its NAME=value lines in bytes. */
function envSizeProblem(raw: object): string | undefined {
  const entries = Object.entries(raw);
  if (entries.length > maxItems.env)
    return `${entries.length} variables, more than the ${maxItems.env} an env may hold`;
  let bytes = 0;
  for (const [name, value] of entries)
    bytes += utf8Bytes(name) + 2 + (typeof value === 'string' ? utf8Bytes(value) : 0);
  if (bytes > maxRenderedBytes)
    return `${bytes} bytes as NAME=value lines, more than the ${maxRenderedBytes} (64 KiB) an env may hold; keep large values in a file on the hosts (ray.volumes) and pass its path`;
  return undefined;
}

// zod's record drops a `__proto__` key without a word, so the raw object's own keys are checked first, with the
// map's size (before any value is read). An absent env stays allowed (optional here, then envRecord's default).
export const envMap = z
  .custom<z.input<typeof envRecord>>()
  .optional()
  .superRefine((raw, ctx) => {
    if (typeof raw !== 'object' || raw === null) return;
    const size = envSizeProblem(raw);
    if (size) {
      ctx.addIssue({ code: 'custom', message: size });
      return;
    }
    // As a key, `__proto__` is the prototype of the object that holds the env.
    if (Object.keys(raw).includes('__proto__')) {
      ctx.addIssue({
        code: 'custom',
        path: ['__proto__'],
        message: '"__proto__" is not allowed as an environment variable name',
      });
    }
  })
  .pipe(envRecord);
export type EnvSpec = z.infer<typeof envMap>;
