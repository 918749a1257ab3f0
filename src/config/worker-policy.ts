// The worker's trust policy: what a spec may make this worker reach. Whoever can start a deploy chooses the spec,
// so the spec must not choose the worker's trust anchors or secret sources. The worker's own settings name them
// (the known_hosts files, the private keys, whether its SSH agent may be used, the directory `{ fromFile }` reads
// from, the variables `{ fromEnv }` reads, the hosts whose SHA-1 host-key signatures it accepts, and the webhook
// origins inside its own network it may post to); a spec picks among them and never names a new one. Loaded from
// the file LIFTOFF_WORKER_POLICY names, or the defaults below; checked by src/config/policy-check.ts.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatIssues } from './errors.js';

export const workerPolicyEnv = 'LIFTOFF_WORKER_POLICY';

/**
 * Variables no spec may read, whatever the policy lists: liftoff's own settings (LIFTOFF_PAYLOAD_KEY) and
 * Temporal's (TEMPORAL_API_KEY, TEMPORAL_TLS_*), which would hand the spec's author the history or the server.
 */
export const isWorkerOwnVariable = (name: string): boolean => /^(LIFTOFF_|TEMPORAL_)/i.test(name);

/** How to allow something: the setting, in the policy file the worker reads or in one it would read. */
export function settingHint(setting: string, policy: WorkerPolicy): string {
  return policy.file !== undefined
    ? `${setting} in the worker policy ${policy.file}`
    : `${setting} in a worker policy file named by ${workerPolicyEnv} (this worker runs with the defaults)`;
}

/**
 * OpenSSH's default identity files (ssh_config(5) IdentityFile), the keys a default user has. Listed by name rather
 * than as `~/.ssh/id_*`: a policy entry is a path, never a pattern, and ~/.ssh also holds files no spec should
 * name (authorized_keys, config). DSA keys are left out: OpenSSH 9.8 dropped them.
 */
const opensshDefaultKeys = ['id_rsa', 'id_ecdsa', 'id_ecdsa_sk', 'id_ed25519', 'id_ed25519_sk'] as const;

/**
 * What a worker allows when nothing says otherwise: the common single-user setup. Files, not the ~/.ssh folder:
 * a folder would let a spec name ~/.ssh/authorized_keys as its known_hosts. known_hosts2, OpenSSH's legacy second
 * file, is left out too; a policy file can list it.
 */
const defaultWorkerPolicySettings = {
  knownHosts: ['~/.ssh/known_hosts'],
  privateKeys: opensshDefaultKeys.map((name) => `~/.ssh/${name}`),
  agent: true,
  secretsDir: '~/.liftoff/secrets',
  maxSecretFileBytes: 64 * 1024,
  fromEnv: ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'VLLM_API_KEY'],
  sshRsaHostKeys: [],
  webhooks: [],
} as const;

const pathSetting = z
  .string()
  .regex(/^(\/|~\/|~$)/, 'expected an absolute path (starting with / or ~/, the worker user’s home)')
  .refine((p) => !p.includes('\0'), 'contains a NUL byte');

const envNameSetting = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name')
  .refine((name) => !isWorkerOwnVariable(name), {
    error: (issue) =>
      `${String(issue.input)} is a liftoff or Temporal setting of the worker (LIFTOFF_*, TEMPORAL_*): no spec may read those, so it cannot be listed`,
  });

/** `scheme://host[:port]` and nothing more; kept as URL.origin writes it (lower case, no default port). */
const webhookOriginSetting = z.string().transform((s, ctx) => {
  const origin = webhookOriginOf(s);
  if (origin === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(s)} is not a webhook origin; write the scheme, host and port only, e.g. http://127.0.0.1:9000 or https://hooks.internal.example`,
    });
    return z.NEVER;
  }
  return origin;
});

/** The origin `text` names when it is an http(s) origin with nothing after it but `/`; undefined otherwise. */
function webhookOriginOf(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const bare =
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.username === '' &&
    url.password === '' &&
    url.pathname === '/' &&
    /^https?:\/\/[^/?#]+\/?$/i.test(text);
  return bare ? url.origin : undefined;
}

/** The policy file: every field optional, a missing one keeps its default. */
export const workerPolicySettingsSchema = z.strictObject({
  /**
   * Absolute paths (home expanded) a spec may name as ssh.knownHostsPath. An entry names a file, which a spec may
   * name as it is, or a directory, any file under which a spec may name for reading. `liftoff trust` writes only
   * to a file listed here by its own path, never to one that is merely under a listed directory.
   */
  knownHosts: z.array(pathSetting).optional(),
  /** The same, for ssh.privateKeyPath (read only). */
  privateKeys: z.array(pathSetting).optional(),
  /** Whether ssh.useAgent may use this worker's SSH agent (SSH_AUTH_SOCK of the worker). */
  agent: z.boolean().optional(),
  /** `{ fromFile }` must name a regular file under this directory. */
  secretsDir: pathSetting.optional(),
  /** The largest secret file `{ fromFile }` reads. */
  maxSecretFileBytes: z
    .number()
    .int()
    .min(1)
    .max(1024 * 1024, 'expected at most 1048576 (1 MiB): a secret is a line, not a file of data')
    .optional(),
  /** The variables `{ fromEnv }` may read. */
  fromEnv: z.array(envNameSetting).optional(),
  /**
   * The host addresses (as the spec's hosts and jump hosts give them) allowed to sign the key exchange with SHA-1
   * (`ssh-rsa`), which a forged signature could impersonate; `true`: every host. Only a server older than OpenSSH
   * 7.2 needs it.
   */
  sshRsaHostKeys: z
    .union([z.boolean(), z.array(z.string().regex(/^[^\s,]+$/, 'expected a host address'))])
    .optional(),
  /**
   * Webhook origins (`http://127.0.0.1:9000`, `https://hooks.internal.example`, as URL.origin writes them) a spec
   * may post to whatever they are and resolve to. Any other webhook must be `https://` to a public address.
   */
  webhooks: z.array(webhookOriginSetting).optional(),
});
export type WorkerPolicySettings = z.infer<typeof workerPolicySettingsSchema>;

/** A worker's policy: its settings with every default filled in and every path expanded. */
export type WorkerPolicy = Required<Omit<WorkerPolicySettings, 'sshRsaHostKeys'>> & {
  /** Where the policy came from, for messages: the file and the variable that named it, or the defaults. */
  source: string;
  /** The policy file, when one was read: where a refusal tells the operator to widen it. */
  file?: string;
  sshRsaHostKeys: true | string[];
};

export class WorkerPolicyError extends Error {
  override name = 'WorkerPolicyError';
}

/** `~` and `~/…` are the worker user's home; the result is absolute and normalised (no `.` or `..`). */
export function expandWorkerPath(path: string, home: string = homedir()): string {
  if (path === '~') return resolve(home);
  if (path.startsWith('~/')) return resolve(home, path.slice(2));
  return resolve(path);
}

/** The policy that `settings` (a parsed policy file, or nothing) gives, with `home` as the worker user's home. */
export function workerPolicyFrom(
  settings: WorkerPolicySettings,
  source: string,
  home: string = homedir(),
  file?: string,
): WorkerPolicy {
  const merged = { ...defaultWorkerPolicySettings, ...settings };
  const expand = (path: string) => expandWorkerPath(path, home);
  return {
    ...merged,
    source,
    ...(file !== undefined ? { file } : {}),
    knownHosts: merged.knownHosts.map(expand),
    privateKeys: merged.privateKeys.map(expand),
    secretsDir: expand(merged.secretsDir),
    fromEnv: [...merged.fromEnv],
    sshRsaHostKeys:
      typeof merged.sshRsaHostKeys === 'boolean' ? merged.sshRsaHostKeys || [] : [...merged.sshRsaHostKeys],
    webhooks: [...merged.webhooks],
  };
}

/** Reads and checks a policy file; a bad one is an error naming the file and every bad field. */
export function readWorkerPolicyFile(file: string, home: string = homedir()): WorkerPolicy {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new WorkerPolicyError(
      `cannot read the worker policy ${file} (${workerPolicyEnv}): ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  let value: unknown;
  try {
    value = parseYaml(text) ?? {};
  } catch (err) {
    throw new WorkerPolicyError(
      `the worker policy ${file} is not valid YAML: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const parsed = workerPolicySettingsSchema.safeParse(value);
  if (!parsed.success) {
    throw new WorkerPolicyError(`the worker policy ${file} is invalid:\n${formatIssues(parsed.error)}`);
  }
  return workerPolicyFrom(parsed.data, `${file} (${workerPolicyEnv})`, home, file);
}

/** The policy of a worker started with `env`: the file LIFTOFF_WORKER_POLICY names, else the defaults. */
export function loadWorkerPolicy(
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
): WorkerPolicy {
  const file = env[workerPolicyEnv];
  if (file === undefined || file === '') {
    return workerPolicyFrom({}, `the defaults (${workerPolicyEnv} is not set)`, home);
  }
  return readWorkerPolicyFile(file, home);
}
