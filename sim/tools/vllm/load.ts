// The load of `vllm serve`: weight shards and CUDA graph capture at the host's pace, in vLLM's log formats,
// with the faults a host can be given (crash or hang at a shard, out of memory at graph capture).
import type { HostConfig, HostFaults } from '../../host-state.js';
import {
  ENGINE_INIT_FAILED,
  FatalExit,
  frames,
  gib,
  graphCaptureLine,
  print,
  shardProgressLine,
  traceback,
  vllmLine,
} from './log.js';

export interface LoadContext {
  model: string;
  pace: HostConfig['vllm'];
  faults: HostFaults;
  /** Prints a line as the driver, then as each Ray worker actor would. */
  printAll: (line: string) => void;
  /** The failure at graph capture: who kills the engine depends on Ray's memory monitor. */
  outOfMemory: () => string[];
  /** Whether this process prints the shards' progress bar (rank 0 only, in multi-node mode). */
  showProgress?: boolean;
}

const sleep = (seconds: number) => new Promise((r) => setTimeout(r, seconds * 1000));

export async function loadWeights(ctx: LoadContext): Promise<void> {
  ctx.printAll(vllmLine('INFO', 'gpu_model_runner.py:2040', `Starting to load model ${ctx.model}...`));
  const total = Math.max(1, ctx.pace.shards);
  const loadStart = Date.now();
  for (let done = 0; done <= total; done++) {
    if (done > 0) await sleep(ctx.pace.shardSeconds);
    if (ctx.showProgress !== false) print(shardProgressLine(done, total, (Date.now() - loadStart) / 1000));
    if (ctx.faults.crashAtShard === done) {
      throw new FatalExit([
        ...traceback(
          [frames.engineCore, frames.loadWeights, frames.safetensors],
          'safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer',
        ),
        ENGINE_INIT_FAILED,
      ]);
    }
    if (ctx.faults.hangAtShard === done) {
      // Without a Ray connection nothing else keeps the event loop, and a hung process must stay alive.
      setInterval(() => undefined, 1 << 30);
      await new Promise<never>(() => undefined);
    }
  }
  const loadSeconds = (Date.now() - loadStart) / 1000;
  ctx.printAll(
    vllmLine('INFO', 'default_loader.py:268', `Loading weights took ${loadSeconds.toFixed(2)} seconds`),
  );
  ctx.printAll(
    vllmLine(
      'INFO',
      'gpu_model_runner.py:2092',
      `Model loading took ${gib(ctx.pace.memoryMiB * 0.6)} GiB memory and ${(loadSeconds + 1.36).toFixed(2)} seconds`,
    ),
  );
  print(vllmLine('INFO', 'backends.py:539', 'torch.compile and initial profiling run took 0.31 s in total'));
  ctx.printAll(
    vllmLine('INFO', 'gpu_worker.py:276', `Available KV cache memory: ${gib(ctx.pace.memoryMiB * 0.32)} GiB`),
  );
  print(vllmLine('INFO', 'kv_cache_utils.py:849', 'GPU KV cache size: 677,888 tokens'));
}

export async function captureGraphs(ctx: LoadContext): Promise<void> {
  const phases: [label: string, graphs: number, share: number][] = [
    ['mixed prefill-decode, PIECEWISE', 67, 2 / 3],
    ['decode, FULL', 35, 1 / 3],
  ];
  for (const [label, graphs, share] of phases) {
    const seconds = ctx.pace.graphCaptureSeconds * share;
    if (ctx.faults.oomAtGraphCapture) {
      await sleep(seconds / 2);
      print(graphCaptureLine(label, Math.floor(graphs * 0.4), graphs, seconds / 2));
      throw new FatalExit(ctx.outOfMemory());
    }
    await sleep(seconds);
    print(graphCaptureLine(label, graphs, graphs, seconds));
  }
  const totalSeconds = Math.max(1, Math.round(ctx.pace.graphCaptureSeconds));
  print(
    vllmLine(
      'INFO',
      'gpu_model_runner.py:2830',
      `Graph capturing finished in ${totalSeconds} secs, took 1.12 GiB`,
    ),
  );
  print(
    vllmLine(
      'INFO',
      'core.py:200',
      `init engine (profile, create kv cache, warmup model) took ${(ctx.pace.graphCaptureSeconds + 1.2).toFixed(2)} seconds`,
    ),
  );
}
