// The host key a server offers, read without logging in (for `liftoff trust`).
import ssh2 from 'ssh2';
import type { ConnectConfig } from 'ssh2';
import {
  classifyConnectError,
  SshConnectError,
  type SshErrorEndpoint,
  type SshLevelError,
} from './errors.js';
import { connectConfig, resolveSettings, type SshConnectOptions } from './connect.js';
import { blobKeyType, sshFingerprint } from './known-hosts.js';
import { SshPool } from './shared-pool.js';
import { endpointOf, type SshAuth, type SshTarget } from './target.js';

const { Client } = ssh2;

export interface OfferedHostKey {
  /** ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, … */
  keyType: string;
  /** The key blob in SSH wire format, as known_hosts stores it (base64). */
  key: Buffer;
  /** `SHA256:…` as ssh-keygen -l prints it. */
  fingerprint: string;
}

/**
 * The host key `target` offers, for `liftoff trust`. Its jump hosts are verified and logged into as usual
 * (a tunnel needs a session); the target itself is neither verified nor logged into: the connection ends as
 * soon as the key exchange completes, so no credential is offered and nothing runs there. The key exchange
 * completing means the server signed it with the private half of the key it offered. When known_hosts already
 * lists key types for the target, those are asked for first, as connecting does, so that the answer is the
 * key a connection would be judged on.
 */
export async function fetchOfferedHostKey(
  target: SshTarget,
  auth: SshAuth,
  opts?: SshConnectOptions,
): Promise<OfferedHostKey> {
  const settings = resolveSettings(opts);
  const endpoint = endpointOf(target);
  const jumps = new SshPool(auth, opts);
  try {
    const via = target.jump ? await jumps.session(target.jump) : undefined;
    const { config } = await connectConfig(target, auth, settings);
    if (via) config.sock = await via.tunnel(target.host, target.port, endpoint, settings.connectTimeoutMs);
    return await keyExchangeOnly(config, endpoint);
  } finally {
    await jumps.closeAll();
  }
}

function keyExchangeOnly(config: ConnectConfig, endpoint: SshErrorEndpoint): Promise<OfferedHostKey> {
  const client = new Client();
  return new Promise<OfferedHostKey>((resolve, reject) => {
    let offered: Buffer | undefined;
    let outcome: OfferedHostKey | Error | undefined;
    const settle = () => {
      outcome ??= new SshConnectError(endpoint, 'closed', 'connection closed during the key exchange');
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    // Settle on 'close' only, so the socket (or the jump host's tunnel) is gone before the caller moves on.
    client.once('close', settle);
    client.on('error', (err: SshLevelError) => {
      outcome ??= new SshConnectError(endpoint, classifyConnectError(err), err.message, { cause: err });
    });
    client.on('handshake', () => {
      if (!offered) return;
      const keyType = blobKeyType(offered) ?? 'unknown-key-type';
      outcome ??= { keyType, key: offered, fingerprint: sshFingerprint(offered) };
      // ssh2 asks for the user-auth service right after this event; ending here means that request is never
      // written (the socket is no longer writable), and the server sees a disconnect before any login.
      client.end();
      const forced = setTimeout(() => client.destroy(), 2_000);
      forced.unref();
      client.once('close', () => clearTimeout(forced));
    });
    try {
      client.connect({
        ...config,
        hostVerifier: (key: Buffer) => {
          offered = Buffer.from(key);
          return true;
        },
        // Never offer a credential to a host we have not verified, even if the handshake were to go on.
        // (An empty list of methods: ssh2 gives up at once, without even trying `none`.)
        authHandler: [],
      });
    } catch (err) {
      outcome = new SshConnectError(endpoint, 'closed', (err as Error).message, { cause: err });
      client.destroy();
      settle();
    }
  });
}
