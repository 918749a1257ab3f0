// The command log of a simulated host: with `recordCommands`, sshd runs every session's command through a
// small script that appends it (base64, one line each, so multi-line commands stay whole) to the host's
// ssh-commands.log before running it unchanged (the simulated tools' own calls go to commands.log). Tests read it as the host's own record of what a deploy ran.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const commandLogPath = (hostDir: string): string => join(hostDir, 'ssh-commands.log');

/** A host whose commands containing a text are slow to start (setSlowCommand): seconds, then the text. */
export const slowCommandFile = 'slow-command';

/**
 * The ForceCommand script. sshd runs it with the user's shell and puts the client's command in
 * SSH_ORIGINAL_COMMAND; `exec` keeps stdin, the exit status and signals the command's own. One printf per
 * record: appends of one write do not interleave between concurrent sessions.
 */
const script = `#!/bin/sh
if [ -n "\${SSH_ORIGINAL_COMMAND+x}" ]; then
  rec=$(printf '%s' "$SSH_ORIGINAL_COMMAND" | base64 -w0)
  printf '%s\\n' "$rec" >> "$LIFTOFF_SIM_HOST_DIR/ssh-commands.log"
  slow="$LIFTOFF_SIM_HOST_DIR/${slowCommandFile}"
  if [ -f "$slow" ]; then
    { IFS= read -r secs; IFS= read -r pat; } < "$slow"
    case "$SSH_ORIGINAL_COMMAND" in *"$pat"*) sleep "$secs" ;; esac
  fi
  exec "\${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"
fi
exec "\${SHELL:-/bin/sh}" -l
`;

/** Writes the script into `dir` and returns its path, for sshd_config's ForceCommand. */
export function writeCommandRecorder(dir: string): string {
  const path = join(dir, 'record-command.sh');
  writeFileSync(path, script, { mode: 0o755 });
  return path;
}

/** Every command the host ran over SSH since the cluster came up, in order. */
export function readCommandLog(hostDir: string): string[] {
  let text: string;
  try {
    text = readFileSync(commandLogPath(hostDir), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => Buffer.from(l, 'base64').toString('utf8'));
}

/**
 * Makes the host's remote commands that contain `contains` wait `seconds` before they run, as on a loaded host
 * (a cluster brought up with `recordCommands`, whose ForceCommand script reads it); undefined clears it.
 */
export function writeSlowCommand(
  hostDir: string,
  slow: { contains: string; seconds: number } | undefined,
): void {
  const file = join(hostDir, slowCommandFile);
  if (!slow) {
    rmSync(file, { force: true });
    return;
  }
  if (slow.contains.includes('\n') || !(slow.seconds >= 0))
    throw new RangeError('one line of text, seconds ≥ 0');
  writeFileSync(file, `${slow.seconds}\n${slow.contains}\n`);
}
