// One remote command that runs several reads and returns each one's output as its own section, so a poll or a
// read-only step costs one round trip per host instead of one per read. The framing is unambiguous whatever the
// reads print: every line of a section's output is sent with a `|` in front (sed), so a line that does not start
// with `|` can only be one of this script's markers. Each read runs in its own subshell with stdin closed, its
// stderr merged into its output and its output cut on the host to its bound (`head -c`), and its exit status is
// reported after it: one read that fails (a missing tool, a daemon down) leaves the others as they were.
// The parser is src/parsers/sections.ts.
import { raw, sh, type RawShell, type RemoteCommand } from '../ssh/quote.js';
import { checkStepCommands, type StepCommand } from './step-command.js';
import { sectionMarkers, stderrSeparator } from '../parsers/sections.js';

export interface SectionRead {
  /** [a-z0-9-]+: the parser's key. */
  name: string;
  /** The read itself; it runs in a subshell, so `exit N` sets its status. */
  command: RemoteCommand;
  /** Bytes of output kept on the host; one more is sent, so the parser can tell the read was cut. */
  maxBytes: number;
  /** The read takes the command's stdin (curl -H @-); every other read gets /dev/null. */
  stdin?: true;
}

const namePattern = /^[a-z0-9-]{1,32}$/;

function checkName(name: string): void {
  if (!namePattern.test(name))
    throw new TypeError(`section name ${JSON.stringify(name)} is not [a-z0-9-]{1,32}`);
}

/**
 * The shell text of one section: its begin marker, its output (each line `|`-prefixed, at most maxBytes + 1
 * bytes of it), then its end marker with the exit status. fd 4 is the script's stdout (set by sectionScript);
 * fd 3 carries the status out of the pipeline.
 */
export function section(read: SectionRead): RemoteCommand {
  checkName(read.name);
  if (!Number.isSafeInteger(read.maxBytes) || read.maxBytes <= 0)
    throw new RangeError(`section ${read.name}: maxBytes must be a positive integer`);
  const input = read.stdin ? raw('') : raw('</dev/null');
  return sh`printf '%s\\n' ${`${sectionMarkers.begin}${read.name}`}; __rc=$( { { ( ${read.command} ) 2>&1 3>&- 4>&- ${input}; echo "$?" >&3; } | head -c ${read.maxBytes + 1} | sed 's/^/|/' >&4; } 3>&1 ); printf '\\n%s %s\\n' ${`${sectionMarkers.end}${read.name}`} "$__rc"`;
}

/**
 * A read whose stdout must stay whole (JSON) while its stderr is still wanted (`docker inspect`'s "No such
 * container"): stdout first, then the separator line, then what it printed on stderr. Split with splitStderr.
 */
export function stderrAfter(command: RemoteCommand): RemoteCommand {
  return sh`{ __e=$( { ${command} ; } 2>&1 >&6 6>&- ); __r=$?; printf '\\n%s\\n%s' ${stderrSeparator} "$__e"; exit "$__r"; } 6>&1`;
}

/**
 * A last part whose bytes come as they are, to the end of the output (a log chunk, counted in bytes): `header`
 * prints the marker line's fields (digits and spaces only; anything else is refused by the parser), then
 * `body` prints the bytes, already bounded by the caller.
 */
export function restSection(name: string, header: RemoteCommand, body: RemoteCommand): RemoteCommand {
  checkName(name);
  return sh`printf '%s' ${`${sectionMarkers.rest}${name}`}; ${header}; printf '\\n'; ${body}`;
}

/**
 * The script: the C locale (bytes are bytes for every tool), fd 4 as the real stdout for the sections, then the
 * parts in order. `parts` are section()/restSection() texts or plain shell fragments between them (variable
 * assignments a later section reads); a rest section, if any, must come last.
 */
export function sectionScript(parts: readonly RemoteCommand[]): RemoteCommand {
  let script = sh`LC_ALL=C; export LC_ALL; exec 4>&1`;
  for (const part of parts) script = sh`${script}; ${part}`;
  return script;
}

export interface SectionedCommand {
  command: RemoteCommand;
  /** Each section's byte bound, for parseSections. */
  bounds: Record<string, number>;
  /** The most output the command prints (ExecOptions.maxOutputBytes). */
  maxOutputBytes: number;
}

/**
 * The script of `parts` (sectionScript), with the bounds of its `reads`, and the most it can print when every
 * read fills its bound and the rest section, if any, `restBytes` (markers included).
 */
export function sectionedCommand(
  reads: readonly SectionRead[],
  parts: readonly RemoteCommand[],
  restBytes = 0,
): SectionedCommand {
  return {
    command: sectionScript(parts),
    bounds: Object.fromEntries(reads.map((r) => [r.name, r.maxBytes])),
    // Each kept line gains a `|`: at worst every byte is a newline, doubling the section.
    maxOutputBytes: reads.reduce((n, r) => n + 2 * (r.maxBytes + 1) + r.name.length + 64, restBytes + 256),
  };
}

/** The shell loop of StepCommand.waitUntil: the check runs with no stdin and no output, as a plain condition. */
function hostWait(wait: NonNullable<StepCommand['waitUntil']>): RemoteCommand {
  const checks = Math.max(0, Math.ceil(wait.seconds / wait.everySeconds));
  if (!(wait.everySeconds > 0) || !Number.isSafeInteger(checks))
    throw new RangeError('waitUntil wants seconds ≥ 0 and everySeconds > 0');
  return sh`__w=0; until ( ${wait.until} ) </dev/null >/dev/null 2>&1 || [ "$__w" -ge ${String(checks)} ]; do sleep ${String(wait.everySeconds)}; __w=$((__w + 1)); done`;
}

/**
 * The one remote command that runs a step's commands in their order (activities/run-commands.ts), each in the
 * section of its name, its stderr after its stdout; `liftoff plan --verbose` shows this same text. A command whose
 * `unlessOk` command passed does not run, and has no section.
 */
export function batchCommand(
  commands: readonly StepCommand[],
  defaultMaxBytes = 1024 * 1024,
): SectionedCommand {
  checkStepCommands(commands);
  const reads = commands.map((c) => ({
    name: c.name,
    command: stderrAfter(c.command),
    maxBytes: c.maxBytes ?? defaultMaxBytes,
    ...(c.stdin ? { stdin: true as const } : {}),
  }));
  // A command's exit status kept in a shell variable by its index, for a later `unlessOk` to test.
  const statusVar = (name: string): RawShell => raw(`__rc_${commands.findIndex((c) => c.name === name)}`);
  const parts = commands.map((c, i) => {
    const read = reads[i];
    if (!read) throw new RangeError(`step command ${i} has no section`);
    let part = section(read);
    if (c.waitUntil !== undefined) part = sh`${hostWait(c.waitUntil)}; ${part}`;
    if (c.unlessOk !== undefined) part = sh`if [ "$${statusVar(c.unlessOk)}" != 0 ]; then ${part}; fi`;
    return commands.some((later) => later.unlessOk === c.name)
      ? sh`${part}; ${statusVar(c.name)}=$__rc`
      : part;
  });
  return sectionedCommand(reads, parts);
}
