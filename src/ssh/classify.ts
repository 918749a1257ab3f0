// What kind of failure an ssh2 error is (SshConnectErrorKind), so messages and retries can tell a refused login
// from an unreachable host or a dropped link.
import type { SshConnectErrorKind } from './errors.js';

export interface SshLevelError extends Error {
  level?: string;
  code?: string;
}

export function classifyConnectError(err: SshLevelError): SshConnectErrorKind {
  switch (err.level) {
    case 'client-authentication':
      return 'auth';
    case 'client-timeout':
      return 'timeout';
    case 'client-dns':
      return 'unreachable';
    case 'client-socket':
      switch (err.code) {
        case 'ECONNREFUSED':
          return 'refused';
        case 'ETIMEDOUT':
          return 'timeout';
        case 'ECONNRESET':
        case 'EPIPE':
          return 'closed';
        default:
          return 'unreachable';
      }
    default:
      return 'closed';
  }
}

/** Reasons a jump host gives when it cannot open the forwarded TCP connection. */
export function classifyForwardError(err: Error & { reason?: number | string }): {
  kind: SshConnectErrorKind;
  advice?: string;
} {
  const text = err.message.toLowerCase();
  if (err.reason === 1 || text.includes('prohibited')) {
    return {
      kind: 'unreachable',
      advice:
        'The jump host refused to forward the connection: allow TCP forwarding for this user in its sshd_config (AllowTcpForwarding).',
    };
  }
  if (text.includes('refused')) return { kind: 'refused' };
  if (text.includes('timed out')) return { kind: 'timeout' };
  return { kind: 'unreachable' };
}
