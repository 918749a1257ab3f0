// What `liftoff trust` writes into a known_hosts file, and which files it refuses to write to.
//
// The host field is hashed as `ssh-keygen -H` writes it: `|1|salt|HMAC-SHA1(salt, name)`. It starts with `|`, so
// no reader takes it for a marker (`@…`), a comment (`#`) or an authorized_keys option, and the address never
// appears in the line at all. The other safe form, always `[host]:port`, does not work for port 22: OpenSSH looks
// a port-22 host up by its bare name, so a `[host]:22` line never matches there (nor in known-hosts.ts, which
// looks names up the same way). The hashed field matches in both.
//
// A file is written only when every line it holds reads as known_hosts. An authorized_keys line with options
// (`cert-authority ssh-ed25519 …`, `restrict,no-pty ssh-ed25519 …`) parses as a known_hosts line for a host named
// `cert-authority`; the host field is therefore also held to what a host pattern is, so such a file is refused
// and a pinned line can never become a login.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  blobKeyType,
  hashKnownHostsName,
  knownHostsName,
  parseKnownHosts,
  quoted,
  type InvalidKnownHostsLine,
} from './known-hosts.js';

/** sshd(8) AUTHORIZED_KEYS FILE FORMAT options (sshd compares them without regard to case). */
const authorizedKeysOptions = new Set([
  'agent-forwarding',
  'cert-authority',
  'command',
  'environment',
  'expiry-time',
  'from',
  'no-agent-forwarding',
  'no-port-forwarding',
  'no-pty',
  'no-touch-required',
  'no-user-rc',
  'no-x11-forwarding',
  'permitlisten',
  'permitopen',
  'port-forwarding',
  'principals',
  'pty',
  'restrict',
  'tunnel',
  'user-rc',
  'verify-required',
  'x11-forwarding',
]);

/** A host pattern: a name or address (`*`, `?`), or `[host]:port`, optionally negated with a leading `!`. */
const hostPattern = /^!?(?:[A-Za-z0-9._:%*?-]+|\[[A-Za-z0-9._:%*?-]+\]:[0-9*?]+)$/;

/** How many bad lines a refusal lists before it counts the rest. */
const listedProblems = 5;

/** Why a comma-separated host field is not made of host patterns; undefined when it is. */
function hostFieldProblem(field: string): string | undefined {
  for (const pattern of field.split(',')) {
    if (pattern === '') continue;
    const option = /^[A-Za-z0-9-]+/.exec(pattern)?.[0].toLowerCase();
    const rest = pattern.slice(option?.length ?? 0);
    if (option !== undefined && authorizedKeysOptions.has(option) && (rest === '' || rest.startsWith('=')))
      return `${quoted(pattern)} is an authorized_keys option, not a host pattern: this is an authorized_keys line`;
    if (!hostPattern.test(pattern))
      return `${quoted(pattern)} is not a host pattern (a name or address with * ? and a leading !, or [host]:port)`;
  }
  return undefined;
}

/**
 * Every line of `text` that is not a well-formed known_hosts line, and why: the lines the parser cannot read, and
 * those whose host field is not host patterns. Comments, blank lines and @cert-authority/@revoked lines pass.
 */
export function knownHostsLineProblems(text: string): InvalidKnownHostsLine[] {
  const { entries, invalidLines } = parseKnownHosts(text);
  const problems = invalidLines.map(({ line, reason, hostField = '' }): InvalidKnownHostsLine => {
    const keyTypeFirst = `it starts with the key type ${quoted(hostField)}: an authorized_keys or .pub line`;
    const startsWithKeyType = /^(?:ssh-|ecdsa-|sk-)/.test(hostField);
    return { line, reason: hostFieldProblem(hostField) ?? (startsWithKeyType ? keyTypeFirst : reason) };
  });
  for (const entry of entries) {
    if (entry.names.kind !== 'patterns') continue;
    const reason = hostFieldProblem(entry.names.patterns.join(','));
    if (reason !== undefined) problems.push({ line: entry.line, reason });
  }
  return problems.sort((a, b) => a.line - b.line);
}

/** A pin target that is not a known_hosts file (or not a regular file): nothing was written to it. */
export class KnownHostsFileError extends Error {
  override name = 'KnownHostsFileError';
  constructor(
    readonly path: string,
    readonly problems: readonly InvalidKnownHostsLine[],
    why?: string,
  ) {
    const listed = problems.slice(0, listedProblems).map((p) => `  line ${p.line}: ${p.reason}`);
    const more = problems.length - listed.length;
    super(
      [
        `${path} ${why ?? 'does not read as a known_hosts file'}; nothing was written to it.`,
        ...listed,
        ...(more > 0 ? [`  and ${more} more line${more === 1 ? '' : 's'}`] : []),
        'Name your known_hosts file as ssh.knownHostsPath (and in the worker policy), or remove or mend those lines.',
      ].join('\n'),
    );
  }
}

/**
 * Opens `path` without blocking (a FIFO cannot stall the caller) and refuses (KnownHostsFileError) anything but a
 * regular file whose every line reads as known_hosts; then `write` gets the handle and the text. A missing file
 * passes when `flags` do not create it.
 */
async function withCheckedFile(
  path: string,
  flags: number,
  write?: (handle: FileHandle, text: string) => Promise<void>,
): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(path, flags | constants.O_NONBLOCK, 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    if (!(await handle.stat()).isFile()) throw new KnownHostsFileError(path, [], 'is not a regular file');
    const text = await handle.readFile('utf8');
    const problems = knownHostsLineProblems(text);
    if (problems.length > 0) throw new KnownHostsFileError(path, problems);
    await write?.(handle, text);
  } finally {
    await handle.close();
  }
}

/** Refuses (KnownHostsFileError) a pin target that exists and is not a regular file of known_hosts lines. */
export function checkPinTarget(path: string): Promise<void> {
  return withCheckedFile(path, constants.O_RDONLY);
}

/** One known_hosts line for a key, with the host field hashed (lower-cased, as ssh looks names up). */
export function formatKnownHostsLine(host: string, port: number, blob: Buffer): string {
  const keyType = blobKeyType(blob);
  if (!keyType) throw new Error('formatKnownHostsLine: not an SSH public key blob');
  const salt = randomBytes(20);
  const hash = hashKnownHostsName(salt, knownHostsName(host, port).toLowerCase());
  return `|1|${salt.toString('base64')}|${hash.toString('base64')} ${keyType} ${blob.toString('base64')}`;
}

/**
 * Appends the pinned line for `host`:`port` (creating the file, and its folder as ~/.ssh would be, when missing)
 * and returns it. The file is checked and written through one open handle (withCheckedFile). A last line without
 * a newline gets one first, so the two lines stay apart.
 */
export async function appendKnownHostsLine(
  path: string,
  host: string,
  port: number,
  blob: Buffer,
): Promise<string> {
  const line = formatKnownHostsLine(host, port, blob);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await withCheckedFile(
    path,
    constants.O_RDWR | constants.O_APPEND | constants.O_CREAT,
    async (handle, text) => {
      const separator = text === '' || text.endsWith('\n') ? '' : '\n';
      await handle.write(`${separator}${line}\n`);
    },
  );
  return line;
}
