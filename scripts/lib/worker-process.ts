// A `liftoff worker` in its own process, so a test, the bench or a script can SIGKILL it the way a control host
// dies: no graceful shutdown, no chance to report anything to Temporal. Tooling shared by test/, bench/ and
// scripts/, not part of the product.
import { spawn, type ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { projectRoot } from '../../src/temporal/cli-path.js';

export interface WorkerProcessOptions {
  /** Temporal frontend, host:port (TEMPORAL_ADDRESS). */
  address?: string;
  /** TEMPORAL_NAMESPACE. */
  namespace?: string;
  /** The process's environment (default: this process's); address and namespace, when given, are set on top. */
  env?: NodeJS.ProcessEnv;
  /** LIFTOFF_WORKER_POLICY: the worker's policy file (what specs may make it reach). */
  workerPolicyPath?: string;
  taskQueue?: string;
  /** How long to wait for the `worker polling …` line. */
  readyTimeoutMs?: number;
}

export interface WorkerProcess {
  pid: number;
  /** The SDK's default worker identity (`<pid>@<hostname>`), as history events and describe() name it. */
  identity: string;
  /** When the process was spawned and when it printed its ready line (ms since epoch). */
  spawnedAtMs: number;
  readyAtMs: number;
  /** Everything the process printed so far (stdout and stderr, interleaved), for failure messages. */
  output(): string;
  running(): boolean;
  /** Sends the signal (default SIGKILL) and waits until the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const readyLine = /worker polling /;
const outputLimit = 64 * 1024;

// Children must not outlive the test process, even when it dies between `before` and `after`.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function startWorkerProcess(opts: WorkerProcessOptions): Promise<WorkerProcess> {
  const spawnedAtMs = Date.now();
  const args = ['bin/liftoff.js', 'worker', ...(opts.taskQueue ? ['--task-queue', opts.taskQueue] : [])];
  const child = spawn(process.execPath, args, {
    cwd: projectRoot,
    env: {
      // As the Dockerfile runs it (bin/liftoff.js says why); a caller's own value wins.
      MALLOC_ARENA_MAX: '2',
      ...(opts.env ?? process.env),
      ...(opts.address === undefined ? {} : { TEMPORAL_ADDRESS: opts.address }),
      ...(opts.namespace === undefined ? {} : { TEMPORAL_NAMESPACE: opts.namespace }),
      ...(opts.workerPolicyPath === undefined ? {} : { LIFTOFF_WORKER_POLICY: opts.workerPolicyPath }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not spawn `liftoff worker`');
  live.add(child);

  let text = '';
  const append = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    if (text.length > outputLimit) text = text.slice(-outputLimit);
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      live.delete(child);
      resolve();
    }),
  );

  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const readyAtMs = await new Promise<number>((resolve, reject) => {
    const check = () => {
      if (readyLine.test(text)) {
        done();
        resolve(Date.now());
      }
    };
    const timer = setTimeout(() => {
      done();
      child.kill('SIGKILL');
      reject(
        new Error(`liftoff worker (pid ${pid}) not ready within ${readyTimeoutMs} ms; output:\n${text}`),
      );
    }, readyTimeoutMs);
    const onExit = () => {
      done();
      reject(
        new Error(
          `liftoff worker (pid ${pid}) exited before it was ready (code ${exit?.code}, signal ${exit?.signal}); output:\n${text}`,
        ),
      );
    };
    function done() {
      clearTimeout(timer);
      child.stdout.off('data', check);
      child.stderr.off('data', check);
      child.off('exit', onExit);
    }
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.once('exit', onExit);
    check();
  });

  return {
    pid,
    identity: `${pid}@${hostname()}`,
    spawnedAtMs,
    readyAtMs,
    output: () => text,
    running: () => exit === undefined,
    kill: async (signal: NodeJS.Signals = 'SIGKILL') => {
      if (exit === undefined) child.kill(signal);
      await exited;
    },
  };
}
