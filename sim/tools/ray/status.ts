// `ray status`: asks the GCS for the cluster's state and prints it as Ray does.
import { parseFlags } from './args.js';
import { err, out } from './cli.js';
import { formatStatus } from './format.js';
import {
  connectToGcs,
  gcsConnectTimeoutSeconds,
  gcsUnreachableLines,
  NO_RUNNING_RAY_MESSAGE,
  resolveGcsAddress,
  type ServerMessage,
} from './protocol.js';
import { toolIo } from '../io.js';

export async function status(rest: string[]): Promise<number> {
  const parsed = parseFlags(rest, { values: ['address'], booleans: ['verbose', 'v'] });
  const dir = toolIo().env.LIFTOFF_SIM_HOST_DIR;
  const source = resolveGcsAddress(parsed.values.get('address'), dir);
  if (source.kind === 'none') {
    err(NO_RUNNING_RAY_MESSAGE);
    return 1;
  }
  if (source.kind === 'invalid') {
    err(`ValueError: Malformed address ${source.text}. Expected '<host>:<port>'.`);
    return 1;
  }
  const channel = await connectToGcs(source.addr);
  if (!channel) {
    for (const line of gcsUnreachableLines(source.addr)) err(line);
    return 1;
  }
  const reply = await new Promise<ServerMessage | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), gcsConnectTimeoutSeconds() * 1000);
    channel.onMessage((msg) => {
      if (msg.type !== 'statusReply') return;
      clearTimeout(timer);
      resolve(msg);
    });
    channel.onClose(() => {
      clearTimeout(timer);
      resolve(undefined);
    });
    channel.send({ type: 'status' });
  });
  channel.close();
  if (reply?.type !== 'statusReply') {
    for (const line of gcsUnreachableLines(source.addr)) err(line);
    return 1;
  }
  out(formatStatus(reply.status));
  return 0;
}
