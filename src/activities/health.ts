// One poll of a loading or running vLLM server: is the process alive, is its container up, what did the
// log say since the last poll, and do /health and /v1/models answer. The workflow loops with timers and
// decides; this activity only observes.
import { summarizeVllmLog } from '../parsers/vllm-log.js';
import type { SshSession } from '../ssh/executor.js';
import {
  baseUrl,
  maxLogChunkBytes,
  serveTailLines as tailLines,
  fileSizeCommand,
  healthCommand,
  logChunkCommand,
  serveLogTailCommand,
  modelsCommand,
} from '../host-commands/launch.js';
import { redactText, secretEnvValues } from '../shared/secrets.js';
import { inspectContainer } from './docker.js';
import { pidAlive } from './serve.js';
import { onHost } from './ssh-context.js';
import { resolveValue, secretValues } from './secrets.js';
import type {
  CheckRayWorkerInput,
  CheckRayWorkerResult,
  CheckServeInput,
  CheckServeResult,
} from './types.js';

export { baseUrl, maxLogChunkBytes } from '../host-commands/launch.js';

export interface LogChunk {
  /** Complete lines read (a tqdm bar's `\r` segments stay in their line). */
  lines: string[];
  /** The offset to read from next time. */
  nextOffset: number;
  /** The file is smaller than the offset: it was replaced or truncated, and was read from the start. */
  restarted: boolean;
}

/**
 * Reads the log from `offset`, in bytes: the offset counts the file's bytes, so it must advance by the bytes
 * consumed, never by the length of decoded text (invalid UTF-8 decodes to a replacement character of another
 * size). Only up to the last line end is consumed: a line still being written is read whole on the next
 * poll. A chunk with no line end at all (one huge line) is consumed as it is. Lines are decoded after the
 * split, so a bad byte spoils at most its own line.
 */
export async function readLogFrom(session: SshSession, logPath: string, offset: number): Promise<LogChunk> {
  const size = await session.exec(fileSizeCommand(logPath), { timeoutMs: 10_000, check: false });
  const fileBytes = size.exitCode === 0 ? Number(size.stdout.trim()) : NaN;
  if (!Number.isSafeInteger(fileBytes) || fileBytes < 0)
    return { lines: [], nextOffset: offset, restarted: false };
  const restarted = fileBytes < offset;
  const from = restarted ? 0 : offset;
  if (fileBytes === from) return { lines: [], nextOffset: from, restarted };
  const res = await session.exec(logChunkCommand(logPath, from, maxLogChunkBytes), {
    timeoutMs: 30_000,
    check: false,
    stdoutBytes: true,
  });
  const bytes = res.stdoutBytes ?? Buffer.alloc(0);
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

async function probeHealth(session: SshSession, url: string): Promise<CheckServeResult['health']> {
  const res = await session.exec(healthCommand(url), { timeoutMs: 15_000, check: false });
  if (curlRefused.has(res.exitCode)) return 'refused';
  if (res.exitCode === 0 && res.stdout.trim() === '200') return 'ok';
  return 'error';
}

interface ModelList {
  data?: Array<{ id?: unknown; root?: unknown }>;
}

/** curl reads this header line from stdin (`-H @-`): the key never appears on a command line. */
export function authorizationHeader(apiKey: string | undefined): string {
  return apiKey ? `Authorization: Bearer ${apiKey}\n` : '';
}

async function modelListed(
  session: SshSession,
  url: string,
  model: string,
  apiKey: string | undefined,
): Promise<boolean> {
  const res = await session.exec(modelsCommand(url), {
    timeoutMs: 15_000,
    check: false,
    stdin: authorizationHeader(apiKey),
    secrets: apiKey ? [apiKey] : [],
  });
  if (res.exitCode !== 0) return false;
  try {
    const list = JSON.parse(res.stdout) as ModelList;
    return (list.data ?? []).some((m) => m.id === model || m.root === model);
  } catch {
    return false;
  }
}

export async function checkServeHealth(input: CheckServeInput): Promise<CheckServeResult> {
  return onHost(input.head, async (session) => {
    const processAlive = await pidAlive(session, input.pid);
    const container = await inspectContainer(session, input.container);
    const secrets = [
      ...(await secretValues(...(input.secretEnv ?? []))),
      ...secretEnvValues(
        Object.fromEntries(
          container.env.map((kv) => {
            const eq = kv.indexOf('=');
            return [eq < 0 ? kv : kv.slice(0, eq), eq < 0 ? '' : kv.slice(eq + 1)];
          }),
        ),
      ),
    ];
    const chunk = await readLogFrom(session, input.logPath, input.logOffset);
    const tailRes = await session.exec(serveLogTailCommand(input.logPath, tailLines), {
      timeoutMs: 15_000,
      check: false,
    });
    const tail = redactText(tailRes.stdout, secrets)
      .split('\n')
      .map((l) => l.trimEnd())
      .filter((l) => l !== '');
    const url = baseUrl(input.clusterIp, input.port);
    const health = await probeHealth(session, url);
    const apiKey = await resolveValue('serve.env.VLLM_API_KEY', input.apiKey);
    const listed = health === 'ok' ? await modelListed(session, url, input.model, apiKey) : false;
    const summary = chunk.lines.length > 0 ? summarizeVllmLog(chunk.lines) : undefined;
    if (summary?.fatal) summary.fatal = { ...summary.fatal, line: redactText(summary.fatal.line, secrets) };
    return {
      processAlive,
      containerRunning: container.running,
      logOffset: chunk.nextOffset,
      logGrew: chunk.lines.length > 0 || chunk.nextOffset !== input.logOffset,
      ...(summary ? { summary } : {}),
      tail,
      health,
      modelListed: listed,
    };
  });
}

/**
 * During the load: is this worker host reachable, and does its Ray container still run? An unreachable host
 * fails this activity (the workflow counts how long it stays unreachable); a stopped container does not.
 */
export async function checkRayWorker(input: CheckRayWorkerInput): Promise<CheckRayWorkerResult> {
  return onHost(input.host, async (session) => {
    const container = await inspectContainer(session, input.container);
    return {
      host: input.host.target.name,
      containerRunning: container.running,
      ...(container.status ? { containerStatus: container.status } : {}),
    };
  });
}
