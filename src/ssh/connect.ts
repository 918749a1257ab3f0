// Opening a verified connection to one hop: credentials, the host key checked against known_hosts before anything
// runs, the handshake, over the jump host's own verified session when there is one (the pools chain the hops).
import { readFile } from 'node:fs/promises';
import ssh2 from 'ssh2';
import type { ConnectConfig } from 'ssh2';
import {
  classifyConnectError,
  HostKeyMismatchError,
  HostKeyUnknownError,
  SshConnectError,
  type SshErrorEndpoint,
  type SshLevelError,
} from './errors.js';
import { knownKeyTypes, loadKnownHosts, verifyHostKey } from './known-hosts.js';
import { Ssh2Session } from './session.js';
import { acceptsSshRsa, endpointOf, expandHome, type SshAuth, type SshTarget } from './target.js';

const { Client, utils: sshUtils } = ssh2;

export interface SshConnectOptions {
  /** TCP connect + handshake + authentication, per hop (default 10 s). */
  connectTimeoutMs?: number;
  /** A dead link is noticed after interval × count without an answer (default 5 s × 3). */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** Channels open at once on one connection; sshd's MaxSessions defaults to 10 (default 8). */
  maxConcurrentExecs?: number;
}

// The order ssh2 offers by default, so that putting the known types first keeps every other one available.
// Not `ssh-rsa`: that signs the key exchange with SHA-1. An RSA host key still works through rsa-sha2-256/512,
// which every OpenSSH since 7.2 (2016) signs with; only a server older than that needs SHA-1, and gets it only
// when the worker's policy lists it (sshRsaHostKeys), last, so a server that offers SHA-2 still uses SHA-2.
const hostKeyAlgorithms = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
] as const;
type HostKeyAlgorithm = (typeof hostKeyAlgorithms)[number];

function algorithmsForKeyType(keyType: string): HostKeyAlgorithm[] {
  if (keyType === 'ssh-rsa') return ['rsa-sha2-512', 'rsa-sha2-256'];
  return hostKeyAlgorithms.filter((a) => a === keyType);
}

/**
 * What a connection to `target` asks for, and the known_hosts entries it is judged on. The key types known_hosts
 * lists for the host come first (as OpenSSH does), so a host with several keys offers the one we can check.
 */
export async function connectConfig(target: SshTarget, auth: SshAuth, settings: ConnectSettings) {
  const knownHostsPath = expandHome(auth.knownHostsPath);
  const { entries } = await loadKnownHosts(knownHostsPath);
  const preferred = knownKeyTypes(entries, target.host, target.port).flatMap(algorithmsForKeyType);
  const sha1 = acceptsSshRsa(auth, target.host) ? (['ssh-rsa'] as const) : [];
  const config: ConnectConfig = {
    host: target.host,
    port: target.port,
    username: target.user,
    readyTimeout: settings.connectTimeoutMs,
    keepaliveInterval: settings.keepaliveIntervalMs,
    keepaliveCountMax: settings.keepaliveCountMax,
    algorithms: { serverHostKey: [...new Set([...preferred, ...hostKeyAlgorithms, ...sha1])] },
  };
  return { config, entries, knownHostsPath };
}

/** A refused login that retrying cannot mend: a credential missing, unreadable or unusable. */
function authError(endpoint: SshErrorEndpoint, reason: string, advice: string): SshConnectError {
  return new SshConnectError(endpoint, 'auth', reason, { advice });
}

async function readPrivateKey(path: string, endpoint: SshErrorEndpoint): Promise<Buffer> {
  const fullPath = expandHome(path);
  let key: Buffer;
  try {
    key = await readFile(fullPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    const advice = 'Check privateKeyPath in the spec and that the worker process may read that file.';
    throw authError(endpoint, `cannot read private key file ${fullPath} (${code})`, advice);
  }
  // Only the parser's verdict is reported, never the content: its errors name the format, not the bytes.
  const parsed = sshUtils.parseKey(key);
  if (parsed instanceof Error && /encrypted|passphrase/i.test(parsed.message)) {
    const advice =
      'Load it into ssh-agent (ssh-add) and set useAgent, or point privateKeyPath at a key without a passphrase.';
    throw authError(endpoint, `private key ${fullPath} is protected by a passphrase`, advice);
  }
  if (parsed instanceof Error) {
    const advice = 'Point privateKeyPath at an OpenSSH or PEM private key (ed25519, ecdsa or rsa).';
    throw authError(endpoint, `private key ${fullPath} cannot be parsed`, advice);
  }
  return key;
}

// ssh2's words when the server offers no host-key algorithm the client does: with an RSA host key, a server
// that signs with SHA-1 only.
function noCommonHostKeyAlgorithm(err: SshLevelError): boolean {
  return err.level === 'handshake' && /no matching host key format/i.test(err.message);
}

function sha1OnlyAdvice(address: string): string {
  return (
    `The host offers no host-key signature this worker accepts; with an RSA host key that means it signs with ` +
    `SHA-1 only (ssh-rsa, OpenSSH before 7.2), which a forged signature could impersonate. Upgrade its sshd, or ` +
    `list ${address} under sshRsaHostKeys in the worker policy (LIFTOFF_WORKER_POLICY).`
  );
}

/** SshConnectOptions with every default filled in. */
export type ConnectSettings = Required<SshConnectOptions>;

/** `via`: the verified session to the jump host, when this hop goes through one. */
export async function connectHop(hop: {
  target: SshTarget;
  auth: SshAuth;
  settings: ConnectSettings;
  via?: Ssh2Session | undefined;
}): Promise<Ssh2Session> {
  const { target, auth, settings } = hop;
  const endpoint = endpointOf(target);
  const { config, entries, knownHostsPath } = await connectConfig(target, auth, settings);
  if (auth.privateKeyPath) config.privateKey = await readPrivateKey(auth.privateKeyPath, endpoint);
  if (auth.useAgent) {
    const agent = process.env.SSH_AUTH_SOCK;
    const advice = 'Start ssh-agent for the worker process and export SSH_AUTH_SOCK, or set privateKeyPath.';
    if (!agent) throw authError(endpoint, 'useAgent is set but SSH_AUTH_SOCK is not', advice);
    config.agent = agent;
  }
  const noCredentials = 'Set privateKeyPath or useAgent in the ssh section of the spec.';
  if (!config.privateKey && !config.agent)
    throw authError(endpoint, 'no credentials configured', noCredentials);

  let rejection: Error | undefined;
  config.hostVerifier = (key: Buffer) => {
    const verdict = verifyHostKey(entries, target.host, target.port, key);
    switch (verdict.status) {
      case 'trusted':
        return true;
      case 'unknown':
        rejection = new HostKeyUnknownError(endpoint, verdict.keyType, verdict.fingerprint, knownHostsPath);
        return false;
      case 'revoked':
      case 'mismatch':
        rejection = new HostKeyMismatchError(endpoint, {
          keyType: verdict.keyType,
          gotFingerprint: verdict.fingerprint,
          expectedFingerprints:
            verdict.status === 'mismatch' ? verdict.expected.map((e) => `${e.keyType} ${e.fingerprint}`) : [],
          knownHostsPath,
          revoked: verdict.status === 'revoked',
        });
        return false;
    }
  };

  const viaChannel = hop.via
    ? await hop.via.tunnel(target.host, target.port, endpoint, settings.connectTimeoutMs)
    : undefined;
  if (viaChannel) config.sock = viaChannel;

  const client = new Client();
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      client.removeListener('ready', onReady);
      client.removeListener('error', onError);
      client.removeListener('close', onClose);
      if (err) {
        client.destroy();
        reject(err);
      } else resolve();
    };
    const onReady = () => finish();
    const onError = (err: SshLevelError) => {
      if (rejection) {
        finish(rejection);
        return;
      }
      finish(
        new SshConnectError(endpoint, classifyConnectError(err), err.message, {
          cause: err,
          ...(noCommonHostKeyAlgorithm(err) ? { advice: sha1OnlyAdvice(target.host), final: true } : {}),
        }),
      );
    };
    const onClose = () => {
      finish(rejection ?? new SshConnectError(endpoint, 'closed', 'connection closed during the handshake'));
    };
    client.on('ready', onReady);
    client.on('error', onError);
    client.on('close', onClose);
    // Errors after the handshake are recorded by the session; this keeps them from being unhandled meanwhile.
    client.on('error', () => {});
    try {
      client.connect(config);
    } catch (err) {
      finish(new SshConnectError(endpoint, 'auth', (err as Error).message, { cause: err }));
    }
  });
  return new Ssh2Session(target, client, closed, {
    maxConcurrentExecs: settings.maxConcurrentExecs,
    channelOpenTimeoutMs: settings.connectTimeoutMs,
    ...(viaChannel ? { viaChannel } : {}),
  });
}

export function resolveSettings(opts: SshConnectOptions = {}): ConnectSettings {
  return {
    connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
    keepaliveIntervalMs: opts.keepaliveIntervalMs ?? 5_000,
    keepaliveCountMax: opts.keepaliveCountMax ?? 3,
    maxConcurrentExecs: opts.maxConcurrentExecs ?? 8,
  };
}
