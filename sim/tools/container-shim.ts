// `container-shim NAME`: the init of a simulated container. docker starts it in a new session, so its process
// group is the container. It runs the main command as its child, serves `docker exec -d` requests so those
// processes join the group, and when the main command exits it kills whatever is left (as the runtime does when
// a container's PID 1 dies), records the exit and, with --rm, removes the container.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { constants } from 'node:os';
import { hostDir, safeReaddir, writeJson } from '../host-state.js';
import { startTicks } from '../pid-namespace.js';
import { containerTagVar, killAll, resolveExecutable } from './docker/procs.js';
import {
  containerEnv,
  containerPaths,
  mainCommand,
  notFoundError,
  readContainer,
  removeContainerState,
  updateContainer,
  type ContainerRecord,
  type ExecRequest,
  type ExecResponse,
} from './docker/state.js';
import type { ToolMain } from './tool.js';

const execPollMs = 100;

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const signo = signal ? (constants.signals as Record<string, number>)[signal] : undefined;
  return 128 + (signo ?? 9);
}

function serveExecRequests(dir: string, rec: ContainerRecord, children: Set<ChildProcess>): void {
  const execDir = containerPaths.exec(dir, rec.name);
  for (const file of safeReaddir(execDir)) {
    if (!file.endsWith('.req.json')) continue;
    const id = file.slice(0, -'.req.json'.length);
    const taken = join(execDir, `${id}.taken`);
    try {
      renameSync(join(execDir, file), taken);
    } catch {
      continue;
    }
    let response: ExecResponse;
    try {
      const req = JSON.parse(readFileSync(taken, 'utf8')) as ExecRequest;
      const env = containerEnv(rec, process.env, req.env);
      const [command, ...args] = req.argv;
      if (!command || !resolveExecutable(command, env.PATH)) {
        response = { error: notFoundError(command ?? '', 'exec') };
      } else {
        // Output of a detached exec goes nowhere, as with real docker.
        const child = spawn(command, args, { env, stdio: 'ignore', cwd: req.workdir ?? '/' });
        children.add(child);
        child.on('error', () => children.delete(child));
        child.on('exit', () => children.delete(child));
        response = child.pid !== undefined ? { pid: child.pid } : { error: `cannot start ${command}` };
      }
    } catch (err) {
      response = { error: err instanceof Error ? err.message : String(err) };
    }
    writeJson(join(execDir, `${id}.res.json`), response);
  }
}

export const main: ToolMain = async (args) => {
  const [name] = args;
  const dir = hostDir();
  const rec = name ? readContainer(dir, name) : undefined;
  if (!name || !rec) {
    process.stderr.write(`container-shim: no such container: ${name ?? '(none)'}\n`);
    return 1;
  }
  const env = containerEnv(rec, process.env);
  const [command, ...commandArgs] = mainCommand(rec);
  if (!command || !resolveExecutable(command, env.PATH)) {
    updateContainer(dir, name, (r) => {
      r.error = notFoundError(command ?? '', 'run');
      r.exitCode = 127;
    });
    return 127;
  }

  const logFd = openSync(containerPaths.log(dir, name), 'a');
  const child = spawn(command, commandArgs, {
    env,
    stdio: ['ignore', logFd, logFd],
    cwd: rec.workdir ?? '/',
  });
  closeSync(logFd);
  if (child.pid === undefined) {
    const failure = await new Promise<Error>((resolve) => child.once('error', resolve));
    updateContainer(dir, name, (r) => {
      r.error = failure.message;
      r.exitCode = 127;
    });
    return 127;
  }
  updateContainer(dir, name, (r) => {
    r.status = 'running';
    r.pid = child.pid ?? 0;
    r.pgid = process.pid;
    r.pgidStartTicks = startTicks('self');
    r.startedAt = new Date().toISOString();
  });

  // `docker stop` signals the main process only; the shim outlives it to record the exit.
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const) process.on(sig, () => {});

  mkdirSync(containerPaths.exec(dir, name), { recursive: true });
  const execChildren = new Set<ChildProcess>();
  const poll = setInterval(() => serveExecRequests(dir, rec, execChildren), execPollMs);

  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  clearInterval(poll);
  const exitCode = exitCodeOf(code, signal);
  // What is left dies before the exit is recorded, as the kernel ends a PID namespace's processes before the
  // runtime reports its init's exit: a `docker inspect` that reads "exited" finds nothing of it running (one
  // served by the host's tool server answers within milliseconds of the exit).
  await killAll({ pgid: process.pid, tagVar: containerTagVar, tagValue: rec.id });
  updateContainer(dir, name, (r) => {
    r.status = 'exited';
    r.exitCode = exitCode;
    r.finishedAt = new Date().toISOString();
  });
  if (rec.hostConfig.autoRemove) removeContainerState(dir, name);
  return exitCode;
};
