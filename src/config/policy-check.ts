// A spec against the worker's policy (worker-policy.ts): which of the paths, variables and webhook URLs it
// names the worker does not allow, each with the field and the worker setting that would allow it. Run by the
// workflow's validate step (the checkWorkerPolicy activity), by every SSH connection and secret read on the
// worker, and by `liftoff validate`. A path is allowed when it lies in a listed file or directory both as written
// (after `~` and `..` are resolved) and, when it exists, once its symlinks are followed: a link cannot lead out.
// `liftoff trust`, which writes, asks more: the known_hosts file must be listed itself (knownHostsWriteRefusal).
import { constants, realpathSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { homedir } from 'node:os';
import { formatPath } from './errors.js';
import { SpecError } from './load.js';
import type { EnvSpec, SecretRef } from './schema.js';
import type { SshAuthRef } from './targets.js';
import { checkWebhookUrl } from './webhook-policy.js';
import {
  expandWorkerPath,
  isWorkerOwnVariable,
  loadWorkerPolicy,
  settingHint,
  type WorkerPolicy,
} from './worker-policy.js';

export interface PolicyRefusal {
  /** The spec's field, formatPath syntax (ssh.knownHostsPath, serve.env.HF_TOKEN.fromFile). */
  field: string;
  message: string;
}

/** The parts of a spec that reach worker-side resources. */
export interface PolicySubject {
  ssh: SshAuthRef;
  ray?: { env: EnvSpec };
  serve?: { env: EnvSpec };
  /** A webhook URL may be a secret reference (a Slack URL is a credential). */
  notify?: { webhooks: ReadonlyArray<{ url: string | SecretRef }> };
}

function within(path: string, entry: string): boolean {
  return path === entry || path.startsWith(entry.endsWith('/') ? entry : `${entry}/`);
}

/** What `read` returns, or undefined when it throws (nothing there, or nothing this worker may see). */
function unlessThrown<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

const realpathOf = (path: string) => unlessThrown(() => realpathSync(path));
const statOf = (path: string) => unlessThrown(() => statSync(path));

/** Whether `path` lies in one of `entries`, as written and with its symlinks followed. */
function allowedBy(path: string, entries: readonly string[], home: string): boolean {
  const written = expandWorkerPath(path, home);
  if (!entries.some((e) => within(written, e))) return false;
  const real = realpathOf(written);
  if (real === undefined) return true; // nothing there yet: nothing to follow
  return entries.some((e) => within(real, realpathOf(e) ?? e));
}

function listed(entries: readonly string[]): string {
  return entries.length > 0 ? entries.join(', ') : 'none';
}

export function sshAuthRefusals(
  auth: SshAuthRef,
  policy: WorkerPolicy,
  home: string = homedir(),
): PolicyRefusal[] {
  const out: PolicyRefusal[] = [];
  if (!allowedBy(auth.knownHostsPath, policy.knownHosts, home)) {
    out.push({
      field: 'ssh.knownHostsPath',
      message: `${JSON.stringify(auth.knownHostsPath)} is not a known_hosts file this worker trusts (knownHosts: ${listed(policy.knownHosts)}). The worker's host keys are its own; to trust this file, list it under ${settingHint('knownHosts', policy)}.`,
    });
  }
  if (auth.privateKeyPath !== undefined && !allowedBy(auth.privateKeyPath, policy.privateKeys, home)) {
    out.push({
      field: 'ssh.privateKeyPath',
      message: `${JSON.stringify(auth.privateKeyPath)} is not a key this worker may use (privateKeys: ${listed(policy.privateKeys)}). Name one of those, or list it under ${settingHint('privateKeys', policy)}.`,
    });
  }
  if (auth.useAgent === true && !policy.agent) {
    out.push({
      field: 'ssh.useAgent',
      message: `this worker does not lend its SSH agent to specs (agent: false). Name a key of privateKeys instead, or set agent: true under ${settingHint('agent', policy)}.`,
    });
  }
  return out;
}

/**
 * Why `liftoff trust` may not write to `knownHostsPath`; undefined when it may. Reading is what sshAuthRefusals
 * allows (a file listed, or one under a listed directory); writing needs more: the policy lists this very file
 * (after `~` and `..` are resolved), so a spec cannot turn another file of a listed folder, such as
 * ~/.ssh/authorized_keys, into a known_hosts file. What the file holds is checked where it is written.
 */
export function knownHostsWriteRefusal(
  knownHostsPath: string,
  policy: WorkerPolicy,
  home: string = homedir(),
): PolicyRefusal | undefined {
  const written = expandWorkerPath(knownHostsPath, home);
  if (policy.knownHosts.includes(written) && statOf(written)?.isDirectory() !== true) return undefined;
  const folder = policy.knownHosts.find((entry) => within(written, entry));
  const why =
    folder !== undefined
      ? `the worker policy lists the folder ${folder}, and liftoff trust writes only to a file the policy lists by its own path`
      : `it is not a file the worker policy lists (knownHosts: ${listed(policy.knownHosts)})`;
  return {
    field: 'ssh.knownHostsPath',
    message: `liftoff trust will not write to ${JSON.stringify(knownHostsPath)}: ${why}. To pin keys there, list ${written} itself under ${settingHint('knownHosts', policy)}.`,
  };
}

/** Why the worker may not read variable `name` for a spec; undefined when it may. */
export function envRefusal(name: string, policy: WorkerPolicy): string | undefined {
  if (isWorkerOwnVariable(name)) {
    return `${name} is a liftoff or Temporal setting of the worker (LIFTOFF_*, TEMPORAL_*), which no spec may read, whatever the worker policy lists. Give the secret its own variable (e.g. HF_TOKEN) and list that under ${settingHint('fromEnv', policy)}.`;
  }
  if (!policy.fromEnv.includes(name)) {
    return `the worker does not let specs read ${name} (fromEnv: ${listed(policy.fromEnv)}). Use one of those, or list ${name} under ${settingHint('fromEnv', policy)}.`;
  }
  return undefined;
}

/**
 * Why the worker may not read `path` for a spec; undefined when it may. A file that is not there yet passes
 * (another worker may hold it; reading it fails later with its own message), anything else there must be a
 * regular file within the size cap, inside the secrets directory once its links are followed.
 */
function secretFileRefusal(path: string, policy: WorkerPolicy, home: string = homedir()): string | undefined {
  const outside = `${JSON.stringify(path)} is not in this worker's secrets directory (secretsDir: ${policy.secretsDir}). Put the secret there, or change ${settingHint('secretsDir', policy)}.`;
  if (!allowedBy(path, [policy.secretsDir], home)) return outside;
  const stat = statOf(expandWorkerPath(path, home));
  if (stat === undefined) return undefined;
  if (!stat.isFile())
    return `${JSON.stringify(path)} is not a regular file; a secret is read from a regular file only.`;
  if (stat.size > policy.maxSecretFileBytes) {
    return `${JSON.stringify(path)} holds ${stat.size} bytes, more than the ${policy.maxSecretFileBytes} a secret file may (maxSecretFileBytes in the worker policy).`;
  }
  return undefined;
}

function refRefusals(field: string, ref: SecretRef, policy: WorkerPolicy, home: string): PolicyRefusal[] {
  const [source, message] =
    'fromEnv' in ref
      ? ['fromEnv', envRefusal(ref.fromEnv, policy)]
      : ['fromFile', secretFileRefusal(ref.fromFile, policy, home)];
  return message ? [{ field: `${field}.${source}`, message }] : [];
}

/** Every field of `spec` the policy refuses (none: the worker may do what the spec asks). */
export function policyRefusals(
  spec: PolicySubject,
  policy: WorkerPolicy,
  home: string = homedir(),
): PolicyRefusal[] {
  const out = sshAuthRefusals(spec.ssh, policy, home);
  for (const section of ['ray', 'serve'] as const) {
    for (const [name, value] of Object.entries(spec[section]?.env ?? {})) {
      if (typeof value === 'string') continue;
      out.push(...refRefusals(formatPath([section, 'env', name]), value, policy, home));
    }
  }
  (spec.notify?.webhooks ?? []).forEach(({ url }, i) => {
    const field = formatPath(['notify', 'webhooks', i, 'url']);
    if (typeof url === 'string') {
      // A literal URL is judged now; a reference's URL when the activity reads it, by the same rules.
      const check = checkWebhookUrl(url, policy);
      if (!check.ok) out.push({ field, message: check.message });
      return;
    }
    out.push(...refRefusals(field, url, policy, home));
  });
  return out;
}

/** The refusals as one message: the policy, then a line per field, as spec errors are written. */
export function refusalText(refusals: readonly PolicyRefusal[], policy: WorkerPolicy): string {
  return `refused by the worker policy (${policy.source}):\n${refusals.map((r) => `  ${r.field}: ${r.message}`).join('\n')}`;
}

/** The policy a worker started in this environment would apply; a SpecError about `source` if it refuses `spec`. */
export function localPolicyAllowing(spec: PolicySubject, source: string): WorkerPolicy {
  const policy = loadWorkerPolicy(process.env);
  const refusals = policyRefusals(spec, policy);
  if (refusals.length > 0) throw new SpecError(`${source} is ${refusalText(refusals, policy)}`);
  return policy;
}

export class SecretFileError extends Error {
  override name = 'SecretFileError';
  constructor(
    message: string,
    /** The errno code when the file could not be opened (ENOENT, EACCES…); undefined for a policy refusal. */
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * Reads a `{ fromFile }` secret under the policy: inside the secrets directory with its links followed, opened
 * without blocking (a FIFO cannot stall the worker), a regular file, at most maxSecretFileBytes. The trailing
 * newline is dropped.
 */
export async function readSecretFile(
  path: string,
  policy: WorkerPolicy,
  home: string = homedir(),
): Promise<string> {
  const refusal = secretFileRefusal(path, policy, home);
  if (refusal) throw new SecretFileError(refusal);
  const written = expandWorkerPath(path, home);
  let handle;
  try {
    handle = await open(written, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new SecretFileError(`cannot open ${JSON.stringify(path)} (${code})`, code);
  }
  try {
    // Checked again on what was opened: the path may have changed since it was checked.
    const real = realpathOf(written);
    const stat = await handle.stat();
    if (real === undefined || !within(real, realpathOf(policy.secretsDir) ?? policy.secretsDir)) {
      throw new SecretFileError(
        `${JSON.stringify(path)} leads out of the secrets directory ${policy.secretsDir}`,
      );
    }
    if (!stat.isFile()) throw new SecretFileError(`${JSON.stringify(path)} is not a regular file`);
    const buffer = Buffer.alloc(policy.maxSecretFileBytes + 1);
    let bytesRead = 0;
    for (let n = 1; n > 0 && bytesRead < buffer.length; bytesRead += n)
      ({ bytesRead: n } = await handle.read(buffer, bytesRead, buffer.length - bytesRead, bytesRead));
    if (bytesRead > policy.maxSecretFileBytes) {
      throw new SecretFileError(
        `${JSON.stringify(path)} is larger than the ${policy.maxSecretFileBytes} bytes a secret file may hold`,
      );
    }
    return buffer
      .subarray(0, bytesRead)
      .toString('utf8')
      .replace(/\r?\n$/, '');
  } finally {
    await handle.close();
  }
}
