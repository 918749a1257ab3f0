// The load poll's read of a log on its own: the log's section alone, read and cut as the poll reads it, so a test
// can follow a log through several reads.
import { logChunkOf, type LogChunk } from '../../src/activities/health.js';
import { execSectioned } from '../../src/activities/run-commands.js';
import { maxLogChunkBytes } from '../../src/host-commands/launch.js';
import { logChunkPart } from '../../src/host-commands/polls.js';
import { sectionScript } from '../../src/host-commands/sections.js';
import type { SshSession } from '../../src/ssh/executor.js';

/** Reads the log from `offset` in one remote command (see logChunkOf). */
export async function readLogFrom(session: SshSession, logPath: string, offset: number): Promise<LogChunk> {
  const command = sectionScript([logChunkPart(logPath, offset)]);
  const read = { command, bounds: {}, maxOutputBytes: maxLogChunkBytes + 4096 };
  const out = await execSectioned(session, read, { timeoutMs: 30_000 });
  return logChunkOf(out.rest, offset);
}
