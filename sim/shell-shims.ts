// Simulated tools that are shell scripts, not the node bundle: they answer in a few milliseconds, which keeps a
// preflight of 16 hosts as fast as on real hosts. Each reads a file of the host's folder (host-state.ts paths)
// that the disagreement knobs (disagree.ts) write.
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const realDate = existsSync('/usr/bin/date') ? '/usr/bin/date' : '/bin/date';

const shims: Record<string, string> = {
  // A network namespace shares the machine's clock (time namespaces leave CLOCK_REALTIME alone), so a host's
  // clock offset is added here.
  date: `#!/bin/sh
off=$(cat "$LIFTOFF_SIM_HOST_DIR/clock-offset" 2>/dev/null)
case "$off" in ''|*[!0-9.+-]*) exec ${realDate} "$@";; esac
exec ${realDate} -d "$off seconds" "$@"
`,
  // logind as \`loginctl show-session\` (the manager's RemoveIPC) and \`show-user\` (UID, Name, Linger) report it.
  // The sim logs in as root (a non-root account would have to exist on the test machine), so the user logind
  // tracks for the session is part of this state too.
  loginctl: `#!/bin/sh
f="$LIFTOFF_SIM_HOST_DIR/logind.env"
[ -r "$f" ] || { echo "Failed to connect to bus: No such file or directory" >&2; exit 1; }
case "$1" in
  show-session) grep '^RemoveIPC=' "$f" ;;
  show-user) grep -E '^(UID|Name|Linger)=' "$f" ;;
  *) echo "Unknown command verb '$1'." >&2; exit 1 ;;
esac
`,
};

export const shellShimNames = Object.keys(shims);

export function writeShellShims(binDir: string): void {
  for (const [name, text] of Object.entries(shims)) {
    const file = join(binDir, name);
    writeFileSync(file, text);
    chmodSync(file, 0o755);
  }
}
