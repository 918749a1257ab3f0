// One poll of a loading or running vLLM server: is the process alive, is its container up, what did the
// log say since the last poll, and do /health and /v1/models answer. The workflow loops with timers and
// decides; this activity only observes.
import { summarizeVllmLog } from '../parsers/vllm-log.js';
import { activityFailure } from './activity-failure.js';
import type { HostRef } from '../config/targets.js';
import { baseUrl, maxLogChunkBytes } from '../host-commands/launch.js';
import { headPollCommand, maxInspectBytes, rayWorkerWatchCommand } from '../host-commands/polls.js';
import { sectionProblem, splitStderr, type ParsedSection, type ParsedSections } from '../parsers/sections.js';
import { FailureType } from '../shared/failures.js';
import { redactText, redactedTail } from '../shared/secrets.js';
import { containerSecrets, containerStateOf, type ContainerState } from './docker.js';
import { onHost } from './ssh-context.js';
import { execSectioned } from './run-commands.js';
import { resolveValue, secretValues } from './secrets.js';
import type { CheckRayWorkerResult, CheckServeInput, CheckServeResult } from './types.js';

export interface LogChunk {
  /** Complete lines read (a tqdm bar's `\r` segments stay in their line). */
  lines: string[];
  nextOffset: number;
  /** The file is smaller than the offset: it was replaced or truncated, and was read from the start. */
  restarted: boolean;
}

/**
 * The log's new bytes, from a poll's rest section (polls.ts logChunkPart): the offset counts the file's bytes,
 * so it must advance by the bytes consumed, never by the length of decoded text (invalid UTF-8 decodes to a
 * replacement character of another size). Only up to the last line end is consumed: a line still being written
 * is read whole on the next poll. A chunk with no line end at all (one huge line) is consumed as it is. Lines
 * are decoded after the split, so a bad byte spoils at most its own line. No readable size (no file, or a
 * header that is not two numbers): nothing is read and the offset stays.
 */
export function logChunkOf(rest: ParsedSections['rest'], offset: number): LogChunk {
  const [fileBytes, from] = rest?.name === 'log' ? rest.fields : [];
  if (rest?.name !== 'log' || rest.fields.length !== 2 || fileBytes === undefined || from === undefined)
    return { lines: [], nextOffset: offset, restarted: false };
  const restarted = fileBytes < offset;
  // The host chose where to start; only the start this poll asked for, or 0 after a restart, is taken.
  if (from !== (restarted ? 0 : offset)) return { lines: [], nextOffset: offset, restarted: false };
  // The host said it sent at most maxLogChunkBytes; a host that sends more is cut here.
  const bytes = rest.bytes.subarray(0, maxLogChunkBytes);
  const cut = Math.max(bytes.lastIndexOf(0x0a), bytes.lastIndexOf(0x0d));
  let consumed: number;
  if (cut >= 0) consumed = cut + 1;
  else if (bytes.length >= maxLogChunkBytes) consumed = bytes.length;
  else consumed = 0;
  return { lines: splitLines(bytes.subarray(0, consumed)), nextOffset: from + consumed, restarted };
}

/** Splits on newline bytes, then decodes each line; blank lines are dropped. */
function splitLines(bytes: Buffer): string[] {
  const lines: string[] = [];
  let start = 0;
  while (start < bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    const line = bytes.toString('utf8', start, end);
    if (line.trim() !== '') lines.push(line);
    start = end + 1;
  }
  return lines;
}

/** curl's exit codes for "nothing listens there": couldn't connect (7); the port is closed while loading. */
const curlRefused = new Set([7]);

/** The health section: `<curl exit status> <http code>`. */
export function healthOf(s: ParsedSection | undefined): CheckServeResult['health'] {
  if (!s || sectionProblem(s, 'health') || s.cut) return 'error';
  const [status, code] = s.text.trim().split(' ');
  if (curlRefused.has(Number(status))) return 'refused';
  if (status === '0' && code === '200') return 'ok';
  return 'error';
}

/** Whether the models section lists `model`; a missing, failed, cut or unparsable one does not. */
export function modelListedIn(s: ParsedSection | undefined, model: string): boolean {
  if (!s || sectionProblem(s, 'models') || s.exitCode !== 0 || s.cut) return false;
  try {
    const list = JSON.parse(s.text) as { data?: Array<{ id?: unknown; root?: unknown }> };
    return Array.isArray(list.data) && list.data.some((m) => m?.id === model || m?.root === model);
  } catch {
    return false;
  }
}

/** The tail section as lines; [] when it is missing or malformed. */
export function tailLinesOf(s: ParsedSection | undefined, secrets: readonly string[]): string[] {
  if (!s || s.malformed) return [];
  return redactText(s.text, secrets)
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '');
}

/**
 * The container section read: a missing container is `exists: false`; docker failing (or the section missing,
 * cut, malformed) is `problem`, the container's state unknown.
 */
export function containerOf(
  s: ParsedSection | undefined,
  name: string,
  host: string,
): { state?: ContainerState; problem?: string } {
  const problem =
    sectionProblem(s, 'container') ??
    (s?.cut ? `docker inspect ${name} printed more than ${maxInspectBytes} bytes` : undefined);
  if (problem || !s) return { problem: problem ?? 'no container section' };
  try {
    const { stdout, stderr } = splitStderr(s.text);
    return { state: containerStateOf({ exitCode: s.exitCode ?? 1, stdout, stderr }, name, host) };
  } catch (err) {
    return { problem: err instanceof Error ? err.message : String(err) };
  }
}

/** curl reads this header line from stdin (`-H @-`): the key never appears on a command line. */
export function authorizationHeader(apiKey: string | undefined): string {
  return apiKey ? `Authorization: Bearer ${apiKey}\n` : '';
}

/**
 * One remote command per poll (polls.ts headPollCommand). Each read is judged on its own: a docker that fails
 * leaves the process, the log and /health answering. Only when nothing else decides the load (the process
 * alive, no fatal line) does an unknown container state fail the poll, as a failed `docker inspect` always did.
 */
export async function checkServeHealth(input: CheckServeInput): Promise<CheckServeResult> {
  const apiKey = await resolveValue('serve.env.VLLM_API_KEY', input.apiKey);
  const configured = await secretValues(...(input.secretEnv ?? []));
  return onHost(input.head, async (session) => {
    const host = session.target.name;
    const poll = headPollCommand({ ...input, url: baseUrl(input.clusterIp, input.port) });
    const out = await execSectioned(session, poll, {
      timeoutMs: 45_000,
      stdin: authorizationHeader(apiKey),
      secrets: apiKey ? [apiKey] : [],
    });
    const problems: string[] = [];
    const pidSection = out.sections.get('pid');
    const pidProblem =
      Number.isInteger(input.pid) && input.pid > 0 ? sectionProblem(pidSection, 'pid') : undefined;
    if (pidProblem) problems.push(pidProblem);
    const processAlive = pidSection?.exitCode === 0 && !pidProblem;
    const container = containerOf(out.sections.get('container'), input.container, host);
    if (container.problem) problems.push(container.problem);
    const secrets = [
      ...configured,
      ...(apiKey ? [apiKey] : []),
      ...(container.state ? containerSecrets(container.state) : []),
    ];
    const chunk = logChunkOf(out.rest, input.logOffset);
    if (out.rest?.name !== 'log') problems.push("no log section in the host's output");
    const summary = chunk.lines.length > 0 ? summarizeVllmLog(chunk.lines) : undefined;
    if (summary?.fatal) summary.fatal = { ...summary.fatal, line: redactText(summary.fatal.line, secrets) };
    if (!container.state && (pidProblem || (processAlive && !summary?.fatal))) {
      throw activityFailure(
        FailureType.rayContainerFailed,
        `The poll of ${host} cannot tell whether the container ${input.container} runs: ${redactedTail(container.problem ?? '', secrets, 1024)}${pidProblem ? `; ${redactText(pidProblem, secrets)}` : ''}`,
        false,
      );
    }
    const health = healthOf(out.sections.get('health'));
    return {
      processAlive,
      // Unknown only when the process is dead or the log fatal, which decide the load whatever the container.
      containerRunning: container.state ? container.state.running : true,
      logOffset: chunk.nextOffset,
      logGrew: chunk.lines.length > 0 || chunk.nextOffset !== input.logOffset,
      ...(summary ? { summary } : {}),
      tail: tailLinesOf(out.sections.get('tail'), secrets),
      health,
      modelListed: health === 'ok' && modelListedIn(out.sections.get('models'), input.model),
      ...(problems.length > 0 ? { readProblems: problems.map((p) => redactedTail(p, secrets, 512)) } : {}),
    };
  });
}

/**
 * During the load: is this worker host reachable, and does its Ray container still run? One short command
 * (polls.ts rayWorkerWatchCommand). An unreachable host fails this activity (the workflow counts how long it
 * stays unreachable); a stopped container does not. A container docker calls running whose main process the
 * kernel no longer has is reported as not running: the node is gone either way.
 */
export async function checkRayWorker(input: {
  host: HostRef;
  container: string;
}): Promise<CheckRayWorkerResult> {
  return onHost(input.host, async (session) => {
    const host = input.host.target.name;
    const watch = rayWorkerWatchCommand(input.container);
    const out = await execSectioned(session, watch, { timeoutMs: 30_000 });
    const state = workerStateOf(out.sections.get('state'), out.sections.get('alive'), input.container, host);
    return { host, ...state };
  });
}

/** The worker watch's two sections read; an unreadable state throws as a failed `docker inspect` did. */
export function workerStateOf(
  state: ParsedSection | undefined,
  alive: ParsedSection | undefined,
  container: string,
  host: string,
): Omit<CheckRayWorkerResult, 'host'> {
  const problem =
    sectionProblem(state, 'state') ?? (state?.cut ? 'the container state line is too long' : undefined);
  if (problem || !state) {
    throw activityFailure(
      FailureType.rayContainerFailed,
      `docker inspect ${container} on ${host} cannot be read: ${problem ?? 'no state section'}`,
      false,
    );
  }
  if (state.exitCode !== 0) {
    // Read as any failed `docker inspect`: a missing container is not running; any other failure throws.
    containerStateOf({ exitCode: state.exitCode ?? 1, stdout: '', stderr: state.text }, container, host);
    return { containerRunning: false };
  }
  const [status = '', , pid] = state.text.trim().split(' ');
  const known = /^[a-z]{1,20}$/.test(status) ? status : undefined;
  const mainProcessAlive =
    alive && !sectionProblem(alive, 'alive') && /^\d{1,10}$/.test(pid ?? '') && Number(pid) > 0
      ? alive.exitCode === 0
      : undefined;
  const running = known === 'running' && mainProcessAlive !== false;
  return {
    containerRunning: running,
    ...(known
      ? { containerStatus: known === 'running' && !running ? 'running (its main process is gone)' : known }
      : {}),
    ...(mainProcessAlive !== undefined ? { mainProcessAlive } : {}),
  };
}
