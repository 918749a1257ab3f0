// `docker run`: records the container, starts its container-shim (the container's init) in a new session and,
// attached, streams its output until it exits. As on Docker 20.10: a `-v` bind source that is missing is created
// (an empty folder), and a container that fails to start stays behind `Created` unless --rm.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { hostDir, isAlive, readHostConfig } from '../../host-state.js';
import type { FlagSpecs } from './args.js';
import { err, out, parseEnv, parseOrFail, requireArgs, runError } from './cli.js';
import { copyFrom } from './logs.js';
import { sleep, spawnDetached, toolCommand } from './procs.js';
import {
  containerPaths,
  createContainer,
  findImage,
  normaliseImage,
  readContainer,
  recordContainerCreated,
  removeContainerState,
  updateContainer,
  type ContainerRecord,
  type MountRecord,
} from './state.js';
import { toolIo } from '../io.js';

const runFlags: FlagSpecs = {
  detach: { short: 'd' },
  name: { value: true },
  rm: {},
  env: { short: 'e', value: true },
  entrypoint: { value: true },
  volume: { short: 'v', value: true },
  mount: { value: true },
  label: { short: 'l', value: true },
  gpus: { value: true },
  network: { value: true },
  net: { value: true },
  ipc: { value: true },
  pid: { value: true },
  'shm-size': { value: true },
  restart: { value: true },
  privileged: {},
  interactive: { short: 'i' },
  tty: { short: 't' },
  workdir: { short: 'w', value: true },
  user: { short: 'u', value: true },
  hostname: { short: 'h', value: true },
  ulimit: { value: true },
  'cap-add': { value: true },
  device: { value: true },
  runtime: { value: true },
  publish: { short: 'p', value: true },
  pull: { value: true },
  init: {},
  'security-opt': { value: true },
};

const namePattern = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;

function randomName(): string {
  const left = [
    'admiring',
    'brave',
    'clever',
    'eager',
    'festive',
    'gallant',
    'jolly',
    'keen',
    'quirky',
    'zen',
  ];
  const right = [
    'turing',
    'hopper',
    'lovelace',
    'curie',
    'noether',
    'shannon',
    'knuth',
    'ritchie',
    'dijkstra',
  ];
  const pick = (xs: string[]) => xs[randomBytes(1)[0]! % xs.length]!;
  return `${pick(left)}_${pick(right)}`;
}

function parseMounts(volumes: string[], mounts: string[]): MountRecord[] | string {
  const result: MountRecord[] = [];
  for (const v of volumes) {
    const parts = v.split(':');
    const [source, destination, opts] = parts;
    if (!source || !destination || parts.length > 3) return `invalid volume specification: '${v}'`;
    const readOnly = (opts ?? '').split(',').includes('ro');
    if (!source.startsWith('/')) {
      result.push({ type: 'volume', source, destination, readOnly });
      continue;
    }
    // The engine makes a missing -v source an empty folder (root's, on a real host) and mounts that: only
    // --mount refuses it. liftoff's preflight must refuse it first.
    if (!existsSync(source)) mkdirSync(source, { recursive: true });
    result.push({ type: 'bind', source, destination, readOnly });
  }
  for (const m of mounts) {
    const fields = new Map<string, string>();
    for (const kv of m.split(',')) {
      const eq = kv.indexOf('=');
      fields.set(eq < 0 ? kv : kv.slice(0, eq), eq < 0 ? 'true' : kv.slice(eq + 1));
    }
    const type = fields.get('type') ?? 'volume';
    const source = fields.get('source') ?? fields.get('src') ?? '';
    const destination = fields.get('target') ?? fields.get('destination') ?? fields.get('dst') ?? '';
    if (!destination) return `invalid argument "${m}" for "--mount" flag: target is required`;
    const readOnly = ['readonly', 'ro'].some((k) => fields.has(k) && fields.get(k) !== 'false');
    if (type === 'bind' && !existsSync(source))
      return `invalid mount config for type "bind": bind source path does not exist: ${source}`;
    result.push({ type: type === 'bind' ? 'bind' : 'volume', source, destination, readOnly });
  }
  return result;
}

function parseLabels(labels: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of labels) {
    const eq = l.indexOf('=');
    out[eq < 0 ? l : l.slice(0, eq)] = eq < 0 ? '' : l.slice(eq + 1);
  }
  return out;
}

async function waitStarted(dir: string, name: string, shimPid: number): Promise<ContainerRecord | undefined> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const rec = readContainer(dir, name);
    if (!rec || rec.status !== 'created' || rec.error) return rec;
    if (!isAlive(shimPid) || Date.now() > deadline) return rec;
    await sleep(15);
  }
}

/**
 * A container that was created but did not start: detached, its ID is printed first (it exists); it stays
 * `Created` unless --rm; the error comes without docker's pointer to --help.
 */
function notStarted(dir: string, rec: ContainerRecord, detach: boolean, error: string, code: number): number {
  if (detach) out(`${rec.id}\n`);
  if (rec.hostConfig.autoRemove) removeContainerState(dir, rec.name);
  return runError('run', `Error response from daemon: ${error}`, code, false);
}

export async function cmdRun(args: string[]): Promise<number> {
  const f = parseOrFail('run', args, runFlags, false);
  if (typeof f === 'number') return f;
  const [image, ...cmdArgs] = f.positionals;
  const missing = requireArgs('run', '[OPTIONS] IMAGE [COMMAND] [ARG...]', f.positionals.length, 1);
  if (missing !== undefined || !image) return missing ?? 1;

  const dir = hostDir();
  const cfg = readHostConfig(dir);
  const restart = f.get('restart') ?? 'no';
  if (f.has('rm') && restart !== 'no')
    return runError('run', 'Conflicting options: --restart and --rm.', 125);
  if (!/^(no|always|unless-stopped|on-failure(:\d+)?)$/.test(restart))
    return runError('run', `invalid restart policy: ${restart}`, 125);
  let name = f.get('name') ?? randomName();
  if (!namePattern.test(name))
    return runError(
      'run',
      `Error response from daemon: Invalid container name (${name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed.`,
      125,
    );

  const resolvedImage = findImage(cfg, image);
  if (!resolvedImage && f.get('pull') === 'never')
    return runError('run', `Error response from daemon: No such image: ${normaliseImage(image)}`, 125);
  if (!resolvedImage) {
    err(`Unable to find image '${normaliseImage(image)}' locally`);
    const repo = normaliseImage(image).replace(/:[^:/]+$/, '');
    return runError(
      'run',
      `Error response from daemon: pull access denied for ${repo}, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`,
      125,
    );
  }
  const mounts = parseMounts(f.all('volume'), f.all('mount'));
  if (typeof mounts === 'string') return runError('run', `Error response from daemon: ${mounts}`, 125);
  const gpus = f.get('gpus') ?? null;

  const entrypoint = f.get('entrypoint');
  const rec: ContainerRecord = {
    id: randomBytes(32).toString('hex'),
    name,
    image,
    created: new Date().toISOString(),
    entrypoint: entrypoint === undefined ? null : entrypoint.split(/\s+/).filter(Boolean),
    args: cmdArgs,
    env: parseEnv(f.all('env')),
    labels: parseLabels(f.all('label')),
    mounts,
    workdir: f.get('workdir') ?? null,
    hostConfig: {
      networkMode: f.get('network') ?? f.get('net') ?? 'bridge',
      ipcMode: f.get('ipc') ?? 'private',
      shmSize: f.get('shm-size') ?? null,
      restart,
      gpus,
      autoRemove: f.has('rm'),
      privileged: f.has('privileged'),
    },
    status: 'created',
    pgid: 0,
    pid: 0,
    exitCode: 0,
    error: '',
    startedAt: null,
    finishedAt: null,
  };
  let created = createContainer(dir, rec);
  // A generated name that is taken (runs at once on one host draw from a few dozen) is drawn again, as the daemon
  // does (it retries, then adds a number): only a name the user chose conflicts.
  for (let attempt = 1; !created && f.get('name') === undefined && attempt <= 20; attempt++) {
    name = `${randomName()}${attempt > 5 ? String(attempt) : ''}`;
    rec.name = name;
    created = createContainer(dir, rec);
  }
  if (!created) {
    const holder = readContainer(dir, name);
    return runError(
      'run',
      `Error response from daemon: Conflict. The container name "/${name}" is already in use by container "${holder?.id ?? ''}". You have to remove (or rename) that container to be able to reuse that name.`,
      125,
    );
  }
  recordContainerCreated(dir, rec);

  // The engine finds it has no GPU device driver only when it starts the container it created.
  if (gpus !== null && cfg.gpuCount === 0) {
    const error = 'could not select device driver "" with capabilities: [[gpu]]';
    updateContainer(dir, name, (r) => {
      r.error = error;
      r.exitCode = 128;
    });
    return notStarted(dir, rec, f.has('detach'), error, 125);
  }

  // An attached run reads the output through its own descriptor: with --rm the file is unlinked at exit.
  const attachFd = f.has('detach') ? undefined : openSync(containerPaths.log(dir, name), 'a+');
  const shim = toolCommand('container-shim');
  const shimEnv = { ...toolIo().env, LIFTOFF_SIM_HOST_DIR: dir };
  const detach = f.has('detach');
  let shimPid: number;
  let shimExit: Promise<number> | undefined;
  if (detach) {
    shimPid = spawnDetached([shim.command, ...shim.args, name], { env: shimEnv, logFd: 'ignore' });
  } else {
    const child = spawn(shim.command, [...shim.args, name], {
      detached: true,
      stdio: 'ignore',
      env: shimEnv,
    });
    shimPid = child.pid ?? 0;
    shimExit = new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 137)));
  }

  const started = await waitStarted(dir, name, shimPid);
  if (started?.error) return notStarted(dir, rec, detach, started.error, started.exitCode || 127);
  if (started?.status === 'created')
    return notStarted(dir, rec, detach, 'failed to start container: the runtime did not report a start', 125);
  if (detach) {
    out(`${rec.id}\n`);
    return 0;
  }
  // Attached: stream the container's output until it exits, then exit with its code.
  const source = attachFd ?? containerPaths.log(dir, name);
  let offset = 0;
  let done = false;
  const code = shimExit ? shimExit.then((c) => ((done = true), c)) : Promise.resolve(0);
  while (!done) {
    offset = copyFrom(source, offset);
    await Promise.race([sleep(100), code]);
  }
  copyFrom(source, offset);
  if (attachFd !== undefined) closeSync(attachFd);
  return code;
}
