// `vllm serve`: joins the Ray cluster for a GPU placement group (placement.ts), holds GPU memory on every node
// in it, "loads" the model (load.ts), then serves the OpenAI API (server.ts) until it is stopped or a node dies.
import { appendFileSync } from 'node:fs';
import { readFaults, readHostConfig, paths, type HostConfig, type HostFaults } from '../../host-state.js';
import { numberOption, parseFlags, UsageError, type FlagSpec, type ParsedArgs } from '../ray/args.js';
import { freeGpuMemoryMiB, holdGpuMemory, releaseGpuMemory } from '../ray/gpu.js';
import type { BundlePlacement } from '../ray/protocol.js';
import { captureGraphs, loadWeights, type LoadContext } from './load.js';
import {
  ENGINE_INIT_FAILED,
  FatalExit,
  frames,
  gib,
  print,
  traceback,
  vllmLine,
  VLLM_VERSION,
  workerPrefix,
} from './log.js';
import { joinPlacementGroup, type RayChannel } from './placement.js';
import {
  announce,
  assigned,
  multinodeOf,
  peerLostLines,
  rendezvous,
  workersPerNode,
  type Multinode,
  type ProcessGroup,
} from './multinode.js';
import {
  CONVERT_CHOICES,
  POOLING_MAX_MODEL_LEN,
  resolveModelKind,
  RUNNER_CHOICES,
  type ModelKind,
} from './pooling.js';
import { postRoutesOf, VllmApi } from './server.js';

const ENGINE_PROCESS_NAME = 'VLLM::EngineCore';
const DEFAULT_PACE: HostConfig['vllm'] = {
  shards: 4,
  shardSeconds: 0.2,
  graphCaptureSeconds: 0.5,
  memoryMiB: 1024,
};

const serveSpec: FlagSpec = {
  values: [
    'model',
    'port',
    'host',
    'tensor-parallel-size',
    'pipeline-parallel-size',
    'distributed-executor-backend',
    'gpu-memory-utilization',
    'max-model-len',
    'max-num-seqs',
    'max-num-batched-tokens',
    'dtype',
    'quantization',
    'kv-cache-dtype',
    'download-dir',
    'tokenizer',
    'reasoning-parser',
    'tool-call-parser',
    'chat-template',
    'api-key',
    'uvicorn-log-level',
    'seed',
    'swap-space',
    'compilation-config',
    'limit-mm-per-prompt',
    'data-parallel-size',
    'revision',
    'load-format',
    'nnodes',
    'node-rank',
    'master-addr',
    'master-port',
    'distributed-timeout-seconds',
    'response-role',
    'tokenizer-mode',
    'generation-config',
    'hf-overrides',
    'block-size',
    'cpu-offload-gb',
    'speculative-config',
    'max-logprobs',
    // What the model is run for (pooling.ts): vLLM 0.32 has no --task.
    'runner',
    'convert',
  ],
  booleans: [
    'trust-remote-code',
    'enforce-eager',
    'enable-prefix-caching',
    'no-enable-prefix-caching',
    'enable-chunked-prefill',
    'enable-expert-parallel',
    'enable-auto-tool-choice',
    'disable-log-requests',
    'disable-log-stats',
    'disable-custom-all-reduce',
    'async-scheduling',
    'headless',
    'enable-log-requests',
    'enable-sleep-mode',
  ],
  lists: ['served-model-name'],
  aliases: {
    '-tp': 'tensor-parallel-size',
    '-pp': 'pipeline-parallel-size',
    '-dp': 'data-parallel-size',
    '-q': 'quantization',
    '-n': 'nnodes',
    '-r': 'node-rank',
    '--device-memory-utilization': 'gpu-memory-utilization',
  },
  // One positional, the model tag; real vLLM refuses whatever else it does not know, before it starts anything.
  collectUnrecognized: { positionals: 1 },
};

/** argparse's type names, as its errors show them; `config int` is a config field's int, whose error vLLM words. */
type ArgumentType = 'int' | 'float' | 'human_readable_int' | 'human_readable_int_or_auto' | 'config int';

/**
 * The options the sim reads as numbers, as vLLM's argparse names them in an error (every option string) and the
 * type it converts them with. The texts are real vLLM 0.32's (CPU build), e.g.
 * `vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'x'`.
 */
const typedOptions: Record<string, [shown: string, type: ArgumentType]> = {
  port: ['--port', 'int'],
  'tensor-parallel-size': ['--tensor-parallel-size/-tp', 'int'],
  'pipeline-parallel-size': ['--pipeline-parallel-size/-pp', 'int'],
  'data-parallel-size': ['--data-parallel-size/-dp', 'int'],
  'gpu-memory-utilization': ['--gpu-memory-utilization/--device-memory-utilization', 'float'],
  'max-model-len': ['--max-model-len', 'human_readable_int_or_auto'],
  'max-num-batched-tokens': ['--max-num-batched-tokens', 'human_readable_int'],
  'max-num-seqs': ['--max-num-seqs', 'int'],
  seed: ['--seed', 'int'],
  nnodes: ['--nnodes/-n', 'int'],
  'node-rank': ['--node-rank/-r', 'int'],
  'master-port': ['--master-port', 'int'],
  'distributed-timeout-seconds': ['--distributed-timeout-seconds', 'config int'],
};

const pythonInt = /^\s*[+-]?\d+(?:_\d+)*\s*$/;
const pythonFloat = /^\s*[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)\s*$/i;
// vLLM's human_readable_int: a plain int, or a number with a k/m/g/t suffix (decimal lower case, binary upper).
const humanReadable = /^\s*\d+(?:\.\d+)?[kmgtKMGT]\s*$/;

function validArgument(value: string, type: ArgumentType): boolean {
  switch (type) {
    case 'int':
    case 'config int':
      return pythonInt.test(value);
    case 'float':
      return pythonFloat.test(value);
    case 'human_readable_int':
      return pythonInt.test(value) || humanReadable.test(value);
    case 'human_readable_int_or_auto':
      return /^\s*auto\s*$/i.test(value) || pythonInt.test(value) || humanReadable.test(value);
  }
}

/** Options whose value is one of a few words (a Literal in vLLM's config, argparse `choices`). */
const choiceOptions: Record<string, readonly string[]> = {
  runner: RUNNER_CHOICES,
  convert: CONVERT_CHOICES,
};

/**
 * argparse's refusal of a value its type cannot convert or its choices do not hold: the first such option, as
 * argparse stops there. vLLM 0.32 lists the choices sorted, each quoted as Python's repr, e.g.
 * `argument --runner: invalid choice: 'bogus' (choose from 'auto', 'draft', 'generate', 'pooling')`.
 */
function checkArgumentTypes(parsed: ParsedArgs): void {
  for (const [name, value] of parsed.values) {
    const choices = choiceOptions[name];
    if (choices && !choices.includes(value)) {
      throw new UsageError(
        `argument --${name}: invalid choice: '${value}' (choose from ${[...choices]
          .sort()
          .map((c) => `'${c}'`)
          .join(', ')})`,
      );
    }
    const typed = typedOptions[name];
    if (!typed || validArgument(value, typed[1])) continue;
    const [shown, type] = typed;
    throw new UsageError(
      type === 'config int'
        ? `argument ${shown}: Value ${value} cannot be converted to <class 'int'>.`
        : `argument ${shown}: invalid ${type} value: '${value}'`,
    );
  }
}

/** vLLM's human_readable_int as a number: `32k` is 32 000, `32K` 32 768; undefined for unset, `auto` and -1. */
function humanReadableInt(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || /^(?:auto|-1)$/i.test(trimmed)) return undefined;
  const suffix = trimmed.at(-1) ?? '';
  const decimal: Record<string, number> = { k: 1e3, m: 1e6, g: 1e9, t: 1e12 };
  const binary: Record<string, number> = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };
  const multiplier = decimal[suffix] ?? binary[suffix];
  if (multiplier === undefined) return Number(trimmed.replaceAll('_', ''));
  return Math.round(Number(trimmed.slice(0, -1)) * multiplier);
}

/**
 * vLLM's FlexibleArgumentParser reads `--max_model_len` as `--max-model-len`: underscores in an option's name
 * (up to its `=` or its first `.`) become dashes before argparse sees it, so its errors show the dashed name.
 */
function dashedOptionName(arg: string): string {
  if (!arg.startsWith('--')) return arg;
  const end = arg.search(/[=.]/);
  const name = end < 0 ? arg : arg.slice(0, end);
  return name.replaceAll('_', '-') + arg.slice(name.length);
}

/**
 * argparse's last word on a command line with options it does not know: the parent parser (`vllm`, not
 * `vllm serve`) prints it, as the subparser hands its leftovers up (real vLLM 0.32 prints exactly this form).
 */
export class UnrecognizedArguments extends Error {
  constructor(readonly unrecognized: readonly string[]) {
    super(`unrecognized arguments: ${unrecognized.join(' ')}`);
  }
}

export class VllmServe {
  private readonly parsed;
  private readonly model: string;
  /** Generative, or a pooling model that embeds or scores (from --runner, --convert and the model's name). */
  private readonly kind: ModelKind;
  private readonly kindResolutions: string[];
  private readonly dir = process.env.LIFTOFF_SIM_HOST_DIR;
  private readonly cfg: HostConfig | undefined;
  private readonly pace: HostConfig['vllm'];
  private readonly faults: HostFaults;
  private readonly tp: number;
  private readonly port: number;
  private readonly driverIp: string;
  private ray: RayChannel | undefined;
  /** vLLM's own multi-node mode (--nnodes), read at start: its argument errors are the process's output. */
  private multinode: Multinode | undefined;
  private group: ProcessGroup | undefined;
  private bundles: BundlePlacement[] = [];
  private headMemoryMonitorDisabled = true;
  private ownGpus: number[] = [];
  private api: VllmApi | undefined;
  /** Set once this process decides to exit, so its own closing of the Ray connection is not a crash. */
  private stopping = false;

  /** Refuses the command line as vLLM's argparse does (UsageError, UnrecognizedArguments): before run() starts anything. */
  constructor(private readonly args: string[]) {
    this.parsed = parseFlags(args.map(dashedOptionName), serveSpec);
    checkArgumentTypes(this.parsed);
    const model = this.parsed.positionals[0] ?? this.parsed.values.get('model');
    if (!model) throw new UsageError('the following arguments are required: model_tag');
    if (this.parsed.unrecognized.length > 0) throw new UnrecognizedArguments(this.parsed.unrecognized);
    this.model = model;
    ({ kind: this.kind, resolutions: this.kindResolutions } = resolveModelKind(
      model,
      this.parsed.values.get('runner'),
      this.parsed.values.get('convert'),
    ));
    this.cfg = this.dir ? readHostConfig(this.dir) : undefined;
    this.pace = { ...DEFAULT_PACE, ...this.cfg?.vllm };
    this.faults = this.dir ? readFaults(this.dir) : {};
    this.tp = numberOption(this.parsed, 'tensor-parallel-size') ?? 1;
    this.port = numberOption(this.parsed, 'port') ?? 8000;
    this.driverIp = process.env.VLLM_HOST_IP || this.cfg?.clusterIp || '127.0.0.1';
  }

  private get servedNames(): string[] {
    return this.parsed.lists.get('served-model-name') ?? [this.model];
  }

  private get usesRay(): boolean {
    if (this.multinode) return false;
    return (
      this.parsed.values.get('distributed-executor-backend') === 'ray' ||
      this.tp > (this.cfg?.gpuCount ?? this.tp)
    );
  }

  async run(): Promise<number> {
    if (this.dir) {
      const entry = { time: new Date().toISOString(), pid: process.pid, model: this.model, args: this.args };
      appendFileSync(paths.launches(this.dir), `${JSON.stringify(entry)}\n`);
    }
    process.once('SIGTERM', () => this.shutdown());
    process.once('SIGINT', () => this.shutdown());
    try {
      await this.start();
      return await new Promise<number>(() => undefined);
    } catch (e) {
      if (!(e instanceof FatalExit)) throw e;
      for (const line of e.lines) print(line);
      this.stopping = true;
      this.ray?.close();
      this.group?.close();
      return 1;
    }
  }

  private async start(): Promise<void> {
    const m = (this.multinode = multinodeOf(this.parsed, this.tp));
    // A headless rank runs its workers only: no API server.
    if (!m?.headless) {
      print(vllmLine('INFO', 'api_server.py:1090', `vLLM API server version ${VLLM_VERSION}`));
    }
    print(vllmLine('INFO', 'utils.py:328', `non-default args: ${this.describeArgs()}`));
    for (const line of this.kindResolutions) print(vllmLine('INFO', 'model.py:1310', line));
    if (m) {
      announce(m);
      this.group = await rendezvous(m);
      // Rank 0's collectives fail as soon as a headless rank dies: it prints gloo's error and exits.
      this.group.onPeerLost((peer) => this.peerLost(m, peer.address));
      assigned(m);
      this.ownGpus = Array.from({ length: workersPerNode(m) }, (_, i) => i);
    } else if (this.usesRay) await this.acquirePlacementGroup();
    else this.ownGpus = Array.from({ length: this.tp }, (_, i) => i);
    this.checkFreeMemory();
    if (this.dir) {
      for (const gpu of this.ownGpus) {
        holdGpuMemory(this.dir, process.pid, gpu, this.pace.memoryMiB, ENGINE_PROCESS_NAME);
      }
    }
    const load: LoadContext = {
      model: this.model,
      pace: this.pace,
      faults: this.faults,
      printAll: (line) => this.printAll(line),
      outOfMemory: () => this.outOfMemory(),
      // In multi-node mode only rank 0 shows the shards' progress bar; every rank loads its own part.
      showProgress: !m || m.rank === 0,
    };
    await loadWeights(load);
    await captureGraphs(load);
    if (m?.headless) {
      print(vllmLine('INFO', 'multiproc_executor.py:512', 'Headless node ready: workers serve rank 0.'));
      // The connection to rank 0 keeps the process; this keeps it should rank 0 go, as a real worker waits.
      setInterval(() => undefined, 1 << 30);
      return;
    }
    await this.serve();
  }

  private describeArgs(): string {
    const entries: [string, string][] = [['model', `'${this.model}'`]];
    for (const [k, v] of this.parsed.values) {
      if (k === 'model') continue;
      entries.push([k.replaceAll('-', '_'), Number.isFinite(Number(v)) ? v : `'${v}'`]);
    }
    for (const [k, v] of this.parsed.lists)
      entries.push([k.replaceAll('-', '_'), `[${v.map((x) => `'${x}'`).join(', ')}]`]);
    for (const k of this.parsed.booleans) entries.push([k.replaceAll('-', '_'), 'True']);
    return `{${entries.map(([k, v]) => `'${k}': ${v}`).join(', ')}}`;
  }

  private workers(): BundlePlacement[] {
    return this.bundles.filter((b) => b.holderPid !== 0);
  }

  /** Prints a line as the driver, then as each Ray worker actor would (with its prefix). */
  private printAll(line: string): void {
    print(line);
    for (const b of this.workers()) print(`${workerPrefix(b.holderPid, b.nodeIp)}${line}`);
  }

  // ------------------------------------------------------------------------------------------- ray
  private async acquirePlacementGroup(): Promise<void> {
    const { ray, ready } = await joinPlacementGroup(
      { dir: this.dir, tp: this.tp, driverIp: this.driverIp, memoryMiB: this.pace.memoryMiB },
      (channel) => (this.ray = channel),
    );
    this.bundles = ready.bundles;
    this.headMemoryMonitorDisabled = ready.headMemoryMonitorDisabled;
    this.ownGpus = ready.bundles.filter((b) => b.holderPid === 0).map((b) => b.gpuIndex);
    print(vllmLine('INFO', 'ray_utils.py:345', 'Using the existing placement group'));
    // From here on, losing a node or the head kills the engine, as a dead Ray actor does.
    ray.onMessage((msg) => {
      if (msg.type === 'placementGroupLost')
        this.actorDied(`node ${msg.nodeIp} (${msg.nodeId.slice(0, 6)}) died`);
    });
    ray.onClose(() => this.actorDied('the Ray cluster went away'));
  }

  private actorDied(reason: string): void {
    if (this.stopping) return;
    this.stopping = true;
    print(vllmLine('ERROR', 'core.py:932', `EngineCore encountered a fatal error: ${reason}.`));
    for (const line of traceback(
      [frames.executeMethod],
      'ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.',
      'vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.',
    )) {
      print(line);
    }
    this.api?.close();
    process.exit(1);
  }

  // ---------------------------------------------------------------------------------------- memory

  private checkFreeMemory(): void {
    const utilization = numberOption(this.parsed, 'gpu-memory-utilization') ?? 0.9;
    const checks: { free: number; total: number; prefix: string }[] = [];
    if (this.dir && this.cfg) {
      for (const gpu of this.ownGpus) {
        checks.push({
          free: freeGpuMemoryMiB(this.dir, gpu, this.cfg),
          total: this.cfg.gpuMemoryMiB,
          prefix: '',
        });
      }
    }
    for (const b of this.workers()) {
      if (b.freeMiB !== undefined && b.totalMiB !== undefined) {
        checks.push({ free: b.freeMiB, total: b.totalMiB, prefix: workerPrefix(b.holderPid, b.nodeIp) });
      }
    }
    const short = checks.find((c) => c.free < utilization * c.total);
    if (!short) return;
    const message = `ValueError: Free memory on device (${gib(short.free)}/${gib(short.total)} GiB) on startup is less than desired GPU memory utilization (${utilization}, ${gib(utilization * short.total)} GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.`;
    throw new FatalExit([
      ...traceback([frames.workerInit], message).map((l) => `${short.prefix}${l}`),
      ...(short.prefix ? [message] : []),
      ENGINE_INIT_FAILED,
    ]);
  }

  /** Ray's memory monitor kills the task first, unless RAY_memory_monitor_refresh_ms=0 switched it off at `ray start`. */
  private peerLost(m: Multinode, peerAddress: string): void {
    if (this.stopping) return;
    this.stopping = true;
    for (const line of peerLostLines(m, peerAddress)) print(line);
    this.group?.close();
    process.exit(1);
  }

  private outOfMemory(): string[] {
    const totalGb = ((this.cfg?.gpuMemoryMiB ?? 122_570) * 1.048576) / 1000;
    if (this.usesRay && !this.headMemoryMonitorDisabled) {
      const nodeId = this.bundles[0]?.nodeId.slice(0, 6) ?? '83e4b7';
      const usedGb = totalGb * 0.950345;
      return traceback(
        [frames.engineCore, frames.captureGraphs],
        `ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory. Memory on the node (IP: ${this.driverIp}, ID: ${nodeId}) where the task was running was ${usedGb.toFixed(2)}GB / ${totalGb.toFixed(2)}GB (0.950345), which exceeds the memory usage threshold of 0.95.`,
      );
    }
    const totalGib = (this.cfg?.gpuMemoryMiB ?? 122_570) / 1024;
    return [
      ...traceback(
        [frames.engineCore, frames.captureGraphs],
        `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of ${totalGib.toFixed(2)} GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has ${(totalGib - 1.23).toFixed(2)} GiB memory in use. Of the allocated memory ${(totalGib - 3.5).toFixed(2)} GiB is allocated by PyTorch, and 1.07 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)`,
      ),
      ENGINE_INIT_FAILED,
    ];
  }

  // ----------------------------------------------------------------------------------------- serve

  /**
   * Real vLLM binds every address when --host is unset or 0.0.0.0. In namespace mode that is this host alone;
   * in loopback mode all hosts share one network namespace, so bind the host's own IP instead.
   */
  private bindAddress(): string {
    const requested = this.parsed.values.get('host');
    if (!this.cfg) return requested ?? '127.0.0.1';
    const wildcard = requested === undefined || requested === '0.0.0.0' || requested === '::';
    if (!wildcard) return requested;
    return this.cfg.clusterIp.startsWith('127.') ? this.cfg.clusterIp : '0.0.0.0';
  }

  private async serve(): Promise<void> {
    const shownHost = this.parsed.values.get('host') ?? '0.0.0.0';
    print(
      vllmLine(
        'INFO',
        'api_server.py:1980',
        `Starting vLLM API server 0 on http://${shownHost}:${this.port}`,
      ),
    );
    for (const [route, methods] of [
      ['/health', 'GET'],
      ['/metrics', 'GET'],
      ['/v1/models', 'GET'],
      ['/version', 'GET'],
      ...postRoutesOf(this.kind).map((route) => [route, 'POST']),
    ]) {
      print(vllmLine('INFO', 'launcher.py:36', `Route: ${route}, Methods: ${methods}`));
    }
    const api = new VllmApi({
      model: this.model,
      servedNames: this.servedNames,
      maxModelLen:
        humanReadableInt(this.parsed.values.get('max-model-len')) ??
        (this.kind === 'generate' ? 262_144 : POOLING_MAX_MODEL_LEN),
      kind: this.kind,
      log: print,
      apiKey: this.parsed.values.get('api-key') ?? process.env.VLLM_API_KEY,
      completionFault: () => (this.dir ? readFaults(this.dir).completions : undefined),
      completionErrorSays: () => {
        const name = this.dir ? readFaults(this.dir).completionErrorPrintsEnv : undefined;
        return name ? `${name}=${process.env[name] ?? ''}` : undefined;
      },
      completionShape: () => {
        const faults = this.dir ? readFaults(this.dir) : {};
        return { reasoningParser: faults.reasoningParser, emptyText: faults.emptyCompletionText };
      },
      completionMs: (this.pace.completionSeconds ?? 0) * 1000,
    });
    const host = this.bindAddress();
    try {
      await api.listen(host, this.port);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const [errno, reason] =
        code === 'EADDRINUSE' ? [98, 'address already in use'] : [99, 'cannot assign requested address'];
      throw new FatalExit([
        `ERROR:    [Errno ${errno}] error while attempting to bind on address ('${host}', ${this.port}): ${reason}`,
      ]);
    }
    this.api = api;
    print(`INFO:     Started server process [${process.pid}]`);
    print('INFO:     Waiting for application startup.');
    print('INFO:     Application startup complete.');
  }

  private shutdown(): void {
    this.stopping = true;
    if (this.api) {
      print('INFO:     Shutting down');
      this.api.close();
      print('INFO:     Waiting for application shutdown.');
      print('INFO:     Application shutdown complete.');
      print(`INFO:     Finished server process [${process.pid}]`);
    }
    if (this.dir) for (const gpu of this.ownGpus) releaseGpuMemory(this.dir, process.pid, gpu);
    // Closing the driver connection makes the head release the workers' shares.
    this.ray?.close();
    this.group?.close();
    process.exit(0);
  }
}
