// The remote commands of steps 5–11 (the Ray containers, `vllm serve`, the health polls and the smoke test),
// shared by the activities that run them and by `liftoff plan`, which shows them.
import { raw, sh, type RawShell, type RemoteCommand } from '../ssh/quote.js';
import { pipelineParallelSize } from '../config/backend.js';
import type { EnvTransport } from './env-transport.js';
import type { EnvSpec } from '../config/schema.js';
import type { HostRef } from '../config/targets.js';
import type { RayCount } from '../parsers/ray-status.js';

/** A Ray container to start on one host (head or worker), from the spec. */
export interface RayContainerInput {
  host: HostRef;
  cluster: string;
  launchId: string;
  image: string;
  container: string;
  port: number;
  clusterIp: string;
  env: EnvSpec;
  volumes: string[];
  gpus: number;
  /** Workers only: the head's clusterIp:port. */
  headAddress?: string;
}

/** What the marker file `<logPath>.liftoff.json` on the head holds. */
export interface ServeMarker {
  launchId: string;
  pid: number;
  startedAt: number;
}

/**
 * The head's last look before a launch, parsed and bounded: what verifyRayCluster returns and the workflow passes
 * to launchServe. Ray's counts only (the look is passed on only when Ray's verdict passed), the marker's content,
 * and whether its pid runs.
 */
export interface HeadLook {
  /** The worker's clock when the head answered, in ms. */
  atMs: number;
  host: string;
  container: string;
  markerPath: string;
  ray: RayCount;
  /** Absent: no marker, or one that liftoff did not write. */
  marker?: ServeMarker;
  /** Absent: the read beside the marker did not check the marker's pid; ask on its own. */
  markerPidAlive?: boolean;
}

/** `vllm serve` to launch in the head's Ray container. */
export interface LaunchServeInput {
  head: HostRef;
  clusterIp: string;
  container: string;
  launchId: string;
  model: string;
  servedModelName?: string;
  port: number;
  tensorParallelSize: number;
  args: string[];
  env: EnvSpec;
  logPath: string;
  rayPort: number;
  /** verifyRayCluster's last look at the head, passed on by the workflow: the launch then reads the head only when it is old. */
  headLook?: HeadLook;
}

// How much of each log the deploy reads, and how long the smoke test waits: the activities use these, and
// `liftoff plan` shows the commands they lead to.
/** Lines of a Ray container's log read while confirming it started. */
export const rayConfirmLogLines = 50;
/** Lines of a worker's container log verifyRayCluster reads for why it has not joined. */
export const workerJoinLogLines = 200;
/** Lines of the serve log each health poll returns. */
export const serveTailLines = 40;
/** At most this much new log is read per poll; a bigger backlog is read over the next polls. */
export const maxLogChunkBytes = 256 * 1024;
/** The smoke test's one chat completion. */
export const smokeRequestTimeoutS = 120;

/** `http://ip:port`, with brackets for an IPv6 address. */
export function baseUrl(clusterIp: string, port: number): string {
  return `http://${clusterIp.includes(':') ? `[${clusterIp}]` : clusterIp}:${port}`;
}

export const inspectContainerCommand = (name: string): RemoteCommand =>
  sh`docker inspect --type container -- ${name}`;

/** A container log tail is cut to this many bytes on the host, whatever the length of its lines. */
export const maxContainerLogBytes = 64 * 1024;

/**
 * Reads the last lines a container printed (stdout and stderr together), and at most maxContainerLogBytes of
 * them. Its exit status is the cut's: a missing container shows as docker's error text.
 */
export const containerLogTailCommand = (name: string, lines: number = rayConfirmLogLines): RemoteCommand =>
  sh`docker logs --tail ${lines} -- ${name} 2>&1 | tail -c ${maxContainerLogBytes}`;

export const removeContainerCommand = (name: string): RemoteCommand => sh`docker rm -f -- ${name}`;

export const rayStatusCommand = (container: string): RemoteCommand => sh`docker exec ${container} ray status`;

export type RayRole = 'head' | 'worker';

function rayStartArgs(input: RayContainerInput, role: RayRole): string[] {
  const common = ['--node-ip-address', input.clusterIp, '--num-gpus', String(input.gpus)];
  return role === 'head'
    ? ['start', '--head', '--block', '--port', String(input.port), ...common]
    : ['start', '--block', '--address', input.headAddress ?? '', ...common];
}

/** The Ray node's container; `transport` carries its env (secret values on stdin, never in this text). */
export function rayRunCommand(
  input: RayContainerInput,
  role: RayRole,
  transport: EnvTransport,
): RemoteCommand {
  return sh`${transport.prelude} docker run -d --name ${input.container} --gpus all --network host --ipc host ${launchLabels(input, `liftoff.role=${role}`)} ${transport.flags} ${input.volumes.flatMap((v) => ['-v', v])} --entrypoint ray ${input.image} ${rayStartArgs(input, role)}`;
}

/** The labels cleanup and teardown find a launch's containers by: its cluster, its launch and its role. */
export function launchLabels(input: { cluster: string; launchId: string }, ...more: string[]): string[] {
  const labels = [`liftoff.cluster=${input.cluster}`, `liftoff.launch=${input.launchId}`, ...more];
  return labels.flatMap((l) => ['--label', l]);
}

/** How often the confirm looks for `ray start`'s banner, and how long it waits for it in all. */
export const rayConfirmPollSeconds = 0.25;
export const rayConfirmWindowSeconds = 3;

/**
 * Holds on the host once `ray start` printed its banner or the container stopped: when the confirm may read.
 * A fixed string (grep -F); the banner itself is judged by the activity on what the read returns.
 */
export const rayStartSettledCommand = (container: string): RemoteCommand =>
  sh`docker logs --tail ${rayConfirmLogLines} -- ${container} 2>&1 | grep -qF ${'Ray runtime started.'} || [ "$(docker inspect --type container --format ${'{{.State.Running}}'} -- ${container} 2>/dev/null)" != true ]`;

export function serveArgv(input: LaunchServeInput): string[] {
  // One worker process needs no distributed executor, and platforms without Ray support (vLLM's CPU
  // build) refuse the flag; past one, the workers are placed over the Ray cluster liftoff started.
  const distributed = input.tensorParallelSize * pipelineParallelSize(input.args) > 1;
  return [
    'vllm',
    'serve',
    input.model,
    '--port',
    String(input.port),
    '--tensor-parallel-size',
    String(input.tensorParallelSize),
    ...(distributed ? ['--distributed-executor-backend', 'ray'] : []),
    ...(input.servedModelName ? ['--served-model-name', input.servedModelName] : []),
    ...input.args,
  ];
}

export function markerPathFor(logPath: string): string {
  return `${logPath}.liftoff.json`;
}

const markerMaxBytes = 4096;
/** A log tail is cut to this many bytes on the host, whatever the length of its lines. */
export const maxTailBytes = 64 * 1024;
/** The launch command's exit status when the log or its marker is a symbolic link. */
export const symlinkExit = 4;

export const readMarkerCommand = (path: string): RemoteCommand => sh`head -c ${markerMaxBytes} -- ${path}`;

/**
 * Whether the process the marker names still runs, read beside the marker so that a launch over an earlier
 * launch's marker needs no round trip of its own. Prints the pid it checked, for the caller to match against the
 * marker it parsed; exit 0 alive, 1 gone, 2 no pid in the marker. The marker is the launch command's one line
 * (serveLaunchCommand), read with the same bound as readMarkerCommand.
 */
export const markerPidAliveCommand = (path: string): RemoteCommand =>
  sh`__p=$(head -c ${markerMaxBytes} -- ${path} 2>/dev/null | sed -n ${'s/.*"pid":\\([0-9]\\{1,9\\}\\),.*/\\1/p'} | head -n 1); case "$__p" in ''|0|*[!0-9]*) exit 2;; esac; printf '%s\\n' "$__p"; ${pidAliveCommand(raw('"$__p"'))}`;

/**
 * Whether a pid runs on the host: its /proc status is there and names a state other than zombie (dead, not reaped
 * yet) or dead. Not `kill -0`: a non-root SSH user gets "Operation not permitted" for a process of another user (a
 * container's main process belongs to root), which reads as gone; /proc/PID/status is readable by every user.
 */
export const pidAliveCommand = (pid: number | RawShell): RemoteCommand =>
  sh`grep -qs '^State:[[:space:]]*[^ZX[:space:]]' /proc/${pid}/status || false`;

/**
 * Reads the serve log's last lines, and at most maxTailBytes of them: one line can be any length. Every read of
 * the log's tail (health, diagnostics, the failure bundle) is this command.
 */
export const serveLogTailCommand = (logPath: string, lines: number = serveTailLines): RemoteCommand =>
  sh`tail -n ${lines} -- ${logPath} | tail -c ${maxTailBytes}`;

/**
 * One command runs `start` (its last process detached, its output the log) and writes the marker with that pid, so
 * no retry can fall between the two; only if neither the log nor the marker is a symbolic link (the log is
 * truncated). `startedAt` is the launch time in ms; `liftoff plan`, which runs nothing, passes a placeholder.
 */
export function markedLaunchCommand(
  input: { logPath: string; launchId: string },
  transport: EnvTransport,
  startedAt: number | RawShell,
  start: RemoteCommand,
): RemoteCommand {
  const markerPath = markerPathFor(input.logPath);
  const markerFormat = '{"launchId":%s,"pid":%s,"startedAt":%s}\n';
  return sh`${transport.prelude} if [ -L ${input.logPath} ] || [ -L ${markerPath} ]; then exit ${symlinkExit}; fi; : > ${input.logPath} || exit 3; ${start} > ${input.logPath} 2>&1 < /dev/null & pid=$!; printf ${markerFormat} ${JSON.stringify(input.launchId)} ${raw('"$pid"')} ${startedAt} > ${markerPath} && echo "$pid"`;
}

export function serveLaunchCommand(
  input: LaunchServeInput,
  transport: EnvTransport,
  startedAt: number | RawShell,
): RemoteCommand {
  const start = sh`setsid nohup docker exec ${transport.flags} ${input.container} ${serveArgv(input)}`;
  return markedLaunchCommand(input, transport, startedAt, start);
}

export const healthCommand = (url: string): RemoteCommand =>
  sh`curl -sS --max-time 5 -o /dev/null -w ${'%{http_code}'} ${`${url}/health`}`;

/** The Authorization header comes on stdin (`-H @-`): the key never appears on a command line. */
export const modelsCommand = (url: string): RemoteCommand =>
  sh`curl -sS --max-time 5 -H @- ${`${url}/v1/models`}`;

export const smokeTimingMarker = '\n__liftoff_time_total=';

/**
 * The body goes on stdin, after one header line (empty without a key) that the shell's `read` takes and
 * `printf` (a builtin) writes into a pipe that curl reads as its header file on fd 3: neither the prompt nor
 * the key becomes part of a command line, and no file holds the key, so a killed command leaves none.
 */
export function smokeCommand(url: string, timeoutS: number, timingMarker: string): RemoteCommand {
  return headerLineFromStdin(
    sh`curl -sS --max-time ${timeoutS} -H ${'Content-Type: application/json'} -H @/dev/fd/3 --data-binary @- -w ${`${timingMarker}%{time_total}\\n%{http_code}`} ${url}`,
  );
}

/** Runs `curl` with the first stdin line (the header line, maybe empty) on its fd 3 and the rest on its stdin. */
export function headerLineFromStdin(curl: RemoteCommand): RemoteCommand {
  return sh`IFS= read -r auth; { printf '%s\n' "$auth" | { ${curl} 3<&0 <&4 4<&-; }; } 4<&0`;
}
