// `docker exec`: attached, the command runs here with the container's environment; detached (-d), the
// container's shim starts it, so it joins the container's process group.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { hostDir, readJson, writeJson } from '../../host-state.js';
import type { FlagSpecs } from './args.js';
import { err, noSuchContainer, out, parseEnv, parseOrFail, requireArgs } from './cli.js';
import { resolveExecutable, sleep } from './procs.js';
import {
  containerEnv,
  containerPaths,
  findContainer,
  isRunning,
  notFoundError,
  observedContainer,
  type ExecRequest,
  type ExecResponse,
  shimAlive,
} from './state.js';
import { toolIo } from '../io.js';

const execFlags: FlagSpecs = {
  detach: { short: 'd' },
  env: { short: 'e', value: true },
  interactive: { short: 'i' },
  tty: { short: 't' },
  user: { short: 'u', value: true },
  workdir: { short: 'w', value: true },
  privileged: {},
  'detach-keys': { value: true },
};

export async function cmdExec(args: string[]): Promise<number> {
  const f = parseOrFail('exec', args, execFlags, false);
  if (typeof f === 'number') return f;
  const [ref, ...argv] = f.positionals;
  const missing = requireArgs('exec', '[OPTIONS] CONTAINER COMMAND [ARG...]', f.positionals.length, 2);
  if (missing !== undefined || !ref) return missing ?? 1;
  const dir = hostDir();
  const found = findContainer(dir, ref);
  const rec = found && observedContainer(dir, found);
  if (!rec) {
    err(noSuchContainer(ref));
    return 1;
  }
  if (!isRunning(rec)) {
    err(`Error response from daemon: Container ${rec.id} is not running`);
    return 1;
  }
  const extraEnv = parseEnv(f.all('env'));
  const workdir = f.get('workdir') ?? rec.workdir;

  if (f.has('detach')) {
    const execDir = containerPaths.exec(dir, rec.name);
    mkdirSync(execDir, { recursive: true });
    const id = randomBytes(8).toString('hex');
    const request: ExecRequest = { argv, env: extraEnv, workdir };
    // Written under another name first: the shim only picks up complete *.req.json files.
    writeJson(join(execDir, `${id}.pending`), request);
    renameSync(join(execDir, `${id}.pending`), join(execDir, `${id}.req.json`));
    const resFile = join(execDir, `${id}.res.json`);
    const deadline = Date.now() + 10_000;
    let response: ExecResponse | undefined;
    while (!(response = readJson<ExecResponse>(resFile))) {
      if (!shimAlive(rec) || Date.now() > deadline) {
        rmSync(join(execDir, `${id}.req.json`), { force: true });
        err(`Error response from daemon: Container ${rec.id} is not running`);
        return 1;
      }
      await sleep(20);
    }
    for (const suffix of ['.res.json', '.taken']) rmSync(join(execDir, `${id}${suffix}`), { force: true });
    if ('error' in response) {
      err(`Error response from daemon: ${response.error}`);
      return 1;
    }
    return 0;
  }

  const env = containerEnv(rec, { ...toolIo().env, LIFTOFF_SIM_HOST_DIR: dir }, extraEnv);
  const [command, ...rest] = argv;
  if (!command || !resolveExecutable(command, env.PATH)) {
    // 20.10 prints this on stdout, with the terminal's line end, and exits 126.
    out(`${notFoundError(command ?? '', 'exec')}\r\n`);
    return 126;
  }
  const child = spawn(command, rest, {
    env,
    stdio: [f.has('interactive') ? 'inherit' : 'ignore', 'inherit', 'inherit'],
    cwd: workdir ?? '/',
  });
  return new Promise((resolve) => {
    child.once('error', (e) => {
      err(e.message);
      resolve(126);
    });
    child.once('exit', (code, signal) => resolve(code ?? (signal === 'SIGKILL' ? 137 : 143)));
  });
}
