// What one call of a simulated tool sees of its caller: environment, stdout and stderr, and the caller's pid.
// A tool run as its own process (the node bundle, main.ts) sees its process's; a call the host's tool server
// (server.ts) runs in-process sees the caller's, which the thin client sent, while other calls run beside it.
// The tools the server runs read these through toolIo() and never process.env / process.stdout / process.pid.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ToolIo {
  /** The caller's environment (LIFTOFF_SIM_HOST_DIR names the host). */
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: (chunk: string | Uint8Array) => void;
  readonly stderr: (chunk: string | Uint8Array) => void;
  /** The caller's pid: the process a log line names, and the one a scan for a container's members must skip. */
  readonly pid: number;
}

const processIo: ToolIo = {
  get env() {
    return process.env;
  },
  stdout: (chunk) => void process.stdout.write(chunk),
  stderr: (chunk) => void process.stderr.write(chunk),
  get pid() {
    return process.pid;
  },
};

const callIo = new AsyncLocalStorage<ToolIo>();

/** The current call's view of its caller. */
export function toolIo(): ToolIo {
  return callIo.getStore() ?? processIo;
}

/** Runs `call` (and every callback it schedules) as a call of the caller `io` describes. */
export function runWithToolIo<T>(io: ToolIo, call: () => T): T {
  return callIo.run(io, call);
}

let tmpCounter = 0;

/**
 * A temp-file suffix unique to this write: the pid alone is not, in a tool server where calls run side by side
 * and may write the same record within one millisecond.
 */
export function uniqueTmpSuffix(): string {
  tmpCounter += 1;
  return `${process.pid}.${Date.now()}.${tmpCounter}`;
}
