// One trip that runs a sectioned command (src/host-commands/sections.ts) and reads its sections back: the bounds
// the command was built with are the ones its output is parsed with, so the two cannot drift apart per caller.
import type { SectionedCommand } from '../host-commands/sections.js';
import { parseSections, type ParsedSections } from '../parsers/sections.js';
import type { ExecOptions } from '../ssh/exec-contract.js';
import type { SshSession } from '../ssh/executor.js';

/**
 * Runs `cmd` without failing on its exit status (each section carries its own) and splits what it printed. The
 * output is read as bytes, capped at the command's own bound.
 */
export async function execSectioned(
  session: SshSession,
  cmd: SectionedCommand,
  opts: Pick<ExecOptions, 'timeoutMs' | 'stdin' | 'secrets'>,
): Promise<ParsedSections> {
  const res = await session.exec(cmd.command, {
    ...opts,
    check: false,
    stdoutBytes: true,
    maxOutputBytes: cmd.maxOutputBytes,
  });
  return parseSections(res.stdoutBytes ?? Buffer.alloc(0), cmd.bounds);
}
