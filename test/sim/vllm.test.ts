// The simulated `vllm serve` on a two-node simulated Ray cluster: placement groups, load pacing and log
// formats, a port that refuses while loading, the OpenAI endpoints, GPU memory on both hosts, and faults.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { liveGpuProcesses, readJson, registerGpuProcess, writeFaults } from '../../sim/host-state.js';
import {
  eventually,
  killRayProcs,
  type Background,
  type SimToolResult as RunResult,
  noRunningRay,
  useRaySimTools,
} from '../helpers/sim-host.js';

const SHARDS = 4;

const port = 17500 + Math.floor(Math.random() * 1000);

const vllmPace = { shards: SHARDS, shardSeconds: 0.15, graphCaptureSeconds: 0.3, memoryMiB: 2048 };
const { run, background, children, makeHost } = useRaySimTools('liftoff-vllm-test-', vllmPace);

const SHARD_LINE =
  /^Loading safetensors checkpoint shards: +(\d+)% Completed \| (\d+)\/(\d+) \[\d\d:\d\d<(\?|\d\d:\d\d), (\?it\/s|[\d.]+s\/it|[\d.]+it\/s)\]$/;
const ENGINE_FAILED =
  'RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}';
const apiPort = 20000 + Math.floor(Math.random() * 5000);
/** `vllm serve` of a model split over both nodes' GPUs through Ray, as the fault cases run it. */
const tp2OverRay = ['m', '--port', String(apiPort), '-tp', '2', '--distributed-executor-backend', 'ray'];
const masterPort = 26000 + Math.floor(Math.random() * 1000);
/** Rank `rank` of vLLM's own two-node mode (no Ray, tp 2: one worker a node), rank 0's store on 127.0.1.4. */
const rankOf2 = (rank: number, extra: string[] = []): string[] => [
  'm',
  '--port',
  String(apiPort),
  '-tp',
  '2',
  '--nnodes',
  '2',
  '--node-rank',
  String(rank),
  '--master-addr',
  '127.0.1.4',
  '--master-port',
  String(masterPort),
  ...(rank > 0 ? ['--headless'] : []),
  ...extra,
];

function refused(ip: string, p: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: ip, port: p });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

function shardLines(output: string): number[] {
  return output
    .split('\n')
    .map((l) => SHARD_LINE.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[2]));
}

/** Lines of a host's launches.log; 0 before the first launch. */
function hostLogLineCount(path: string): number {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('simulated vllm', () => {
  const headHost = makeHost('head', '127.0.1.1');
  const workerHost = makeHost('worker', '127.0.1.2');
  const loneHost = makeHost('lone', '127.0.1.3');
  const bareHost = makeHost('bare', '127.0.1.4');
  const launches = new Map<string, number>();
  let workerRayPid = 0;

  function serve(dir: string, args: string[], extra: Record<string, string> = {}): Background {
    launches.set(dir, (launches.get(dir) ?? 0) + 1);
    return background(dir, 'vllm', ['serve', ...args], extra);
  }

  async function serveToExit(
    dir: string,
    args: string[],
    extra: Record<string, string> = {},
  ): Promise<RunResult> {
    launches.set(dir, (launches.get(dir) ?? 0) + 1);
    return run(dir, 'vllm', ['serve', ...args], extra);
  }

  async function gpuUsedGb(): Promise<string> {
    return (await run(headHost, 'ray', ['status'])).stdout.split('\n').find((l) => l.endsWith(' GPU')) ?? '';
  }

  before(async () => {
    const headRay = background(headHost, 'ray', ['start', '--head', '--block', '--port', String(port)]);
    const loneRay = background(loneHost, 'ray', ['start', '--head', '--block', '--port', String(port)], {
      RAY_memory_monitor_refresh_ms: '0',
    });
    await Promise.all([headRay.waitFor(/Ray runtime started\./), loneRay.waitFor(/Ray runtime started\./)]);
    const workerRay = background(workerHost, 'ray', ['start', '--block', '--address', `127.0.1.1:${port}`]);
    await workerRay.waitFor(/Ray runtime started\./);
    workerRayPid = workerRay.child.pid ?? 0;
  });

  after(() => {
    killRayProcs([headHost, workerHost, loneHost, bareHost]);
  });

  it('fails with Ray ConnectionError when no Ray head runs', async () => {
    const result = await serveToExit(bareHost, ['some/model', '--distributed-executor-backend', 'ray']);
    assert.equal(result.code, 1);
    assert.ok(result.stdout.includes(noRunningRay), result.stdout);
    assert.doesNotMatch(result.stdout, /Loading safetensors/);
  });

  it('refuses arguments it does not know as argparse does: exit 2 before it records, joins or holds anything', async () => {
    const launchLines = () => hostLogLineCount(join(headHost, 'launches.log'));
    const before = {
      launches: launchLines(),
      gpus: liveGpuProcesses(headHost).length,
      status: await gpuUsedGb(),
    };
    // Over Ray, as liftoff launches it: the refusal comes before the placement group.
    const refused = await run(headHost, 'vllm', [
      'serve',
      ...tp2OverRay,
      '--bogus-flag',
      '--max_model_len',
      '256',
      '--other=3',
      'x',
    ]);
    assert.deepEqual(
      [refused.code, refused.stdout, refused.stderr],
      [
        2,
        '',
        'usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\nvllm: error: unrecognized arguments: --bogus-flag --other=3 x\n',
      ],
      'every unknown argument, space-joined in order; --max_model_len is --max-model-len to vLLM',
    );
    const invalid = await run(headHost, 'vllm', ['serve', 'm', '-tp', 'two', '--bogus-flag']);
    assert.deepEqual(
      [invalid.code, invalid.stderr],
      [
        2,
        "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'two'\n",
      ],
      "a value its type refuses comes first, from `vllm serve`'s own parser",
    );
    // vLLM 0.32 has no --task (--runner and --convert say what a model is run for) and says so.
    const task = await run(headHost, 'vllm', ['serve', 'BAAI/bge-m3', '--task', 'embed']);
    assert.deepEqual(
      [task.code, task.stderr],
      [
        2,
        'usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\nvllm: error: unrecognized arguments: --task embed\n\nHint: --task is not a vllm serve option. For embedding, reranking, or reward models, use --runner pooling. To adapt a generative model for pooling, also use --convert embed, --convert classify, or --convert reward.\n',
      ],
    );
    const runner = await run(headHost, 'vllm', ['serve', 'm', '--runner', 'bogus']);
    assert.deepEqual(
      [runner.code, runner.stderr],
      [
        2,
        "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --runner: invalid choice: 'bogus' (choose from 'auto', 'draft', 'generate', 'pooling')\n",
      ],
    );
    assert.equal(launchLines(), before.launches, 'no launches.log line');
    assert.equal(liveGpuProcesses(headHost).length, before.gpus, 'no GPU memory held');
    assert.equal(await gpuUsedGb(), before.status, 'nothing joined Ray');
  });

  it('waits for a placement group of tp 2 on a 1-GPU cluster, then fails with the ValueError', async () => {
    const proc = serve(loneHost, ['some/model', '-tp', '2', '--distributed-executor-backend', 'ray'], {
      SIM_VLLM_PG_WAIT_S: '1.5',
    });
    await proc.waitFor(/Waiting for creating a placement group/);
    assert.ok(
      proc
        .output()
        .includes("specs=[{'GPU': 1.0, 'node:127.0.1.3': 0.001}, {'GPU': 1.0}]. Check `ray status`"),
      proc.output(),
    );
    const status = (await run(loneHost, 'ray', ['status'])).stdout;
    assert.match(status, /^ 0\.0\/1\.0 GPU$/m);
    assert.match(
      status,
      /^ \{'GPU': 1\.0, 'node:127\.0\.1\.3': 0\.001\} \* 1, \{'GPU': 1\.0\} \* 1 \(PACK\): 1\+ pending placement groups$/m,
    );
    assert.equal(await proc.exited, 1);
    const output = proc.output();
    assert.equal(output.match(/Waiting for creating a placement group/g)?.length, 1);
    assert.match(
      output,
      /^ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group\.$/m,
    );
    assert.doesNotMatch(output, /Loading safetensors/);
    assert.match(
      (await run(loneHost, 'ray', ['status'])).stdout,
      /^Pending Demands:\n \(no resource demands\)$/m,
    );
  });

  it('loads across both nodes, refuses connections while loading, then serves every endpoint', async () => {
    const proc = serve(headHost, [
      'Qwen/Qwen3.5-122B-A10B-FP8',
      '--port',
      String(apiPort),
      '--tensor-parallel-size',
      '2',
      '--distributed-executor-backend',
      'ray',
      '--served-model-name',
      'qwen',
      '--max-model-len',
      '32768',
      '--trust-remote-code',
    ]);
    let refusals = 0;
    while (!proc.output().includes('Application startup complete.')) {
      if (proc.child.exitCode !== null) assert.fail(`vllm exited early:\n${proc.output()}`);
      if (proc.output().includes('Loading safetensors checkpoint shards')) {
        const wasRefused = await refused('127.0.1.1', apiPort);
        if (wasRefused) refusals += 1;
        else {
          // A connect can win the race with the startup line (it is printed just after listen(), and this
          // process may not have read it yet); a port opened while loading would instead be followed by more
          // shard lines. Lines printed before the connect may still be in the pipe, so only shard lines (the
          // last one comes a graph capture before listen()) count.
          const seenAtConnect = proc.output().length;
          await proc.waitFor(/Application startup complete\./);
          assert.doesNotMatch(
            proc.output().slice(seenAtConnect),
            /Loading safetensors checkpoint shards/,
            'port open while loading',
          );
        }
      }
      await sleep(30);
    }
    assert.ok(refusals >= 3, `only ${refusals} refused connections seen while loading`);
    const output = proc.output();
    assert.deepEqual(shardLines(output), [0, 1, 2, 3, 4]);
    const order = [
      'Using the existing placement group',
      'Starting to load model Qwen/Qwen3.5-122B-A10B-FP8...',
      'Loading safetensors checkpoint shards: 100% Completed | 4/4',
      'Loading weights took',
      'Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67',
      'Capturing CUDA graphs (decode, FULL): 100%|██████████| 35/35',
      `Starting vLLM API server 0 on http://0.0.0.0:${apiPort}`,
      'Application startup complete.',
    ].map((marker) => output.indexOf(marker));
    assert.ok(
      order.every((at, i) => at >= 0 && (i === 0 || at > (order[i - 1] ?? 0))),
      `log out of order:\n${output}`,
    );
    assert.match(output, /^INFO \d\d-\d\d \d\d:\d\d:\d\d \[api_server\.py:\d+\] vLLM API server version /m);
    assert.ok(
      output.includes(`(RayWorkerWrapper pid=${workerRayPid}, ip=127.0.1.2) INFO `),
      'worker lines carry the RayWorkerWrapper prefix',
    );

    const base = `http://127.0.1.1:${apiPort}`;
    const health = await fetch(`${base}/health`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), '');

    const models = (await (await fetch(`${base}/v1/models`)).json()) as {
      object: string;
      data: { id: string; root: string; max_model_len: number }[];
    };
    assert.equal(models.object, 'list');
    assert.deepEqual(
      models.data.map((m) => [m.id, m.root, m.max_model_len]),
      [['qwen', 'Qwen/Qwen3.5-122B-A10B-FP8', 32768]],
    );

    const request = { model: 'qwen', messages: [{ role: 'user', content: 'Say hello in five words' }] };
    const chatResponse = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    assert.equal(chatResponse.status, 200);
    const chat = (await chatResponse.json()) as {
      object: string;
      model: string;
      choices: { message: { role: string; content: string }; finish_reason: string }[];
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    };
    assert.equal(chat.object, 'chat.completion');
    assert.equal(chat.model, 'qwen');
    const text = chat.choices[0]?.message.content ?? '';
    assert.ok(text.length > 0);
    assert.equal(chat.choices[0]?.finish_reason, 'stop');
    assert.ok(chat.usage.completion_tokens > 0 && chat.usage.prompt_tokens > 0);
    assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);

    const again = (await (
      await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(request) })
    ).json()) as typeof chat;
    assert.equal(again.choices[0]?.message.content, text, 'replies are deterministic');

    const stream = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } }),
    });
    assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = (await stream.text()).split('\n\n').filter(Boolean);
    assert.ok(events.every((e) => e.startsWith('data: ')));
    assert.equal(events.at(-1), 'data: [DONE]');
    const chunks = events.slice(0, -1).map(
      (e) =>
        JSON.parse(e.slice(6)) as {
          object: string;
          choices: { delta: { content?: string }; finish_reason: string | null }[];
          usage?: { completion_tokens: number };
        },
    );
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), text);
    assert.ok(chunks.some((c) => c.choices[0]?.finish_reason === 'stop'));
    assert.equal(chunks.at(-1)?.usage?.completion_tokens, chat.usage.completion_tokens);

    const unknownModel = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ ...request, model: 'gpt-4' }),
    });
    assert.equal(unknownModel.status, 404);

    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /^# TYPE vllm:num_requests_running gauge$/m);
    assert.match(metrics, /^vllm:generation_tokens_total\{engine="0",model_name="qwen"\} (\d+)\.0$/m);
    const generated = Number(/^vllm:generation_tokens_total\{[^}]*\} (\d+)/m.exec(metrics)?.[1]);
    assert.equal(generated, chat.usage.completion_tokens * 3);
    // TTFT and inter-token latency as real vLLM's histograms, per completion, with its bucket boundaries.
    assert.match(metrics, /^# TYPE vllm:time_to_first_token_seconds histogram$/m);
    assert.match(metrics, /^vllm:time_to_first_token_seconds_bucket\{[^}]*,le="\+Inf"\} 3\.0$/m);
    assert.match(metrics, /^vllm:time_to_first_token_seconds_count\{[^}]*\} 3\.0$/m);
    assert.match(metrics, /^vllm:time_to_first_token_seconds_bucket\{[^}]*,le="2560\.0"\} 3\.0$/m);
    const gaps = 3 * (chat.usage.completion_tokens - 1);
    assert.match(
      metrics,
      new RegExp(`^vllm:inter_token_latency_seconds_bucket\\{[^}]*,le="0\\.01"\\} ${gaps}\\.0$`, 'm'),
    );
    assert.match(metrics, new RegExp(`^vllm:inter_token_latency_seconds_count\\{[^}]*\\} ${gaps}\\.0$`, 'm'));

    // GPU memory is held on both hosts while serving: by vLLM here, by the worker's Ray process there.
    const vllmPid = proc.child.pid ?? 0;
    assert.deepEqual(
      liveGpuProcesses(headHost).map((p) => [p.pid, p.processName, p.usedMiB, p.gpuIndex]),
      [[vllmPid, 'VLLM::EngineCore', 2048, 0]],
    );
    assert.deepEqual(
      liveGpuProcesses(workerHost).map((p) => [p.pid, p.processName, p.usedMiB, p.gpuIndex]),
      [[workerRayPid, 'ray::RayWorkerWrapper', 2048, 0]],
    );
    assert.equal(await gpuUsedGb(), ' 2.0/2.0 GPU');

    proc.child.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
    assert.match(proc.output(), /INFO: {5}Shutting down/);
    assert.deepEqual(liveGpuProcesses(headHost), []);
    await eventually(() => liveGpuProcesses(workerHost).length === 0);
    assert.equal(await gpuUsedGb(), ' 0.0/2.0 GPU');
    assert.equal(await refused('127.0.1.1', apiPort), true);
  });

  it('crashes after shard k with a traceback and a fatal line, and frees the GPUs', async () => {
    writeFaults(headHost, { crashAtShard: 2 });
    const result = await serveToExit(headHost, tp2OverRay);
    writeFaults(headHost, {});
    assert.equal(result.code, 1);
    assert.deepEqual(shardLines(result.stdout), [0, 1, 2]);
    assert.match(result.stdout, /^Traceback \(most recent call last\):$/m);
    assert.ok(result.stdout.trimEnd().endsWith(ENGINE_FAILED), result.stdout);
    assert.deepEqual(liveGpuProcesses(headHost), []);
    await eventually(() => liveGpuProcesses(workerHost).length === 0);
    assert.equal(await gpuUsedGb(), ' 0.0/2.0 GPU');
  });

  it('hangs after shard k: alive, silent, refusing connections, GPUs held until killed', async () => {
    writeFaults(headHost, { hangAtShard: 1 });
    const proc = serve(headHost, tp2OverRay);
    await proc.waitFor(/\| 1\/4 \[/);
    writeFaults(headHost, {});
    await sleep(150 * 4 + 500);
    assert.deepEqual(shardLines(proc.output()), [0, 1]);
    assert.equal(proc.child.exitCode, null);
    assert.equal(await refused('127.0.1.1', apiPort), true);
    assert.equal(liveGpuProcesses(headHost).length, 1);
    assert.equal(liveGpuProcesses(workerHost).length, 1);
    assert.equal(await gpuUsedGb(), ' 2.0/2.0 GPU');

    proc.child.kill('SIGKILL');
    await proc.exited;
    await eventually(
      () => liveGpuProcesses(headHost).length === 0 && liveGpuProcesses(workerHost).length === 0,
    );
    await eventually(async () => (await gpuUsedGb()) === ' 0.0/2.0 GPU');
  });

  it('dies of a Ray OOM kill at graph capture when the head runs the memory monitor', async () => {
    writeFaults(headHost, { oomAtGraphCapture: true });
    const result = await serveToExit(headHost, tp2OverRay);
    writeFaults(headHost, {});
    assert.equal(result.code, 1);
    assert.match(result.stdout, /^Capturing CUDA graphs \(mixed prefill-decode, PIECEWISE\): +\d+%\|/m);
    assert.match(
      result.stdout,
      /^ray\.exceptions\.OutOfMemoryError: Task was killed due to the node running low on memory\. Memory on the node \(IP: 127\.0\.1\.1, ID: [0-9a-f]{6}\) where the task was running was [\d.]+GB \/ [\d.]+GB \(0\.950345\), which exceeds the memory usage threshold of 0\.95\.$/m,
    );
    assert.doesNotMatch(result.stdout, /CUDA out of memory/);
    assert.doesNotMatch(result.stdout, /Application startup complete/);
  });

  it('dies of a CUDA OOM instead when the head started with RAY_memory_monitor_refresh_ms=0', async () => {
    writeFaults(loneHost, { oomAtGraphCapture: true });
    const result = await serveToExit(loneHost, [
      'm',
      '--port',
      String(apiPort),
      '--distributed-executor-backend',
      'ray',
    ]);
    writeFaults(loneHost, {});
    assert.equal(result.code, 1);
    assert.match(
      result.stdout,
      /^torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate [\d.]+ GiB\. /m,
    );
    assert.doesNotMatch(result.stdout, /ray\.exceptions\.OutOfMemoryError/);
  });

  it('refuses to start when another process holds the memory of a GPU on a worker node', async () => {
    const hog = spawn('sleep', ['30']);
    children.push(hog);
    registerGpuProcess(workerHost, {
      pid: hog.pid ?? 0,
      processName: 'python3',
      usedMiB: 60000,
      gpuIndex: 0,
    });
    const result = await serveToExit(headHost, tp2OverRay);
    hog.kill('SIGKILL');
    assert.equal(result.code, 1);
    assert.ok(
      result.stdout.includes(`(RayWorkerWrapper pid=${workerRayPid}, ip=127.0.1.2) Traceback`),
      result.stdout,
    );
    assert.match(
      result.stdout,
      /^ValueError: Free memory on device \([\d.]+\/118\.84 GiB\) on startup is less than desired GPU memory utilization \(0\.9, 106\.95 GiB\)\./m,
    );
    assert.doesNotMatch(result.stdout, /Loading safetensors/);
  });

  it('serves on one host without Ray, bound to the host IP, and releases the GPU on SIGTERM', async () => {
    const proc = serve(bareHost, ['tiny/model', '--port', String(apiPort)]);
    await proc.waitFor(/Application startup complete\./);
    assert.equal((await fetch(`http://127.0.1.4:${apiPort}/health`)).status, 200);
    assert.equal(await refused('127.0.1.1', apiPort), true, 'bound to 127.0.1.4 only');
    assert.deepEqual(
      liveGpuProcesses(bareHost).map((p) => [p.pid, p.processName]),
      [[proc.child.pid, 'VLLM::EngineCore']],
    );
    proc.child.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
    assert.deepEqual(liveGpuProcesses(bareHost), []);
  });

  it('`vllm serve BAAI/bge-m3 --gpu-memory-utilization 0.05` (the companion example) serves embeddings and rerank, not chat', async () => {
    const proc = serve(bareHost, [
      'BAAI/bge-m3',
      '--port',
      String(apiPort),
      '--gpu-memory-utilization',
      '0.05',
    ]);
    await proc.waitFor(/Application startup complete\./);
    const log = proc.output();
    assert.match(log, /\[model\.py:\d+\] Resolved `--runner auto` to `--runner pooling`\./);
    const routes = [...log.matchAll(/Route: (\S+), Methods: POST$/gm)].map((m) => m[1]);
    assert.deepEqual(routes, ['/v1/embeddings', '/rerank', '/v1/rerank', '/v2/rerank']);
    const url = `http://127.0.1.4:${apiPort}`;
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    assert.equal((await fetch(`${url}/health`)).status, 200);
    const models = (await (await fetch(`${url}/v1/models`)).json()) as {
      data: { id: string; max_model_len: number }[];
    };
    assert.deepEqual(
      models.data.map((m) => [m.id, m.max_model_len]),
      [['BAAI/bge-m3', 8192]],
    );

    type Embeddings = {
      id: string;
      object: string;
      created: number;
      model: string;
      data: { index: number; object: string; embedding: number[] }[];
      usage: { prompt_tokens: number; total_tokens: number };
    };
    const one = await post('/v1/embeddings', { model: 'BAAI/bge-m3', input: 'The cat sat on the mat' });
    assert.equal(one.status, 200);
    const single = (await one.json()) as Embeddings;
    assert.match(single.id, /^embd-/);
    assert.deepEqual([single.object, single.model], ['list', 'BAAI/bge-m3']);
    assert.ok(Number.isInteger(single.created));
    const [first] = single.data;
    assert.deepEqual([first?.index, first?.object, first?.embedding.length], [0, 'embedding', 1024]);
    const vector = first?.embedding ?? [];
    assert.ok(Math.abs(Math.hypot(...vector) - 1) < 1e-6, 'unit length');
    assert.equal(single.usage.total_tokens, single.usage.prompt_tokens);

    const batch = (await (
      await post('/v1/embeddings', { input: ['The cat sat on the mat', 'stock prices fell'] })
    ).json()) as Embeddings;
    assert.deepEqual(
      batch.data.map((d) => d.index),
      [0, 1],
    );
    assert.deepEqual(batch.data[0]?.embedding, vector, 'the same text, the same vector');
    assert.notDeepEqual(batch.data[1]?.embedding, vector);

    const missing = await post('/v1/embeddings', { model: 'BAAI/bge-m3' });
    assert.equal(missing.status, 400);
    const refusal = (await missing.json()) as { error: { type: string; param: string; code: number } };
    assert.deepEqual(
      [refusal.error.type, refusal.error.param, refusal.error.code],
      ['Bad Request', 'body.input', 400],
    );
    const empty = await post('/v1/embeddings', { input: [] });
    assert.deepEqual(
      [empty.status, await empty.json()],
      [
        400,
        {
          error: {
            message: 'You must pass at least one prompt',
            type: 'BadRequestError',
            param: null,
            code: 400,
          },
        },
      ],
    );
    assert.equal((await post('/v1/embeddings', { input: 'x', model: 'gpt-4' })).status, 404);

    type Reranked = { id: string; results: { index: number; relevance_score: number }[] };
    const documents = ['stock prices fell', 'a cat on a mat', 'The cat sat on the mat'];
    for (const path of ['/v1/rerank', '/rerank', '/v2/rerank']) {
      const reranked = await post(path, { model: 'BAAI/bge-m3', query: 'the cat sat', documents, top_n: 2 });
      assert.equal(reranked.status, 200, path);
      const body = (await reranked.json()) as Reranked;
      assert.match(body.id, /^score-/);
      assert.deepEqual(
        body.results.map((r) => r.index),
        [2, 1],
        path,
      );
    }

    // No generation routes on a pooling model: Starlette's 404, as real vLLM 0.32 answers.
    const chat = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual([chat.status, await chat.json()], [404, { detail: 'Not Found' }]);
    assert.equal((await fetch(`${url}/v1/embeddings`)).status, 405);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    const prompt = Number(
      /^vllm:prompt_tokens_total\{[^}]*model_name="BAAI\/bge-m3"\} (\d+)\.0$/m.exec(metrics)?.[1],
    );
    assert.ok(prompt >= single.usage.prompt_tokens + batch.usage.prompt_tokens, metrics);
    assert.match(metrics, /^vllm:generation_tokens_total\{[^}]*\} 0\.0$/m);
    proc.child.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
  });

  it('a reranker (bge-reranker-v2-m3) scores by shared words, has no /v1/embeddings, and --api-key guards /v1 and /v2', async () => {
    const proc = serve(bareHost, [
      'BAAI/bge-reranker-v2-m3',
      '--port',
      String(apiPort),
      '--served-model-name',
      'reranker',
      '--api-key',
      'sekrit',
    ]);
    await proc.waitFor(/Application startup complete\./);
    const url = `http://127.0.1.4:${apiPort}`;
    const post = (path: string, body: unknown, key = 'sekrit') =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
    // --api-key guards /v1 and /v2 (vLLM 0.32's GUARDED_PREFIX), not /rerank.
    const anonymous = { query: 'q', documents: ['d'] };
    assert.deepEqual(
      await Promise.all(
        ['/v1/rerank', '/v2/rerank', '/rerank'].map(async (p) => (await post(p, anonymous, '')).status),
      ),
      [401, 401, 200],
    );
    const reranked = await post('/v1/rerank', {
      model: 'reranker',
      query: 'the cat sat',
      documents: ['a dog barks', 'cat food', 'the cat sat down'],
    });
    assert.equal(reranked.status, 200);
    const body = (await reranked.json()) as {
      model: string;
      usage: { total_tokens: number };
      results: { index: number; document: { text: string }; relevance_score: number }[];
    };
    assert.equal(body.model, 'reranker');
    assert.deepEqual(
      body.results.map((r) => [r.index, r.document.text, Number(r.relevance_score.toFixed(3))]),
      [
        [2, 'the cat sat down', 1],
        [1, 'cat food', 0.333],
        [0, 'a dog barks', 0],
      ],
    );
    assert.ok(body.usage.total_tokens > 0);
    assert.deepEqual(
      [
        (await post('/v1/embeddings', { input: 'x' })).status,
        (await post('/v1/chat/completions', {})).status,
      ],
      [404, 404],
    );
    assert.equal((await fetch(`${url}/health`)).status, 200);
    proc.child.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
  });

  it('a hung engine, switched on while serving: /health 200, completions never answer or fail with 500', async () => {
    const proc = serve(bareHost, ['tiny/model', '--port', String(apiPort)]);
    await proc.waitFor(/Application startup complete\./);
    const url = `http://127.0.1.4:${apiPort}`;
    const chat = (signal?: AbortSignal) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
        ...(signal ? { signal } : {}),
      });
    assert.equal((await chat()).status, 200, 'answers before the fault');
    writeFaults(bareHost, { completions: 'hang' });
    assert.equal((await fetch(`${url}/health`)).status, 200);
    await assert.rejects(chat(AbortSignal.timeout(1500)), /aborted|timeout/i);
    writeFaults(bareHost, { completions: 'error' });
    assert.equal((await fetch(`${url}/health`)).status, 200);
    const failed = await chat();
    assert.equal(failed.status, 500);
    assert.match(await failed.text(), /EngineCore encountered an issue/);
    writeFaults(bareHost, {});
    assert.equal((await chat()).status, 200, 'answers again once the fault is off');
    proc.child.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
  });

  it('dies when a worker node of its placement group goes away', async () => {
    const proc = serve(headHost, tp2OverRay);
    await proc.waitFor(/Application startup complete\./);
    process.kill(workerRayPid, 'SIGKILL');
    assert.equal(await proc.exited, 1);
    assert.match(
      proc.output(),
      /^ray\.exceptions\.ActorDiedError: The actor died unexpectedly before finishing this task\.$/m,
    );
    await eventually(
      () => liveGpuProcesses(headHost).length === 0 && liveGpuProcesses(workerHost).length === 0,
    );
    assert.equal(await gpuUsedGb(), ' 0.0/1.0 GPU');
  });

  it("--nnodes: rank 0 fails with torch's DistNetworkError when the master port is taken", async () => {
    const holder = createServer().listen(masterPort, '127.0.1.4');
    await once(holder, 'listening');
    let result: RunResult;
    try {
      result = await serveToExit(bareHost, rankOf2(0));
    } finally {
      holder.close();
    }
    assert.equal(result.code, 1);
    assert.match(
      result.stdout,
      new RegExp(
        `^torch\\.distributed\\.DistNetworkError: The server socket has failed to listen on any local network address\\. port: ${masterPort}, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use$`,
        'm',
      ),
    );
    assert.doesNotMatch(result.stdout, /is assigned as|Loading safetensors/);
  });

  it("--nnodes: rank 0's store times out waiting for a rank that never joins", async () => {
    const result = await serveToExit(bareHost, rankOf2(0, ['--distributed-timeout-seconds', '1']));
    assert.equal(result.code, 1);
    assert.match(
      result.stdout,
      /^torch\.distributed\.DistStoreError: Timed out after \d+ seconds waiting for clients\. 1\/2 clients joined\.$/m,
    );
    assert.doesNotMatch(result.stdout, /is assigned as|Loading safetensors/);
  });

  it("--nnodes: rank 0 prints gloo's 'Connection reset by peer' and exits when a joined rank dies", async () => {
    const rank0 = serve(bareHost, rankOf2(0));
    const rank1 = serve(loneHost, rankOf2(1));
    await rank1.waitFor(/rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1/);
    await rank0.waitFor(/Loading safetensors checkpoint shards/);
    rank1.child.kill('SIGKILL');
    await rank0.waitFor(/Connection reset by peer/, 5000);
    assert.equal(await rank0.exited, 1);
    assert.match(
      rank0.output(),
      new RegExp(
        `^\\(Worker_TP0 pid=\\d+\\) ERROR \\d\\d-\\d\\d [\\d:]+ \\[multiproc_executor\\.py:953\\] RuntimeError: \\[\\S+/gloo/transport/tcp/pair\\.cc:537\\] Read error \\[[\\d.]+\\]:${masterPort + 1}: Connection reset by peer\\.`,
        'm',
      ),
    );
    await eventually(() => liveGpuProcesses(bareHost).length === 0);
  });

  it('appends one launches.log line per launch', () => {
    for (const dir of [headHost, loneHost, bareHost]) {
      const lines = readFileSync(join(dir, 'launches.log'), 'utf8').trimEnd().split('\n');
      assert.equal(lines.length, launches.get(dir));
      for (const line of lines) {
        const entry = JSON.parse(line) as { time: string; pid: number; model: string; args: string[] };
        assert.ok(!Number.isNaN(Date.parse(entry.time)));
        assert.ok(entry.pid > 0);
        assert.equal(entry.args[0], entry.model);
      }
    }
    assert.equal(readJson(join(workerHost, 'launches.log')), undefined);
  });
});
