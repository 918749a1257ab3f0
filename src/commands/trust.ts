// `liftoff trust HOST -c FILE`: pins the host key a host of the spec offers into ssh.knownHostsPath, the way
// `ssh-keyscan -H >> known_hosts` would, but through the host's jump chain and only once the key has been
// checked: against `--fingerprint` read on the host itself, or explicitly not (`--yes`, with a warning). A host
// already pinned under another key is never touched: replacing a key is a decision people make with ssh-keygen -R.
// The spec names the file, so where trust writes is the worker policy's decision (the file listed itself, see
// knownHostsWriteRefusal), and it writes only into a file that reads as known_hosts (known-hosts-pin.ts).
import { Command } from 'commander';
import { loadSpecFile } from '../config/load.js';
import { probeSpecSchema, type ProbeSpec } from '../config/schema.js';
import { resolveSshTarget, type SshTargetData } from '../config/targets.js';
import { loadWorkerPolicy } from '../config/worker-policy.js';
import { knownHostsWriteRefusal, refusalText, sshAuthRefusals } from '../config/policy-check.js';
import { expandHome, fetchOfferedHostKey } from '../ssh/executor.js';
import { endpointOf } from '../ssh/target.js';
import { describe } from '../ssh/errors.js';
import { shellQuote } from '../ssh/quote.js';
import { knownHostsName, loadKnownHosts, verifyHostKey } from '../ssh/known-hosts.js';
import { appendKnownHostsLine, checkPinTarget, KnownHostsFileError } from '../ssh/known-hosts-pin.js';
import { colors, emit, terminalSafe } from '../cli/render.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { ExitCode } from '../cli/exit-codes.js';

export type TrustOutcome =
  /** known_hosts already holds the offered key for this host: nothing written. */
  | 'already-trusted'
  /** The offered key matched --fingerprint and was appended. */
  | 'pinned'
  /** Appended under --yes, without any check. */
  | 'pinned-unchecked'
  /** Neither --fingerprint nor --yes: the fingerprint is shown, nothing written. */
  | 'not-pinned'
  /** The offered key is not the one --fingerprint names: nothing written. */
  | 'fingerprint-differs'
  /** known_hosts pins other keys for this host: nothing written. */
  | 'pinned-key-differs'
  /** known_hosts marks the offered key @revoked: nothing written. */
  | 'revoked';

export interface TrustReport {
  host: string;
  address: string;
  port: number;
  user: string;
  /** Jump hosts, outermost first (each verified against known_hosts before the target was reached). */
  via: string[];
  keyType: string;
  fingerprint: string;
  knownHostsPath: string;
  outcome: TrustOutcome;
  pinned: boolean;
  /** The line appended to known_hosts. */
  line?: string;
  /** What --fingerprint said, normalised. */
  expectedFingerprint?: string;
  /** The keys known_hosts pins for this host when they differ from the offered one. */
  knownKeys?: Array<{ keyType: string; fingerprint: string; line: number }>;
  /** How to read the fingerprint on the host itself. */
  checkCommand: string;
  /** How to remove the old entry (pinned-key-differs only). */
  removeCommand?: string;
}

/** `SHA256:<43 base64 chars>`, the form ssh and ssh-keygen print; the prefix and `=` padding are optional. */
export function normalizeFingerprint(input: string): string {
  const body = input
    .trim()
    .replace(/^SHA256:/i, '')
    .replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]{43}$/.test(body)) {
    throw new UsageError(
      `--fingerprint ${JSON.stringify(input)} is not a SHA256 fingerprint; expected SHA256: followed by 43 base64 characters, as \`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub\` prints it`,
    );
  }
  return `SHA256:${body}`;
}

function hostKeyFile(keyType: string): string {
  return `/etc/ssh/ssh_host_${/ed25519|^ecdsa|rsa/.exec(keyType)?.[0] ?? '*'}_key.pub`;
}

function resolveTarget(spec: ProbeSpec, hostName: string): SshTargetData {
  if (!spec.hosts.some((h) => h.name === hostName)) {
    throw new UsageError(
      `no host ${JSON.stringify(hostName)} in the spec; its hosts are ${spec.hosts.map((h) => h.name).join(', ')}`,
    );
  }
  try {
    return resolveSshTarget(spec.hosts, spec.ssh, hostName);
  } catch (err) {
    throw new UsageError(`cannot work out how to reach ${hostName}: ${(err as Error).message}`);
  }
}

/** A pin target that is not a known_hosts file is bad input (exit 2), like a spec the policy refuses. */
async function asUsageError<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof KnownHostsFileError) throw new UsageError(err.message, { cause: err });
    throw err;
  }
}

/**
 * Fetches the key `hostName` offers (jump hosts verified as usual) and pins it when the options allow.
 * Connection failures, including an unknown or changed jump host key, are thrown as the SSH layer's errors.
 */
export async function trustHost(
  spec: ProbeSpec,
  hostName: string,
  opts: { fingerprint?: string; yes?: boolean },
): Promise<TrustReport> {
  const expectedFingerprint =
    opts.fingerprint === undefined ? undefined : normalizeFingerprint(opts.fingerprint);
  const target = resolveTarget(spec, hostName);
  // The policy a worker started in this environment would apply, as `liftoff validate` does.
  const policy = loadWorkerPolicy(process.env);
  const refusals = sshAuthRefusals(spec.ssh, policy);
  // Writing asks more than reading; a file the worker may not even read needs only the one refusal.
  const writeRefusal = knownHostsWriteRefusal(spec.ssh.knownHostsPath, policy);
  if (writeRefusal && !refusals.some((r) => r.field === writeRefusal.field)) refusals.push(writeRefusal);
  if (refusals.length > 0) throw new UsageError(`the spec is ${refusalText(refusals, policy)}`);
  const knownHostsPath = expandHome(spec.ssh.knownHostsPath);
  // Before any connection, so a file trust would refuse to write costs no round trip; checked again as it writes.
  await asUsageError(checkPinTarget(knownHostsPath));
  const offered = await fetchOfferedHostKey(target, {
    privateKeyPath: spec.ssh.privateKeyPath,
    useAgent: spec.ssh.useAgent,
    knownHostsPath,
  });

  const endpoint = endpointOf(target);
  const base = {
    ...endpoint,
    via: endpoint.via ?? [],
    keyType: offered.keyType,
    fingerprint: offered.fingerprint,
    knownHostsPath,
    checkCommand: `ssh-keygen -lf ${hostKeyFile(offered.keyType)}`,
    ...(expectedFingerprint ? { expectedFingerprint } : {}),
  };
  const refuse = (outcome: TrustOutcome, extra: Partial<TrustReport> = {}): TrustReport => ({
    ...base,
    outcome,
    pinned: false,
    ...extra,
  });

  // Judged on the file as it is now, after the fetch, so a line added meanwhile is not duplicated.
  const { entries } = await loadKnownHosts(knownHostsPath);
  const verdict = verifyHostKey(entries, target.host, target.port, offered.key);
  switch (verdict.status) {
    case 'revoked':
      return refuse('revoked');
    case 'mismatch':
      return refuse('pinned-key-differs', {
        knownKeys: verdict.expected,
        removeCommand: `ssh-keygen -R ${shellQuote(knownHostsName(target.host, target.port))} -f ${shellQuote(knownHostsPath)}`,
      });
    case 'trusted':
      // The key is pinned already; a --fingerprint that names another key still deserves a refusal.
      if (expectedFingerprint && expectedFingerprint !== offered.fingerprint)
        return refuse('fingerprint-differs');
      return { ...base, outcome: 'already-trusted', pinned: true };
    case 'unknown':
      break;
  }
  if (expectedFingerprint) {
    if (expectedFingerprint !== offered.fingerprint) return refuse('fingerprint-differs');
  } else if (!opts.yes) {
    return refuse('not-pinned');
  }
  const line = await asUsageError(
    appendKnownHostsLine(knownHostsPath, target.host, target.port, offered.key),
  );
  return { ...base, outcome: expectedFingerprint ? 'pinned' : 'pinned-unchecked', pinned: true, line };
}

/** The warning --yes prints (to stderr, in every output mode). */
export function uncheckedWarning(r: TrustReport): string {
  return (
    `${colors.bold(colors.red('WARNING'))}: pinned ${r.host}'s key ${r.keyType} ${r.fingerprint} WITHOUT checking it out of band (--yes). ` +
    `If anything between here and ${r.host} intercepts SSH, liftoff now trusts the interceptor. ` +
    `Check it on ${r.host} itself as soon as you can: ${r.checkCommand}`
  );
}

export function renderTrust(r: TrustReport, configPath: string): string {
  const offers = `${describe(r)} offers ${r.keyType} ${r.fingerprint}`;
  const trustCmd = `liftoff trust ${r.host} -c ${shellQuote(configPath)}`;
  const refused = colors.bold(colors.red('REFUSED'));
  switch (r.outcome) {
    case 'already-trusted':
      return `${offers}\nalready trusted: ${r.knownHostsPath} pins this key for ${r.host}; nothing changed`;
    case 'pinned':
    case 'pinned-unchecked':
      return [
        offers,
        r.outcome === 'pinned'
          ? `matches --fingerprint: pinned in ${r.knownHostsPath}:`
          : `pinned UNCHECKED (--yes) in ${r.knownHostsPath}:`,
        `  ${r.line ?? ''}`,
      ].join('\n');
    case 'not-pinned':
      return [
        offers,
        'Nothing pinned: this key has not been checked. On the host itself (its console, or a session you already trust), run',
        `  ${r.checkCommand}`,
        `and if it prints ${r.fingerprint}, pin the key with`,
        `  ${trustCmd} --fingerprint ${r.fingerprint}`,
        `(${trustCmd} --yes pins it without that check; it warns, and is only sound on a network you trust.)`,
      ].join('\n');
    case 'fingerprint-differs':
      return [
        `${refused}: ${offers}, but --fingerprint says ${r.expectedFingerprint ?? '?'}. Nothing pinned.`,
        `Check that you read the right host and key type (${r.checkCommand} on ${r.host}). If you did, something between here and ${r.host} presents another key.`,
      ].join('\n');
    case 'pinned-key-differs': {
      const known = (r.knownKeys ?? [])
        .map((k) => `${k.keyType} ${k.fingerprint} (line ${k.line})`)
        .join(' or ');
      return [
        `${refused}: ${offers}, but ${r.knownHostsPath} pins ${known}. known_hosts left unchanged.`,
        `Someone may be intercepting the connection, or the host was reinstalled. Check the new key on ${r.host} itself (${r.checkCommand}); only then remove the old entry`,
        `  ${r.removeCommand ?? ''}`,
        `and pin the new one: ${trustCmd} --fingerprint ${r.fingerprint}`,
      ].join('\n');
    }
    case 'revoked':
      return `${refused}: ${offers}, a key ${r.knownHostsPath} marks @revoked. Nothing pinned; a revoked key is never trusted again.`;
  }
}

export const trustCommand = new Command('trust')
  .description(
    "pin a host's SSH key in ssh.knownHostsPath after checking its fingerprint (jump hosts must be trusted already)",
  )
  .argument('<host>', 'host name from the spec')
  .requiredOption('-c, --config <file>', 'cluster spec (YAML)')
  .option(
    '--fingerprint <SHA256:…>',
    'pin only if the host offers this key (read it on the host: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub)',
  )
  .option('--yes', 'pin whatever key the host offers, unchecked (warns)')
  .option('--json', 'print the outcome as JSON')
  .action((host: string, opts: { config: string; fingerprint?: string; yes?: boolean; json?: boolean }) =>
    runCommand(opts, async () => {
      const spec = loadSpecFile(probeSpecSchema, opts.config);
      const report = await trustHost(spec, host, opts);
      const code = report.pinned ? ExitCode.ok : ExitCode.deployFailed;
      if (report.outcome === 'pinned-unchecked')
        process.stderr.write(`${uncheckedWarning(terminalSafe(report))}\n`);
      if (opts.json) emit(opts, report, (r) => renderTrust(r, opts.config));
      else
        (code === ExitCode.ok ? process.stdout : process.stderr).write(
          `${renderTrust(terminalSafe(report), opts.config)}\n`,
        );
      return code;
    }),
  );
