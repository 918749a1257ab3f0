// OpenSSH known_hosts: parsing, host matching (plain, [host]:port, comma lists, wildcards, negation,
// hashed |1|salt|hash) and the verdict on a key a server offers. The format is sshd(8) "SSH_KNOWN_HOSTS
// FILE FORMAT": [@marker] hostpatterns keytype base64-key [comment].
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';

export type KnownHostMarker = 'revoked' | 'cert-authority';

export type KnownHostNames =
  { kind: 'patterns'; patterns: string[] } | { kind: 'hashed'; salt: Buffer; hash: Buffer };

export interface KnownHostEntry {
  marker?: KnownHostMarker;
  names: KnownHostNames;
  /** As written in the file: ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, … */
  keyType: string;
  /** The key blob in SSH wire format (what the server sends during key exchange). */
  key: Buffer;
  /** 1-based line number, for messages. */
  line: number;
}

/** A line that is not a known_hosts entry: OpenSSH skips it too, but it is worth reporting. */
export interface InvalidKnownHostsLine {
  /** 1-based. */
  line: number;
  /** Why, for messages: names no more of the line than its first field. */
  reason: string;
  /** The line's host field (after a marker), when it has one: what it was meant to name. */
  hostField?: string;
}

/** A field of a line, shortened and quoted for a message. */
export function quoted(field: string): string {
  return JSON.stringify(field.length > 40 ? `${field.slice(0, 40)}…` : field);
}

function parseLine(line: string, lineNo: number): KnownHostEntry | InvalidKnownHostsLine {
  const invalid = (reason: string, hostField?: string): InvalidKnownHostsLine => ({
    line: lineNo,
    reason,
    ...(hostField ? { hostField } : {}),
  });
  const fields = line.split(/[ \t]+/);
  let marker: KnownHostMarker | undefined;
  if (fields[0]?.startsWith('@')) {
    const word = fields.shift() ?? '';
    const name = word.slice(1);
    if (name !== 'revoked' && name !== 'cert-authority')
      return invalid(`unknown marker ${quoted(word)} (known_hosts has @cert-authority and @revoked)`);
    marker = name;
  }
  const [hostField, keyType, keyBase64] = fields;
  if (!hostField || !keyType || !keyBase64)
    return invalid('expected host patterns, a key type and a base64 key', hostField);
  const key = Buffer.from(keyBase64, 'base64');
  // The blob starts with its own type string; a mismatch means a corrupt or hand-edited line.
  if (key.length === 0 || blobKeyType(key) !== keyType)
    return invalid(`field 3 is not a base64 ${quoted(keyType)} key`, hostField);
  const names = parseNames(hostField);
  if (!names) return invalid(`bad host field ${quoted(hostField)}`, hostField);
  return { ...(marker ? { marker } : {}), names, keyType, key, line: lineNo };
}

export function parseKnownHosts(text: string) {
  const entries: KnownHostEntry[] = [];
  const invalidLines: InvalidKnownHostsLine[] = [];
  text.split(/\r?\n/).forEach((rawLine, index) => {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) return;
    const parsed = parseLine(line, index + 1);
    if ('reason' in parsed) invalidLines.push(parsed);
    else entries.push(parsed);
  });
  return { entries, invalidLines };
}

function parseNames(field: string): KnownHostNames | undefined {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return undefined;
    const saltBytes = Buffer.from(salt, 'base64');
    const hashBytes = Buffer.from(hash, 'base64');
    if (saltBytes.length === 0 || hashBytes.length !== 20) return undefined;
    return { kind: 'hashed', salt: saltBytes, hash: hashBytes };
  }
  const patterns = field.split(',').filter((p) => p !== '');
  return patterns.length > 0 ? { kind: 'patterns', patterns } : undefined;
}

/** The name OpenSSH looks up: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/**
 * OpenSSH's host pattern: `*` any run of characters, `?` any one, case-insensitive. Two pointers, going back
 * only to the last `*` seen, so a pattern like `*a*a*a…` costs at most pattern × name steps; a regular
 * expression built from it backtracked exponentially.
 */
export function globMatches(glob: string, name: string): boolean {
  const p = glob.toLowerCase();
  const s = name.toLowerCase();
  let pi = 0;
  let si = 0;
  let star = -1;
  let resume = 0;
  while (si < s.length) {
    if (pi < p.length && (p[pi] === '?' || (p[pi] !== '*' && p[pi] === s[si]))) {
      pi++;
      si++;
    } else if (pi < p.length && p[pi] === '*') {
      star = pi++;
      resume = si;
    } else if (star >= 0) {
      pi = star + 1;
      si = ++resume;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === '*') pi++;
  return pi === p.length;
}

/** HMAC-SHA1 of the name under `salt`: what a hashed host field (`|1|salt|hash`) holds. */
export function hashKnownHostsName(salt: Buffer, name: string): Buffer {
  return createHmac('sha1', salt).update(name).digest();
}

/**
 * Whether an entry's host field applies to `host` on `port`. A matching negated pattern excludes it. A hashed
 * field is compared with the lower-case name, as ssh does (it lowercases the host name before it looks it up).
 */
export function entryMatchesHost(entry: KnownHostEntry, host: string, port: number): boolean {
  const name = knownHostsName(host, port);
  if (entry.names.kind === 'hashed') {
    return timingSafeEqual(hashKnownHostsName(entry.names.salt, name.toLowerCase()), entry.names.hash);
  }
  let matched = false;
  for (const pattern of entry.names.patterns) {
    const negated = pattern.startsWith('!');
    if (globMatches(negated ? pattern.slice(1) : pattern, name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

/** Reads the type string at the front of an SSH key blob (uint32 length + bytes). */
export function blobKeyType(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const length = blob.readUInt32BE(0);
  if (length === 0 || length > 64 || blob.length < 4 + length) return undefined;
  return blob.subarray(4, 4 + length).toString('latin1');
}

/** `SHA256:…` exactly as `ssh-keygen -l` and ssh print it (base64, no padding). */
export function sshFingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

export type HostKeyVerdict =
  | { status: 'trusted' }
  | { status: 'unknown'; keyType: string; fingerprint: string }
  | {
      status: 'mismatch';
      keyType: string;
      fingerprint: string;
      expected: Array<{ keyType: string; fingerprint: string; line: number }>;
    }
  | { status: 'revoked'; keyType: string; fingerprint: string };

/**
 * Judges the key a server offered. @cert-authority lines are set aside: ssh2 cannot check host
 * certificates, so they neither trust nor condemn a plain key. A host known under any key that is not
 * the offered one is a mismatch, as with OpenSSH's StrictHostKeyChecking (the executor asks for the
 * known key types first, so an honest server offers a known type when it has one).
 */
export function verifyHostKey(
  entries: readonly KnownHostEntry[],
  host: string,
  port: number,
  offered: Buffer,
): HostKeyVerdict {
  const keyType = blobKeyType(offered) ?? 'unknown-key-type';
  const fingerprint = sshFingerprint(offered);
  // A revoked key is refused for every host, as OpenSSH does.
  if (entries.some((e) => e.marker === 'revoked' && e.key.equals(offered))) {
    return { status: 'revoked', keyType, fingerprint };
  }
  const forHost = entries.filter((e) => e.marker === undefined && entryMatchesHost(e, host, port));
  if (forHost.some((e) => e.key.equals(offered))) return { status: 'trusted' };
  if (forHost.length === 0) return { status: 'unknown', keyType, fingerprint };
  return {
    status: 'mismatch',
    keyType,
    fingerprint,
    expected: forHost.map((e) => ({ keyType: e.keyType, fingerprint: sshFingerprint(e.key), line: e.line })),
  };
}

/** Key types recorded for a host, to ask the server for those first (as OpenSSH does). */
export function knownKeyTypes(entries: readonly KnownHostEntry[], host: string, port: number): string[] {
  const types = entries
    .filter((e) => e.marker === undefined && entryMatchesHost(e, host, port))
    .map((e) => e.keyType);
  return [...new Set(types)];
}

/** A file that does not exist yet is an empty one: every host is then unknown, with the fix in the error. */
export async function loadKnownHosts(path: string): Promise<ReturnType<typeof parseKnownHosts>> {
  try {
    return parseKnownHosts(await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], invalidLines: [] };
    throw err;
  }
}
