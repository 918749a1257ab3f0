// The load's polls as one remote command each (sections.ts): the head's poll (server process, container, /health
// and /v1/models, the log's tail and its new bytes), a headless rank's (container, tail, new bytes), and a Ray
// worker's cheap watch (container state and its main process). `liftoff plan` shows these same commands.
import { raw, sh, type RawShell, type RemoteCommand } from '../ssh/quote.js';
import {
  healthCommand,
  inspectContainerCommand,
  maxLogChunkBytes,
  maxTailBytes,
  modelsCommand,
  pidAliveCommand,
  serveTailLines,
} from './launch.js';
import {
  restSection,
  section,
  sectionedCommand,
  stderrAfter,
  type SectionedCommand,
  type SectionRead,
} from './sections.js';
import { rankTailLines } from './multiproc.js';

/** A container's `docker inspect` is a few KB; its env can make it longer, never this long. */
export const maxInspectBytes = 256 * 1024;
/** `curl -w %{http_code}` and its exit status. */
const maxHealthBytes = 256;
/** /v1/models lists the served models: a few KB. */
const maxModelsBytes = 64 * 1024;
/** `docker inspect --format` of the state: one short line. */
const maxStateBytes = 1024;

function read(name: string, command: RemoteCommand, maxBytes: number): SectionRead {
  return { name, command, maxBytes };
}

function containerRead(container: string): SectionRead {
  return read('container', stderrAfter(inspectContainerCommand(container)), maxInspectBytes);
}

/**
 * The log's size, read once (`__z`; empty when there is no file), and where this poll's new bytes start (`__f`:
 * 0 when the file is now smaller than the offset, replaced or truncated). A poll's tail and its new bytes both
 * end at that size, so a line the new bytes hold (a fatal one) is in the tail the failure quotes as well.
 */
function logSnapshot(logPath: string, offset: number): RemoteCommand {
  return sh`__z=$(wc -c 2>/dev/null < ${logPath}); case "$__z" in ''|*[!0-9]*) __z=;; esac; __f=${offset}; if [ -n "$__z" ] && [ "$__z" -lt "$__f" ]; then __f=0; fi`;
}

/** The last `lines` lines of the log as of the snapshot (its first $__z bytes), at most maxTailBytes. */
function snapshotTailCommand(logPath: string, lines: number): RemoteCommand {
  const window = sh`$(( __z > ${maxTailBytes} ? __z - ${maxTailBytes} : 0 ))`;
  return sh`if [ -n "$__z" ]; then tail -c +$((${window} + 1)) -- ${logPath} 2>/dev/null | head -c $((__z - ${window})) | tail -n ${lines}; fi`;
}

/**
 * The log's new bytes since the snapshot's `__f`, up to its size, last (sectionScript's rest): the marker line
 * carries the size and where the read started, or nothing when there is no file. At most maxLogChunkBytes follow.
 */
function snapshotChunkPart(logPath: string): RemoteCommand {
  const header = sh`if [ -n "$__z" ]; then printf ' %s %s' "$__z" "$__f"; fi`;
  const body = sh`if [ -n "$__z" ] && [ "$__z" -gt "$__f" ]; then tail -c +$((__f + 1)) -- ${logPath} 2>/dev/null | head -c $(( __z - __f < ${maxLogChunkBytes} ? __z - __f : ${maxLogChunkBytes} )); fi`;
  return restSection('log', header, body);
}

/** The log's new bytes from `offset`, on its own (see snapshotChunkPart). */
export function logChunkPart(logPath: string, offset: number): RemoteCommand {
  return sh`${logSnapshot(logPath, offset)}; ${snapshotChunkPart(logPath)}`;
}

export interface HeadPollCommandInput {
  pid: number;
  container: string;
  logPath: string;
  logOffset: number;
  /** baseUrl(clusterIp, port). */
  url: string;
}

/**
 * A poll that reads a log: the snapshot first, then `parts` (the sections of `reads` and the shell between them),
 * then the log's last `tailLines` lines and its new bytes.
 */
function logPoll(
  log: { path: string; offset: number; tailLines: number },
  reads: SectionRead[],
  parts: RemoteCommand[],
): SectionedCommand {
  const tail = read('tail', snapshotTailCommand(log.path, log.tailLines), maxTailBytes);
  return sectionedCommand(
    [...reads, tail],
    [logSnapshot(log.path, log.offset), ...parts, section(tail), snapshotChunkPart(log.path)],
    maxLogChunkBytes,
  );
}

/**
 * The head's poll. /v1/models is asked only when /health said 200; it reads its Authorization header from the
 * command's stdin (authorizationHeader), the only read that gets stdin.
 */
export function headPollCommand(
  input: HeadPollCommandInput,
  placeholders?: { pid: RawShell },
): SectionedCommand {
  const pidRead =
    placeholders || (Number.isInteger(input.pid) && input.pid > 0)
      ? read('pid', pidAliveCommand(placeholders?.pid ?? input.pid), 256)
      : undefined;
  const container = containerRead(input.container);
  const health = read('health', sh`printf '%s %s' "$__hrc" "$__hc"`, maxHealthBytes);
  const models: SectionRead = { ...read('models', modelsCommand(input.url), maxModelsBytes), stdin: true };
  return logPoll(
    { path: input.logPath, offset: input.logOffset, tailLines: serveTailLines },
    [...(pidRead ? [pidRead] : []), container, health, models],
    [
      ...(pidRead ? [section(pidRead)] : []),
      section(container),
      sh`__hc=$(${healthCommand(input.url)} 2>/dev/null </dev/null); __hrc=$?`,
      section(health),
      sh`if [ "$__hrc" = 0 ] && [ "$__hc" = 200 ]; then ${section(models)}; fi`,
    ],
  );
}

/** A headless rank's poll: its container, its log's tail and new bytes. */
export function rankPollCommand(container: string, logPath: string, logOffset: number): SectionedCommand {
  const state = containerRead(container);
  return logPoll({ path: logPath, offset: logOffset, tailLines: rankTailLines }, [state], [section(state)]);
}

/**
 * A Ray worker's watch during the load, cheaper than a full inspect: the container's status, exit code and main
 * pid in one short line, then whether that pid still lives on the host (the kernel's word, not the daemon's).
 */
export function rayWorkerWatchCommand(container: string): SectionedCommand {
  const state = read('state', sh`printf '%s\\n' "$__st"; exit "$__src"`, maxStateBytes);
  const alive = read(
    'alive',
    sh`case "$__pid" in ''|0|*[!0-9]*) exit 2;; esac; ${pidAliveCommand(raw('"$__pid"'))}`,
    256,
  );
  return sectionedCommand(
    [state, alive],
    [
      sh`__st=$(docker inspect --type container --format ${'{{.State.Status}} {{.State.ExitCode}} {{.State.Pid}}'} -- ${container} 2>&1 </dev/null); __src=$?; __pid=\${__st##* }`,
      section(state),
      section(alive),
    ],
  );
}
