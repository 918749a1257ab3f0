// vLLM server log → load phase, shard progress and fatal errors. The health loop uses this to tell
// "still loading" from "dead": the API port refuses connections during the whole load, so the log is
// the only progress signal. Lines are cut to a few KB before any pattern runs, and every pattern here runs in
// linear time: a serve log is whatever the host's processes print. judgeVllmFatal is the one mapping of a fatal
// line to a failure type, for the Ray server's load and for the multiproc ranks' start and load alike.
import { FailureType, type FailureTypeName } from '../shared/failures.js';
import { cutLine } from './host-output.js';

export const vllmPhases = [
  'starting',
  'waiting_placement',
  'loading_weights',
  'weights_loaded',
  'profiling',
  'capturing_graphs',
  'starting_api',
  'ready',
  'failed',
] as const;
export type VllmPhase = (typeof vllmPhases)[number];

export interface VllmFatal {
  line: string;
  kind: VllmFatalKind;
}

/** How far the load got and how fast it goes, as one line or a run of lines shows it. */
export interface VllmLoadProgress {
  shard?: { done: number; total: number; percent: number };
  graphs?: { done: number; total: number };
  elapsedS?: number;
  etaS?: number;
  secPerIt?: number;
  fatal?: VllmFatal;
}

export interface VllmLogLine extends VllmLoadProgress {
  /** The line without its Ray prefix and colour codes. */
  text: string;
  /** Ray's prefix: its actor (`RayWorkerWrapper`, `EngineCore_DP0`, … when it names one), pid and ip. */
  source?: { actor?: string; pid: number; ip?: string };
  phase?: VllmPhase;
}

export interface VllmLogSummary extends VllmLoadProgress {
  phase: VllmPhase;
  /** When `phase` is `failed`: the furthest phase these lines showed before the failure. */
  reached?: VllmPhase;
}

export interface VllmLogOptions {
  /**
   * vLLM logs "Waiting for creating a placement group … for N seconds" with growing N while Ray cannot
   * place the workers; in a cluster already verified by `ray status` a wait this long means it never will
   * (typically VLLM_HOST_IP differs from the Ray node IP). Below it the line is only the waiting phase.
   */
  placementWaitFatalS?: number;
}

// `(RayWorkerWrapper pid=6330, ip=192.168.200.12) `, `(EngineCore_DP0 pid=412) `, `(pid=88) `
const rayPrefix = /^\((?:([A-Za-z_][\w.:-]*)\s+)?pid=(\d+)(?:,\s*ip=([^)\s]+))?\)\s*/;
// eslint-disable-next-line no-control-regex
const ansi = /\x1b\[[0-9;?]*[A-Za-z]/g;
// Anchored at the bracket, found with lastIndexOf: a leading `\s*` would retry at every blank of a long run.
const repeated = /^\[repeated \d+x across cluster\]\s*$/;

/** Drops Ray's trailing `[repeated 3x across cluster]`. Exported for the linear-time test, which runs it uncut. */
export function withoutRepeatNote(text: string): string {
  const at = text.lastIndexOf('[repeated ');
  if (at < 0 || !repeated.test(text.slice(at))) return text;
  return text.slice(0, at).trimEnd();
}
// `INFO 12-03 13:41:16 [api_utils.py:347] ` (level, month-day, time, source file and line)
const vllmLoggerPrefix =
  /^(DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[^\]]*\] /;

function clock(text: string): number | undefined {
  if (text === '?' || text === '') return undefined;
  const parts = text.split(':').map(Number);
  if (parts.some((p) => !Number.isFinite(p))) return undefined;
  return parts.reduce((total, part) => total * 60 + part, 0);
}

/** tqdm's `[elapsed<eta, rate]`: rate is `18.01s/it` or `3.10it/s` (or `?it/s` before the first step). */
function tqdmTiming(text: string): Timing {
  const match = /\[([\d:?]+)<([\d:?]+),\s*([\d.?]+)\s*(s\/it|it\/s)\]/.exec(text);
  if (!match?.[1] || !match[2] || !match[3] || !match[4]) return {};
  const rate = Number(match[3]);
  let secPerIt: number | undefined;
  if (Number.isFinite(rate) && rate > 0) secPerIt = match[4] === 's/it' ? rate : 1 / rate;
  return timing({ elapsedS: clock(match[1]), etaS: clock(match[2]), secPerIt });
}

type Timing = Pick<VllmLoadProgress, 'elapsedS' | 'etaS' | 'secPerIt'>;

/** The figures that are known: a line or a summary never holds a timing key set to undefined. */
function timing({ elapsedS, etaS, secPerIt }: Timing): Timing {
  const figures = Object.entries({ elapsedS, etaS, secPerIt }).filter(([, v]) => v !== undefined);
  return Object.fromEntries(figures);
}

// Specific causes first: the final line of a traceback often also matches the generic exception pattern.
const fatalPatterns = [
  // argparse refusing the command line (exit status 2, before anything starts): `vllm: error: unrecognized
  // arguments: --bogus-flag` (the parent parser prints that one), `vllm serve: error: argument --port: invalid int
  // value: 'x'` and the like. No other line of a serve log starts with the program's name and `: error: `.
  [/^vllm(?: serve)?: error: (?:unrecognized arguments: |argument )/, 'bad_arguments'],
  [/ray\.exceptions\.OutOfMemoryError|Task was killed due to the node running low on memory/, 'ray_oom'],
  [/Cannot provide a placement group/, 'placement_group'],
  [/number of required GPUs exceeds the total number of available GPUs/, 'insufficient_gpus'],
  [/Free memory on device .* is less than desired GPU memory utilization/, 'gpu_memory'],
  [/No available memory for the cache blocks/, 'no_kv_cache'],
  [/Engine core initialization failed|EngineCore failed to start/, 'engine_init'],
  [/Timed out waiting for engine core processes to start/, 'engine_timeout'],
  // vLLM's multi-node mode: torch's store, on a rank that cannot reach rank 0, and on rank 0 itself.
  [/The client socket has timed out after \d+ms while trying to connect to/, 'master_unreachable'],
  // The same once --distributed-timeout-seconds is spent, when the last try's error was not a refusal (the
  // network unreachable, real vLLM in test/real/real-multinode). Only the raised exception's line: torch's
  // retries print the same text without the exception's name, and a headless rank retries until rank 0 listens.
  [
    /DistNetworkError: The client socket has failed to connect to any network address of/,
    'master_unreachable',
  ],
  [/The server socket has failed to listen on any local network address/, 'master_port_in_use'],
  [/Timed out after \d+ seconds waiting for clients/, 'ranks_missing'],
  [/CUDA out of memory|(?:torch\.(?:cuda\.)?)OutOfMemoryError/, 'cuda_oom'],
  [/^Traceback \(most recent call last\):/, 'traceback'],
  // The last line of an uncaught exception: `SomeError: message` at the start of the line.
  [/^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception): /, 'other'],
] as const;

export type VllmFatalKind = (typeof fatalPatterns)[number][1];

const phasePatterns: Array<[RegExp, VllmPhase]> = [
  [/Application startup complete/, 'ready'],
  [
    /init engine \(profile, create kv cache, warmup model\) took|Starting vLLM API server|Route: \/|Started server process|Waiting for application startup|Available routes are/,
    'starting_api',
  ],
  [/Capturing CUDA graphs|Graph capturing finished|Capturing cudagraphs/, 'capturing_graphs'],
  [
    /torch\.compile\b.*\btook|torch\.compile takes|initial profiling run|Memory profiling takes|Available KV cache memory|GPU KV cache size|Maximum concurrency for|Dynamo bytecode transform|Compiling a graph|# GPU blocks:/,
    'profiling',
  ],
  [/Loading weights took|Model loading took/, 'weights_loaded'],
  [
    /Starting to load model|Loading safetensors checkpoint shards|Loading weights with|Using model weights format/,
    'loading_weights',
  ],
  [/placement group|Waiting for creating a placement group/, 'waiting_placement'],
  [
    /vLLM API server version|Initializing a V1 LLM engine|Initializing an LLM engine|non-default args/,
    'starting',
  ],
];

/**
 * A tqdm bar rewrites itself with \r: the last non-blank segment is the current state, the segment that holds
 * the line's last non-blank character (\r is a blank too, so one scan finds it however many there are).
 */
function lastSegment(line: string): string {
  const last = line.trimEnd().length - 1;
  if (last < 0) return '';
  const end = line.indexOf('\r', last);
  return line.slice(line.lastIndexOf('\r', last) + 1, end < 0 ? line.length : end);
}

export function parseVllmLogLine(
  raw: string,
  { placementWaitFatalS = 60 }: VllmLogOptions = {},
): VllmLogLine {
  let text = cutLine(lastSegment(raw)).replace(ansi, '').trimEnd();
  const prefix = rayPrefix.exec(text);
  const source = prefix && { actor: prefix[1], pid: Number(prefix[2]), ip: prefix[3] };
  text = withoutRepeatNote(prefix ? text.slice(prefix[0].length) : text);
  const result: VllmLogLine = { text, ...(source ? { source } : {}) };

  const placementWait = /Waiting for creating a placement group of specs for (\d+) seconds/.exec(text);
  if (placementWait?.[1] && Number(placementWait[1]) >= placementWaitFatalS) {
    return { ...result, phase: 'failed', fatal: { line: text, kind: 'placement_group' } };
  }
  // vLLM's own logger puts `ERROR 12-03 13:45:51 [file.py:953] ` before each line of a traceback it logs (a
  // worker process's, say): behind that prefix the traceback's lines are read as if they began the line.
  const logged = vllmLoggerPrefix.exec(text);
  const subject = logged?.[1] === 'ERROR' || logged?.[1] === 'CRITICAL' ? text.slice(logged[0].length) : text;
  const fatal = fatalPatterns.find(([pattern]) => pattern.test(subject));
  if (fatal) return { ...result, phase: 'failed', fatal: { line: text, kind: fatal[1] } };

  const phase = phasePatterns.find(([pattern]) => pattern.test(text))?.[1];
  if (phase) result.phase = phase;

  const shard = /Loading safetensors checkpoint shards:\s*(\d+)% Completed \|\s*(\d+)\/(\d+)/.exec(text);
  if (shard?.[1] && shard[2] && shard[3]) {
    result.shard = { percent: Number(shard[1]), done: Number(shard[2]), total: Number(shard[3]) };
  }
  const graphs = cudaGraphsCount(text);
  if (graphs) result.graphs = graphs;
  if (result.shard || result.graphs) Object.assign(result, tqdmTiming(text));
  return result;
}

/**
 * The `n/N` of a `Capturing CUDA graphs` bar: the first `n/N [` after the title. A count starts where no digit
 * precedes it, so each run of digits is tried once (`.*?(\d+)` retried every suffix of every run). Exported for
 * the linear-time test, which runs it on a line longer than the cut.
 */
export function cudaGraphsCount(text: string): { done: number; total: number } | undefined {
  const at = text.indexOf('Capturing CUDA graphs');
  const graphs = at < 0 ? null : /(?<!\d)(\d+)\/(\d+)\s*\[/.exec(text.slice(at));
  if (!graphs?.[1] || !graphs[2]) return undefined;
  return { done: Number(graphs[1]), total: Number(graphs[2]) };
}

// How much a fatal line tells: a named cause (3) beats an exception line, which beats vLLM's "Engine core
// initialization failed. See root cause above." and a bare Traceback header.
const lessTelling: Partial<Record<VllmFatalKind, number>> = { traceback: 0, engine_init: 1, other: 2 };
const fatalRank = (kind: VllmFatalKind) => lessTelling[kind] ?? 3;

/**
 * Folds a log into where the load stands. The phase only moves forward (worker lines may lag the head);
 * a fatal line makes it `failed` for good. The reported fatal is the most specific one seen: a Traceback
 * header is followed by the line that names the cause.
 */
export function summarizeVllmLog(lines: readonly string[], opts: VllmLogOptions = {}): VllmLogSummary {
  let phaseIndex = 0;
  let summary: VllmLogSummary = { phase: 'starting' };
  const failedIndex = vllmPhases.indexOf('failed');
  for (const line of lines.flatMap((l) => l.split('\n'))) {
    const parsed = parseVllmLogLine(line, opts);
    if (parsed.fatal) {
      if (phaseIndex !== failedIndex) summary = { ...summary, reached: vllmPhases[phaseIndex] ?? 'starting' };
      phaseIndex = failedIndex;
      if (!summary.fatal || fatalRank(parsed.fatal.kind) > fatalRank(summary.fatal.kind)) {
        summary = { ...summary, fatal: parsed.fatal };
      }
    } else if (parsed.phase && phaseIndex !== failedIndex) {
      phaseIndex = Math.max(phaseIndex, vllmPhases.indexOf(parsed.phase));
    }
    const { shard, graphs } = parsed;
    if (shard || graphs) {
      // Timing belongs to whichever bar moved last; drop the previous bar's figures first.
      const { elapsedS: _e, etaS: _t, secPerIt: _s, ...rest } = summary;
      summary = { ...rest, ...(shard ? { shard } : {}), ...(graphs ? { graphs } : {}), ...timing(parsed) };
    }
  }
  return { ...summary, phase: vllmPhases[phaseIndex] ?? 'starting' };
}

/** Whose log it is: the Ray backend's one server, or a multiproc rank (whose store is rank 0's, at `master`). */
export type VllmLogOwner =
  | { backend: 'ray'; /** ray.env sets RAY_memory_monitor_refresh_ms to "0" */ memoryMonitorOff: boolean }
  | { backend: 'multiproc'; masterAddr: string; masterPort: number | undefined };

/**
 * What vLLM's argparse refused, from its error line: the unrecognized arguments as given (space-joined, as
 * argparse joins them), or the one option whose value it could not read (`--port`, `--tensor-parallel-size/-tp`).
 */
export function refusedArguments(line: string): string {
  const unrecognized = 'unrecognized arguments: ';
  const at = line.indexOf(unrecognized);
  if (at >= 0) return line.slice(at + unrecognized.length).trim();
  // `argument --x/-y: why`: the option strings run up to the first `: ` after `argument `.
  const argument = line.indexOf('argument ');
  const rest = argument < 0 ? '' : line.slice(argument + 'argument '.length);
  const end = rest.indexOf(': ');
  return end < 0 ? rest : rest.slice(0, end);
}

/** The one verdict on a fatal log line: its failure type, and the line with what to do about it. */
export function judgeVllmFatal(
  fatal: VllmFatal,
  owner: VllmLogOwner,
): { type: FailureTypeName; message: string } {
  // The spec's command line is wrong, whichever backend ran it and on whichever rank: no retry or other host helps.
  if (fatal.kind === 'bad_arguments') {
    return {
      type: FailureType.serverFatal,
      message: `${fatal.line}\nvllm serve refused its arguments (${refusedArguments(fatal.line)}): fix serve.args in the spec, or the spec field that rendered the flag (serve.port, serve.tensorParallelSize, serve.servedModelName).`,
    };
  }
  if (owner.backend === 'ray') {
    const hint =
      fatal.kind === 'ray_oom' && !owner.memoryMonitorOff
        ? '\nRAY_memory_monitor_refresh_ms was not set to "0" at `ray start`: Ray\'s memory monitor killed the worker. Set it in ray.env.'
        : '';
    return { type: FailureType.serverFatal, message: `${fatal.line}${hint}` };
  }
  const port = owner.masterPort ?? '?';
  if (fatal.kind === 'master_unreachable') {
    return {
      type: FailureType.masterUnreachable,
      message: `it cannot reach rank 0's store at ${owner.masterAddr}:${port}: ${fatal.line}`,
    };
  }
  if (fatal.kind === 'master_port_in_use') {
    return {
      type: FailureType.masterPortInUse,
      message: `${fatal.line}. serve.masterPort ${port} is taken on the head: pick another.`,
    };
  }
  return { type: FailureType.rankFailed, message: fatal.line };
}
