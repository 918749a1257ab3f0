// Log line formats of vLLM and tqdm, as in fixtures/vllm-logs/healthy-start.log and fatal.txt.

export const VLLM_VERSION = '0.17.1rc1';

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** vLLM's logger prefix: `INFO 04-19 17:09:01 [api_server.py:1090] `. */
export function vllmLine(
  level: 'INFO' | 'WARNING' | 'ERROR',
  source: string,
  message: string,
  d = new Date(),
): string {
  const stamp = `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return `${level} ${stamp} [${source}] ${message}`;
}

/** Lines that a Ray worker actor prints reach the driver's log with this prefix. */
export function workerPrefix(pid: number, ip: string): string {
  return `(RayWorkerWrapper pid=${pid}, ip=${ip}) `;
}

/** tqdm's format_interval: `mm:ss`, or `h:mm:ss` past an hour. */
export function tqdmInterval(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h}:${pad(m)}:${pad(s % 60)}` : `${pad(m)}:${pad(s % 60)}`;
}

/** tqdm shows s/it when an item takes longer than a second, it/s otherwise. */
function tqdmRate(secondsPerItem: number): string {
  if (secondsPerItem <= 0) return '?it/s';
  return secondsPerItem > 1 ? `${secondsPerItem.toFixed(2)}s/it` : `${(1 / secondsPerItem).toFixed(2)}it/s`;
}

/** `Loading safetensors checkpoint shards:  51% Completed | 20/39 [06:00<05:42, 18.02s/it]` */
export function shardProgressLine(done: number, total: number, elapsedSeconds: number): string {
  const pct = String(Math.floor((done / total) * 100)).padStart(3);
  if (done === 0)
    return `Loading safetensors checkpoint shards: ${pct}% Completed | 0/${total} [00:00<?, ?it/s]`;
  const perItem = elapsedSeconds / done;
  return `Loading safetensors checkpoint shards: ${pct}% Completed | ${done}/${total} [${tqdmInterval(elapsedSeconds)}<${tqdmInterval(perItem * (total - done))}, ${tqdmRate(perItem)}]`;
}

/** `Capturing CUDA graphs (decode, FULL): 100%|██████████| 35/35 [00:09<00:00,  3.71it/s]` */
export function graphCaptureLine(label: string, done: number, total: number, elapsedSeconds: number): string {
  const fraction = done / total;
  const filled = Math.floor(fraction * 10);
  const bar = '█'.repeat(filled) + ' '.repeat(10 - filled);
  const perItem = done ? elapsedSeconds / done : 0;
  const itPerSecond = perItem > 0 ? (1 / perItem).toFixed(2).padStart(5) : '    ?';
  return `Capturing CUDA graphs (${label}): ${String(Math.floor(fraction * 100)).padStart(3)}%|${bar}| ${done}/${total} [${tqdmInterval(elapsedSeconds)}<${tqdmInterval(perItem * (total - done))}, ${itPerSecond}it/s]`;
}

export function gib(mib: number): string {
  return (mib / 1024).toFixed(2);
}

/** A Python traceback ending in the given exception lines. */
export function traceback(
  frames: [file: string, line: number, fn: string, code: string][],
  ...exception: string[]
): string[] {
  return [
    'Traceback (most recent call last):',
    ...frames.flatMap(([file, line, fn, code]) => [
      `  File "${file}", line ${line}, in ${fn}`,
      `    ${code}`,
    ]),
    ...exception,
  ];
}

const SITE = '/usr/local/lib/python3.12/dist-packages';

export const frames = {
  engineCore: [
    `${SITE}/vllm/v1/engine/core.py`,
    709,
    'run_engine_core',
    'engine_core = EngineCoreProc(*args, **kwargs)',
  ],
  loadWeights: [
    `${SITE}/vllm/model_executor/model_loader/default_loader.py`,
    277,
    'load_weights',
    'loaded_weights = model.load_weights(self.get_all_weights(model_config, model))',
  ],
  safetensors: [
    `${SITE}/safetensors/torch.py`,
    313,
    'load_file',
    'with safe_open(filename, framework="pt", device=device) as f:',
  ],
  initRay: [
    `${SITE}/vllm/executor/ray_utils.py`,
    370,
    'initialize_ray_cluster',
    'ray.init(address=ray_address)',
  ],
  waitPg: [`${SITE}/vllm/executor/ray_utils.py`, 298, '_wait_until_pg_ready', 'raise ValueError('],
  checkGpus: [`${SITE}/vllm/executor/ray_utils.py`, 402, 'initialize_ray_cluster', 'raise ValueError('],
  workerInit: [`${SITE}/vllm/v1/worker/gpu_worker.py`, 190, 'init_device', 'raise ValueError('],
  captureGraphs: [
    `${SITE}/vllm/v1/worker/gpu_model_runner.py`,
    2790,
    'capture_model',
    'self._capture_cudagraphs(',
  ],
  executeMethod: [
    `${SITE}/vllm/executor/ray_distributed_executor.py`,
    517,
    '_run_workers',
    'ray_worker_outputs = ray.get(ray_worker_outputs)',
  ],
} satisfies Record<string, [string, number, string, string]>;

export const ENGINE_INIT_FAILED =
  'RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}';

/** One line of the server's log, on stdout as vLLM writes it. */
export function print(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Ends `vllm serve` with exit code 1 after printing these lines (a traceback, usually). */
export class FatalExit extends Error {
  constructor(readonly lines: string[]) {
    super('fatal');
  }
}
