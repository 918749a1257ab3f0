// Stopping a remote command: the signals sent over its channel and the exit status a signal means.
import { constants as osConstants } from 'node:os';
import type { ClientChannel } from 'ssh2';

export function signalExitCode(signal: string): number {
  const number = (osConstants.signals as Record<string, number | undefined>)[signal];
  return number === undefined ? 255 : 128 + number;
}

/** The parts of an ssh2 channel that Channel.signal itself uses. */
interface ChannelInternals {
  outgoing?: { id?: number; state?: string };
  _client?: { _protocol?: { signal?: (channelId: number, signalName: string) => void } };
}

/**
 * Sends an RFC 4254 "signal" request. ssh2's Channel.signal drops it once our side has sent EOF, and we
 * always send EOF on stdin so commands never wait for input; the protocol allows signals after EOF, so this
 * goes one level down to the same call Channel.signal makes.
 */
export function sendSignal(channel: ClientChannel, signalName: 'TERM' | 'KILL'): void {
  const internals = channel as unknown as ChannelInternals;
  const id = internals.outgoing?.id;
  const protocol = internals._client?._protocol;
  try {
    if (
      id !== undefined &&
      (internals.outgoing?.state === 'open' || internals.outgoing?.state === 'eof') &&
      typeof protocol?.signal === 'function'
    ) {
      protocol.signal(id, signalName);
    } else {
      channel.signal(signalName);
    }
  } catch {
    // The channel or the connection is already gone: nothing left to signal.
  }
}
