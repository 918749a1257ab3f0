import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  judgeVllmFatal,
  parseVllmLogLine,
  summarizeVllmLog,
  vllmPhases,
  type VllmFatalKind,
} from '../../src/parsers/vllm-log.js';

const fixtures = new URL('../../../shared/fixtures/vllm-logs/', import.meta.url);
const readLines = (name: string) =>
  readFileSync(new URL(name, fixtures), 'utf8')
    .split('\n')
    .filter((l) => l !== '');
const healthy = readLines('healthy-start.log');
const fatal = readLines('fatal.txt');

// One entry per line of healthy-start.log, in file order.
const expectedPhases = [
  'starting', // vLLM API server version
  'waiting_placement', // Using the existing placement group
  'loading_weights', // Starting to load model
  'loading_weights', // shards 0/39
  'loading_weights', // 1/39
  'loading_weights', // 20/39
  'loading_weights', // 39/39
  'weights_loaded', // Loading weights took
  'weights_loaded', // Model loading took
  'profiling', // torch.compile and initial profiling run
  'profiling', // Available KV cache memory
  'profiling', // GPU KV cache size
  'capturing_graphs', // Capturing CUDA graphs (mixed prefill-decode)
  'capturing_graphs', // Capturing CUDA graphs (decode)
  'capturing_graphs', // Graph capturing finished
  'starting_api', // init engine took
  'starting_api', // Starting vLLM API server
  'starting_api', // Route: /health
  'starting_api', // Started server process
  'starting_api', // Waiting for application startup
  'ready', // Application startup complete
];

// One entry per line of fatal.txt, in file order.
const expectedFatal: VllmFatalKind[] = [
  'ray_oom',
  'placement_group',
  'insufficient_gpus',
  'gpu_memory',
  'no_kv_cache',
  'engine_init',
  'engine_timeout',
  'traceback',
];

const workerPrefix = '(RayWorkerWrapper pid=6330, ip=192.168.200.12) ';

describe('parseVllmLogLine on healthy-start.log', () => {
  it('gives every line its phase, and the phases never go back', () => {
    assert.equal(healthy.length, expectedPhases.length);
    const phases = healthy.map((line) => parseVllmLogLine(line).phase);
    assert.deepEqual(phases, expectedPhases);
    const order = phases.map((p) => vllmPhases.indexOf(p ?? 'starting'));
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a - b),
    );
    assert.ok(healthy.every((line) => parseVllmLogLine(line).fatal === undefined));
  });

  it('reads shard progress and tqdm timing', () => {
    const shards = healthy.filter((l) => l.includes('checkpoint shards')).map((l) => parseVllmLogLine(l));
    assert.deepEqual(
      shards.map((s) => s.shard),
      [
        { done: 0, total: 39, percent: 0 },
        { done: 1, total: 39, percent: 3 },
        { done: 20, total: 39, percent: 51 },
        { done: 39, total: 39, percent: 100 },
      ],
    );
    assert.deepEqual(
      shards.map((s) => [s.elapsedS, s.etaS, s.secPerIt]),
      [
        [0, undefined, undefined],
        [18, 684, 18.01],
        [360, 342, 18.02],
        [702, 0, 18.01],
      ],
    );
  });

  it('reads CUDA graph capture progress, converting it/s to s/it', () => {
    const line = healthy.find((l) => l.includes('mixed prefill-decode')) ?? '';
    const parsed = parseVllmLogLine(line);
    assert.deepEqual(parsed.graphs, { done: 67, total: 67 });
    assert.equal(parsed.elapsedS, 21);
    assert.ok(Math.abs((parsed.secPerIt ?? 0) - 1 / 3.1) < 1e-9);
  });

  it('strips the Ray worker prefix and reports where the line came from', () => {
    const line = healthy[2] ?? '';
    const parsed = parseVllmLogLine(workerPrefix + line);
    assert.equal(parsed.text, line);
    assert.equal(parsed.phase, 'loading_weights');
    assert.deepEqual(parsed.source, { actor: 'RayWorkerWrapper', pid: 6330, ip: '192.168.200.12' });
  });

  it('takes the last state of a tqdm bar rewritten with \\r, and ignores colour codes', () => {
    const [, first, second] = healthy.filter((l) => l.includes('checkpoint shards'));
    const parsed = parseVllmLogLine(`\x1b[36m${first}\r${second}\x1b[0m`);
    assert.deepEqual(parsed.shard, { done: 20, total: 39, percent: 51 });
  });
});

describe('parseVllmLogLine on fatal.txt', () => {
  it('classifies every line', () => {
    assert.equal(fatal.length, expectedFatal.length);
    assert.deepEqual(
      fatal.map((line) => parseVllmLogLine(line).fatal?.kind),
      expectedFatal,
    );
    for (const line of fatal) assert.equal(parseVllmLogLine(line).phase, 'failed');
  });

  it('classifies them the same behind a worker prefix, keeping the cause text', () => {
    for (const [i, line] of fatal.entries()) {
      const parsed = parseVllmLogLine(workerPrefix + line);
      assert.equal(parsed.fatal?.kind, expectedFatal[i]);
      assert.equal(parsed.fatal?.line, line);
    }
  });

  it('a short placement-group wait is a phase, a long one is fatal (threshold configurable)', () => {
    const long = fatal.find((l) => l.startsWith('Waiting for creating a placement group')) ?? '';
    const short = long.replace('for 60 seconds', 'for 10 seconds');
    assert.notEqual(short, long);
    assert.equal(parseVllmLogLine(short).fatal, undefined);
    assert.equal(parseVllmLogLine(short).phase, 'waiting_placement');
    assert.equal(parseVllmLogLine(long, { placementWaitFatalS: 120 }).fatal, undefined);
    assert.equal(parseVllmLogLine(short, { placementWaitFatalS: 5 }).fatal?.kind, 'placement_group');
  });

  it('catches CUDA OOM and any uncaught exception', () => {
    assert.equal(
      parseVllmLogLine('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB').fatal?.kind,
      'cuda_oom',
    );
    assert.equal(parseVllmLogLine('KeyError: model.layers.3.mlp').fatal?.kind, 'other');
    assert.equal(parseVllmLogLine('INFO 04-19 17:09:01 [x.py:1] no Error: here').fatal, undefined);
  });
});

describe('summarizeVllmLog', () => {
  it('follows healthy-start.log prefix by prefix to ready', () => {
    const seen = healthy.map((_, i) => summarizeVllmLog(healthy.slice(0, i + 1)).phase);
    assert.deepEqual(seen, expectedPhases);
    const done = summarizeVllmLog(healthy);
    assert.equal(done.phase, 'ready');
    assert.deepEqual(done.shard, { done: 39, total: 39, percent: 100 });
    assert.equal(done.fatal, undefined);
  });

  it('mid-load: shard progress with ETA', () => {
    const upToHalf = healthy.slice(0, healthy.findIndex((l) => l.includes('20/39')) + 1);
    assert.deepEqual(summarizeVllmLog(upToHalf), {
      phase: 'loading_weights',
      shard: { done: 20, total: 39, percent: 51 },
      elapsedS: 360,
      etaS: 342,
      secPerIt: 18.02,
    });
  });

  it('a lagging worker line does not move the phase back', () => {
    const lines = [...healthy.slice(0, 10), workerPrefix + (healthy[2] ?? '')];
    assert.equal(summarizeVllmLog(lines).phase, 'profiling');
  });

  it('each fatal line fails a healthy-looking log, reporting the specific cause after a Traceback', () => {
    for (const [i, line] of fatal.entries()) {
      const summary = summarizeVllmLog([...healthy.slice(0, 6), line, ...healthy.slice(6)]);
      assert.equal(summary.phase, 'failed');
      assert.equal(summary.fatal?.kind, expectedFatal[i]);
    }
    const traceback = fatal.find((l) => l.startsWith('Traceback')) ?? '';
    const cause = fatal.find((l) => l.includes('No available memory for the cache blocks')) ?? '';
    const summary = summarizeVllmLog([
      ...healthy.slice(0, 12),
      traceback,
      '  File "x.py", line 1, in <module>',
      cause,
    ]);
    assert.deepEqual(summary.fatal, { line: cause, kind: 'no_kv_cache' });
  });
});

describe('tracebacks that vLLM logs (vLLM 0.32, CPU build, a truncated safetensors shard)', () => {
  // Lines as the real server printed them: the worker's traceback comes first, through vLLM's logger at ERROR,
  // then the engine core's wrapper errors.
  const worker = '(Worker pid=8357) ERROR 12-03 13:45:51 [multiproc_executor.py:953] ';
  const core = '(EngineCore pid=8198) ERROR 12-03 13:45:53 [core.py:1510] ';
  const cause =
    'safetensors._safetensors_rust.SafetensorError: Error while deserializing header: incomplete metadata, file not fully covered';
  const log = [
    'Loading safetensors checkpoint shards:  50% Completed | 8/16 [00:00<00:00, 1541.53it/s]',
    `${worker}WorkerProc failed to start.`,
    `${worker}Traceback (most recent call last):`,
    `${worker}  File "/v/vllm/model_executor/model_loader/weight_utils.py", line 1208, in safetensors_weights_iterator`,
    `${worker}    with safe_open(st_file, framework="pt") as f:`,
    `${worker}${cause}`,
    `${core}EngineCore failed to start.`,
    `${core}Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.`,
    'RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}',
  ];

  it("reads an exception line behind the logger's ERROR prefix as the cause", () => {
    const parsed = parseVllmLogLine(`${worker}${cause}`);
    assert.equal(parsed.fatal?.kind, 'other');
    assert.ok(parsed.fatal?.line.endsWith(cause));
  });

  it('reports the first exception, the root cause, not the wrappers after it', () => {
    const summary = summarizeVllmLog(log);
    assert.equal(summary.phase, 'failed');
    assert.equal(summary.reached, 'loading_weights');
    assert.ok(summary.fatal?.line.endsWith(cause), JSON.stringify(summary.fatal));
  });

  it('an exception named in an INFO or WARNING line is not fatal', () => {
    const text = 'ValueError: only mentioned';
    assert.equal(parseVllmLogLine(`INFO 12-03 13:45:51 [x.py:1] ${text}`).fatal, undefined);
    assert.equal(parseVllmLogLine(`(Worker pid=1) WARNING 12-03 13:45:51 [x.py:1] ${text}`).fatal, undefined);
    assert.equal(
      parseVllmLogLine(`(Worker pid=1) ERROR 12-03 13:45:51 [x.py:1] ${text}`).fatal?.kind,
      'other',
    );
  });
});

describe('phases of a real vLLM 0.32 CPU start', () => {
  it('the --enforce-eager warning that names torch.compile is no profiling phase', () => {
    const line =
      '(APIServer pid=2900) WARNING 12-03 13:41:16 [vllm.py:1703] Enforce eager set, disabling torch.compile, CUDAGraphs, and JIT kernel warmup.';
    assert.equal(parseVllmLogLine(line).phase, undefined);
    assert.equal(
      parseVllmLogLine(
        'INFO 04-19 17:21:40 [backends.py:539] torch.compile and initial profiling run took 31.20 s in total',
      ).phase,
      'profiling',
    );
  });
});

describe('judgeVllmFatal: the one failure type of a fatal line, for the Ray server and the multiproc ranks', () => {
  const fatalOf = (line: string) => {
    const found = summarizeVllmLog([line]).fatal;
    assert.ok(found, `a fatal line: ${line}`);
    return found;
  };
  const rank = { backend: 'multiproc' as const, masterAddr: '10.1.0.11', masterPort: 29599 };

  it('every line of fatal.txt fails the Ray server as ServerFatal, with the line as the message', () => {
    for (const line of fatal.filter((l) => !l.startsWith('ray.exceptions.OutOfMemoryError'))) {
      const found = fatalOf(line);
      const verdict = judgeVllmFatal(found, { backend: 'ray', memoryMonitorOff: false });
      assert.deepEqual(verdict, { type: 'ServerFatal', message: found.line }, line);
    }
  });

  it("Ray's OOM kill (fatal.txt) names the memory monitor unless ray.env turned it off", () => {
    const oom = fatalOf(fatal.find((l) => l.startsWith('ray.exceptions.OutOfMemoryError')) ?? '');
    const on = judgeVllmFatal(oom, { backend: 'ray', memoryMonitorOff: false });
    assert.equal(on.type, 'ServerFatal');
    assert.match(on.message, /\nRAY_memory_monitor_refresh_ms was not set to "0" at `ray start`/);
    assert.equal(judgeVllmFatal(oom, { backend: 'ray', memoryMonitorOff: true }).message, oom.line);
  });

  it("a rank that cannot reach rank 0's store (torch's line) is MasterUnreachable, naming the store", () => {
    const line =
      'torch.distributed.DistNetworkError: The client socket has timed out after 5000ms while trying to connect to (10.1.0.11, 29599).';
    assert.deepEqual(judgeVllmFatal(fatalOf(line), rank), {
      type: 'MasterUnreachable',
      message: `it cannot reach rank 0's store at 10.1.0.11:29599: ${line}`,
    });
  });

  it('rank 0 finding its port taken (EADDRINUSE) is MasterPortInUse, naming serve.masterPort', () => {
    const line =
      'torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29599, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use';
    assert.deepEqual(judgeVllmFatal(fatalOf(line), rank), {
      type: 'MasterPortInUse',
      message: `${line}. serve.masterPort 29599 is taken on the head: pick another.`,
    });
  });

  it("any other fatal line (fatal.txt) fails a rank as RankFailed; the Ray backend's hint is not a rank's", () => {
    for (const line of fatal) {
      const found = fatalOf(line);
      assert.deepEqual(judgeVllmFatal(found, rank), { type: 'RankFailed', message: found.line }, line);
    }
  });
});

describe("vLLM's argparse refusing the command line (bad_arguments)", () => {
  // As real vLLM 0.32 (CPU build) printed them: the parent parser reports unrecognized arguments, `vllm serve`'s
  // own parser a value it cannot convert.
  const unrecognized = 'vllm: error: unrecognized arguments: --bogus-flag --other=3 x';
  const invalidInt = "vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'x'";
  const invalidFloat =
    "vllm serve: error: argument --gpu-memory-utilization/--device-memory-utilization: invalid float value: 'z'";
  const usage = 'usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...';

  it('reads both forms (and the subparser-named unrecognized form) as bad_arguments', () => {
    for (const line of [
      unrecognized,
      'vllm serve: error: unrecognized arguments: --bogus-flag',
      invalidInt,
      invalidFloat,
      "vllm serve: error: argument --distributed-timeout-seconds: Value z cannot be converted to <class 'int'>.",
    ]) {
      assert.deepEqual(parseVllmLogLine(line).fatal, { line, kind: 'bad_arguments' }, line);
    }
    assert.equal(parseVllmLogLine(usage).fatal, undefined, 'the usage line alone is no verdict');
  });

  it('is anchored: the text quoted inside another line is not a refusal', () => {
    assert.equal(
      parseVllmLogLine("INFO 12-03 13:41:16 [x.py:1] echo 'vllm: error: unrecognized arguments: --x'").fatal,
      undefined,
    );
    assert.equal(parseVllmLogLine('some-tool: error: unrecognized arguments: --x').fatal, undefined);
  });

  it('names the refused arguments and serve.args, as ServerFatal on either backend', () => {
    const summary = summarizeVllmLog([usage, unrecognized]);
    assert.equal(summary.phase, 'failed');
    assert.ok(summary.fatal);
    const owners = [
      { backend: 'ray' as const, memoryMonitorOff: true },
      { backend: 'multiproc' as const, masterAddr: '10.1.0.11', masterPort: 29599 },
    ];
    for (const owner of owners) {
      const verdict = judgeVllmFatal(summary.fatal, owner);
      assert.equal(verdict.type, 'ServerFatal', owner.backend);
      assert.equal(
        verdict.message,
        `${unrecognized}\nvllm serve refused its arguments (--bogus-flag --other=3 x): fix serve.args in the spec, or the spec field that rendered the flag (serve.port, serve.tensorParallelSize, serve.servedModelName).`,
      );
    }
    const invalid = judgeVllmFatal({ line: invalidInt, kind: 'bad_arguments' }, owners[0]!);
    assert.match(invalid.message, /refused its arguments \(--tensor-parallel-size\/-tp\): fix serve\.args/);
  });

  it('stays linear on a long hostile line', () => {
    const hostile = `vllm: error: argument ${'--x/'.repeat(20_000)}${': '.repeat(20_000)}`;
    const started = performance.now();
    const fatal = parseVllmLogLine(hostile).fatal;
    assert.equal(fatal?.kind, 'bad_arguments');
    judgeVllmFatal(fatal, { backend: 'ray', memoryMonitorOff: true });
    assert.ok(performance.now() - started < 200, 'parsed in linear time');
  });
});
