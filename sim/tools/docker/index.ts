// Simulated docker CLI. A container is the process group of a container-shim (see container-shim.ts) plus
// every process tagged with the container id; state lives in the host's containers/ folder. Output and
// error messages follow the real CLI (docker 28), because product code parses them.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { hostDir, isAlive, readHostConfig, readJson, writeJson, type HostConfig } from '../../host-state.js';
import { FlagError, parseFlags, type FlagSpecs, type ParsedFlags } from './args.js';
import {
  TemplateError,
  goTimeString,
  humanDuration,
  humanSize,
  renderList,
  renderTemplate,
} from './format.js';
import { resolveExecutable, sleep, spawnDetached, toolCommand } from './procs.js';
import {
  containerEnv,
  containerPaths,
  createContainer,
  findContainer,
  findImage,
  imageId,
  isRunning,
  killContainerProcesses,
  listContainers,
  mainCommand,
  normaliseImage,
  notFoundError,
  observedContainer,
  readContainer,
  recordContainerCreated,
  removeContainerState,
  updateContainer,
  zeroTime,
  type ContainerRecord,
  type ExecRequest,
  type ExecResponse,
  type MountRecord,
} from './state.js';
import type { ToolMain } from '../tool.js';

const dockerVersion = '28.5.1';
const apiVersion = '1.51';

function out(text: string): void {
  process.stdout.write(text);
}

function err(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** `docker run`/`docker exec` report daemon errors with a "docker: " prefix and a pointer to --help. */
function runError(cmd: string, message: string, code: number): number {
  err(`docker: ${message}\n\nRun 'docker ${cmd} --help' for more information`);
  return code;
}

function noSuchContainer(ref: string): string {
  return `Error response from daemon: No such container: ${ref}`;
}

function parseOrFail(
  cmd: string,
  args: string[],
  specs: FlagSpecs,
  interspersed = true,
): ParsedFlags | number {
  try {
    const parsed = parseFlags(args, { help: {}, ...specs }, interspersed);
    if (!parsed.has('help')) return parsed;
    out(`\nUsage:  docker ${cmd} [OPTIONS]\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    err(`${e.message}\nSee 'docker ${cmd} --help'.`);
    return 125;
  }
}

function requireArgs(
  cmd: string,
  usage: string,
  got: number,
  min: number,
  exactly = false,
): number | undefined {
  if (exactly ? got === min : got >= min) return undefined;
  const what = min === 1 ? '1 argument' : `${min} arguments`;
  err(
    `"docker ${cmd}" requires ${exactly ? 'exactly' : 'at least'} ${what}.\nSee 'docker ${cmd} --help'.\n\nUsage:  docker ${cmd} ${usage}`,
  );
  return 1;
}

function withTemplate(render: () => string): number {
  try {
    out(render());
    return 0;
  } catch (e) {
    if (!(e instanceof TemplateError)) throw e;
    err(`template parsing error: ${e.message}`);
    return 1;
  }
}

// ---------------------------------------------------------------------------------------------- run

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
    if (!source || !destination || parts.length > 3) return `invalid spec: ${v}: too many colons`;
    const readOnly = (opts ?? '').split(',').includes('ro');
    if (!source.startsWith('/')) {
      result.push({ type: 'volume', source, destination, readOnly });
      continue;
    }
    if (!existsSync(source))
      return `invalid mount config for type "bind": bind source path does not exist: ${source}`;
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

/** `-e K` without a value takes K from the caller's environment; unset, it is dropped, as docker does. */
function parseEnv(values: string[]): string[] {
  return values.flatMap((v) => {
    if (v.includes('=')) return [v];
    const fromCaller = process.env[v];
    return fromCaller === undefined ? [] : [`${v}=${fromCaller}`];
  });
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

async function cmdRun(args: string[]): Promise<number> {
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
  const name = f.get('name') ?? randomName();
  if (!namePattern.test(name))
    return runError(
      'run',
      `Error response from daemon: Invalid container name (${name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed.`,
      125,
    );

  const resolvedImage = findImage(cfg, image);
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
  if (typeof mounts === 'string') return runError('run', `Error response from daemon: ${mounts}.`, 125);
  const gpus = f.get('gpus') ?? null;
  if (gpus !== null && cfg.gpuCount === 0)
    return runError(
      'run',
      'Error response from daemon: could not select device driver "" with capabilities: [[gpu]]',
      125,
    );

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
  if (!createContainer(dir, rec)) {
    const holder = readContainer(dir, name);
    return runError(
      'run',
      `Error response from daemon: Conflict. The container name "/${name}" is already in use by container "${holder?.id ?? ''}". You have to remove (or rename) that container to be able to reuse that name.`,
      125,
    );
  }
  recordContainerCreated(dir, rec);

  // An attached run reads the output through its own descriptor: with --rm the file is unlinked at exit.
  const attachFd = f.has('detach') ? undefined : openSync(containerPaths.log(dir, name), 'a+');
  const shim = toolCommand('container-shim');
  const shimEnv = { ...process.env, LIFTOFF_SIM_HOST_DIR: dir };
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
  if (started?.error) {
    if (started.hostConfig.autoRemove) removeContainerState(dir, name);
    return runError('run', `Error response from daemon: ${started.error}.`, started.exitCode || 127);
  }
  if (started?.status === 'created') {
    if (started.hostConfig.autoRemove) removeContainerState(dir, name);
    return runError(
      'run',
      'Error response from daemon: failed to start container: the runtime did not report a start.',
      125,
    );
  }
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

/** Copies a file (a path, or an open descriptor) from `offset` to stdout; returns the new offset. */
function copyFrom(file: string | number, offset: number): number {
  let fd: number;
  try {
    fd = typeof file === 'number' ? file : openSync(file, 'r');
  } catch {
    return offset;
  }
  try {
    const buf = Buffer.alloc(64 * 1024);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, offset);
      if (n <= 0) return offset;
      process.stdout.write(Buffer.from(buf.subarray(0, n)));
      offset += n;
    }
  } finally {
    if (typeof file !== 'number') closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------- exec

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

async function cmdExec(args: string[]): Promise<number> {
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
    err(`Error response from daemon: container ${rec.id} is not running`);
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
      if (!isAlive(rec.pgid) || Date.now() > deadline) {
        rmSync(join(execDir, `${id}.req.json`), { force: true });
        err(`Error response from daemon: container ${rec.id} is not running`);
        return 1;
      }
      await sleep(20);
    }
    for (const suffix of ['.res.json', '.taken']) rmSync(join(execDir, `${id}${suffix}`), { force: true });
    if ('error' in response) {
      err(response.error);
      return 127;
    }
    return 0;
  }

  const env = containerEnv(rec, { ...process.env, LIFTOFF_SIM_HOST_DIR: dir }, extraEnv);
  const [command, ...rest] = argv;
  if (!command || !resolveExecutable(command, env.PATH)) {
    err(notFoundError(command ?? '', 'exec'));
    return 127;
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

// ---------------------------------------------------------------------------------------------- ps

function commandString(rec: ContainerRecord): string {
  return mainCommand(rec).join(' ');
}

function ellipsis(s: string, max: number): string {
  const runes = [...s];
  return runes.length <= max ? s : `${runes.slice(0, max - 1).join('')}…`;
}

function statusText(rec: ContainerRecord, now: number): string {
  if (rec.status === 'running') return `Up ${humanDuration(now - Date.parse(rec.startedAt ?? rec.created))}`;
  if (rec.status === 'exited')
    return `Exited (${rec.exitCode}) ${humanDuration(now - Date.parse(rec.finishedAt ?? rec.created))} ago`;
  return 'Created';
}

function psRow(rec: ContainerRecord, noTrunc: boolean, now: number): Record<string, unknown> {
  const cmd = commandString(rec);
  const labels = Object.keys(rec.labels)
    .sort()
    .map((k) => `${k}=${rec.labels[k]}`)
    .join(',');
  return {
    Command: JSON.stringify(noTrunc ? cmd : ellipsis(cmd, 20)),
    CreatedAt: goTimeString(rec.created),
    ID: noTrunc ? rec.id : rec.id.slice(0, 12),
    Image: rec.image,
    Labels: labels,
    LocalVolumes: String(rec.mounts.filter((m) => m.type === 'volume').length),
    Mounts: rec.mounts.map((m) => (noTrunc ? m.source : ellipsis(m.source, 15))).join(','),
    Names: rec.name,
    Networks: rec.hostConfig.networkMode === 'bridge' ? 'bridge' : rec.hostConfig.networkMode,
    Ports: '',
    RunningFor: `${humanDuration(now - Date.parse(rec.created))} ago`,
    Size: '0B',
    State: rec.status,
    Status: statusText(rec, now),
  };
}

const psHeaders: Record<string, string> = {
  Command: 'COMMAND',
  CreatedAt: 'CREATED AT',
  ID: 'CONTAINER ID',
  Image: 'IMAGE',
  Labels: 'LABELS',
  LocalVolumes: 'LOCAL VOLUMES',
  Mounts: 'MOUNTS',
  Names: 'NAMES',
  Networks: 'NETWORKS',
  Ports: 'PORTS',
  RunningFor: 'CREATED',
  Size: 'SIZE',
  State: 'STATE',
  Status: 'STATUS',
  Label: 'LABEL',
};

const containerStates = ['created', 'restarting', 'running', 'removing', 'paused', 'exited', 'dead'];

type Filter = (rec: ContainerRecord) => boolean;

function parseFilters(specs: string[]): Filter | string {
  const groups = new Map<string, string[]>();
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    if (eq < 0) return `bad format of filter (expected name=value)`;
    const key = spec.slice(0, eq).toLowerCase();
    groups.set(key, [...(groups.get(key) ?? []), spec.slice(eq + 1)]);
  }
  const checks: Filter[] = [];
  for (const [key, values] of groups) {
    switch (key) {
      case 'name':
        checks.push((r) =>
          values.some((v) => {
            try {
              return new RegExp(v).test(`/${r.name}`);
            } catch {
              return `/${r.name}`.includes(v);
            }
          }),
        );
        break;
      case 'id':
        checks.push((r) => values.some((v) => r.id.startsWith(v)));
        break;
      case 'label':
        checks.push((r) =>
          values.every((v) => {
            const eq = v.indexOf('=');
            return eq < 0 ? v in r.labels : r.labels[v.slice(0, eq)] === v.slice(eq + 1);
          }),
        );
        break;
      case 'status':
        for (const v of values) if (!containerStates.includes(v)) return `Invalid filter 'status=${v}'`;
        checks.push((r) => values.includes(r.status));
        break;
      case 'ancestor':
        checks.push((r) => values.some((v) => normaliseImage(v) === normaliseImage(r.image)));
        break;
      default:
        return `invalid filter '${key}'`;
    }
  }
  return (r) => checks.every((c) => c(r));
}

function cmdPs(args: string[]): number {
  const f = parseOrFail('ps', args, {
    all: { short: 'a' },
    quiet: { short: 'q' },
    filter: { short: 'f', value: true },
    format: { value: true },
    'no-trunc': {},
    last: { short: 'n', value: true },
    latest: { short: 'l' },
    size: { short: 's' },
  });
  if (typeof f === 'number') return f;
  const filter = parseFilters(f.all('filter'));
  if (typeof filter === 'string') {
    err(`Error response from daemon: ${filter}`);
    return filter.startsWith('bad format') ? 125 : 1;
  }
  const dir = hostDir();
  const now = Date.now();
  // A status filter lists stopped containers too, as the daemon does.
  const showAll = f.has('all') || f.all('filter').some((s) => s.startsWith('status='));
  let recs = listContainers(dir)
    .map((r) => observedContainer(dir, r))
    .filter((r): r is ContainerRecord => r !== undefined)
    .filter((r) => showAll || r.status === 'running')
    .filter(filter)
    .sort((a, b) => Date.parse(b.created) - Date.parse(a.created));
  const last = f.has('latest') ? 1 : Number(f.get('last') ?? -1);
  if (last >= 0) recs = recs.slice(0, last);
  const noTrunc = f.has('no-trunc');
  const rows = recs.map((r) => psRow(r, noTrunc, now));
  for (const [row, rec] of rows.map((row, i) => [row, recs[i]] as const)) {
    const labels = rec?.labels ?? {};
    row.Label = (key: unknown) => labels[String(key)] ?? '';
  }
  const format = f.has('quiet')
    ? '{{.ID}}'
    : (f.get('format') ??
      'table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}');
  if (format.trim() === '{{json .}}') {
    out(
      rows
        .map(
          (r) => `${JSON.stringify(Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'Label')))}\n`,
        )
        .join(''),
    );
    return 0;
  }
  return withTemplate(() => renderList(format, rows, psHeaders));
}

// ---------------------------------------------------------------------------------------------- rm / stop / kill / wait

async function cmdRm(args: string[]): Promise<number> {
  const f = parseOrFail('rm', args, { force: { short: 'f' }, volumes: { short: 'v' }, link: { short: 'l' } });
  if (typeof f === 'number') return f;
  const missing = requireArgs('rm', '[OPTIONS] CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const dir = hostDir();
  let code = 0;
  for (const ref of f.positionals) {
    const found = findContainer(dir, ref);
    const rec = found && observedContainer(dir, found);
    if (!rec) {
      err(noSuchContainer(ref));
      code = 1;
      continue;
    }
    if (isRunning(rec) && !f.has('force')) {
      err(
        `Error response from daemon: cannot remove container "/${rec.name}": container is running: stop the container before removing or force remove`,
      );
      code = 1;
      continue;
    }
    if (!(await killContainerProcesses(rec))) {
      err(
        `Error response from daemon: cannot remove container "/${rec.name}": could not kill: tried to kill container, but did not receive an exit event`,
      );
      code = 1;
      continue;
    }
    removeContainerState(dir, rec.name);
    out(`${ref}\n`);
  }
  return code;
}

async function waitShimGone(rec: ContainerRecord, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(rec.pgid)) {
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
  return true;
}

/** After a SIGKILL the shim cannot record the exit; docker reports 137. */
function recordKilled(dir: string, rec: ContainerRecord): void {
  updateContainer(dir, rec.name, (r) => {
    if (r.status !== 'running') return;
    r.status = 'exited';
    r.exitCode = 137;
    r.finishedAt = new Date().toISOString();
  });
  const now = readContainer(dir, rec.name);
  if (now?.hostConfig.autoRemove) removeContainerState(dir, rec.name);
}

async function cmdStop(args: string[]): Promise<number> {
  const f = parseOrFail('stop', args, {
    time: { short: 't', value: true },
    timeout: { value: true },
    signal: { short: 's', value: true },
  });
  if (typeof f === 'number') return f;
  const missing = requireArgs('stop', '[OPTIONS] CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const dir = hostDir();
  const seconds = Number(f.get('timeout') ?? f.get('time') ?? 10);
  const signal = normaliseSignal(f.get('signal') ?? 'SIGTERM');
  if (!signal) {
    err(`invalid signal: ${f.get('signal') ?? ''}`);
    return 125;
  }
  let code = 0;
  for (const ref of f.positionals) {
    const found = findContainer(dir, ref);
    const rec = found && observedContainer(dir, found);
    if (!rec) {
      err(noSuchContainer(ref));
      code = 1;
      continue;
    }
    if (isRunning(rec)) {
      try {
        process.kill(rec.pid, signal);
      } catch {
        // The main process is already gone; the shim is finishing.
      }
      if (!(await waitShimGone(rec, seconds * 1000))) {
        await killContainerProcesses(rec);
        recordKilled(dir, rec);
      }
    }
    out(`${ref}\n`);
  }
  return code;
}

function normaliseSignal(s: string): NodeJS.Signals | undefined {
  const upper = s.toUpperCase();
  const names: Record<string, NodeJS.Signals> = {
    '9': 'SIGKILL',
    '15': 'SIGTERM',
    '2': 'SIGINT',
    '1': 'SIGHUP',
  };
  if (names[upper]) return names[upper];
  const full = (upper.startsWith('SIG') ? upper : `SIG${upper}`) as NodeJS.Signals;
  return ['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'].includes(full)
    ? full
    : undefined;
}

async function cmdKill(args: string[]): Promise<number> {
  const f = parseOrFail('kill', args, { signal: { short: 's', value: true } });
  if (typeof f === 'number') return f;
  const missing = requireArgs('kill', '[OPTIONS] CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const signal = normaliseSignal(f.get('signal') ?? 'KILL');
  if (!signal) {
    err(`invalid signal: ${f.get('signal') ?? ''}`);
    return 125;
  }
  const dir = hostDir();
  let code = 0;
  for (const ref of f.positionals) {
    const found = findContainer(dir, ref);
    const rec = found && observedContainer(dir, found);
    if (!rec) {
      err(noSuchContainer(ref));
      code = 1;
      continue;
    }
    if (!isRunning(rec)) {
      err(`Error response from daemon: cannot kill container: ${ref}: container ${rec.id} is not running`);
      code = 1;
      continue;
    }
    if (signal === 'SIGKILL') {
      // Killing a container's PID 1 takes the whole container down at once.
      await killContainerProcesses(rec);
      recordKilled(dir, rec);
    } else {
      try {
        process.kill(rec.pid, signal);
      } catch {
        // Already gone.
      }
    }
    out(`${ref}\n`);
  }
  return code;
}

async function cmdWait(args: string[]): Promise<number> {
  const f = parseOrFail('wait', args, {});
  if (typeof f === 'number') return f;
  const missing = requireArgs('wait', 'CONTAINER [CONTAINER...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const dir = hostDir();
  let code = 0;
  for (const ref of f.positionals) {
    const found = findContainer(dir, ref);
    if (!found) {
      err(noSuchContainer(ref));
      code = 1;
      continue;
    }
    let rec: ContainerRecord | undefined = found;
    while (rec && rec.status !== 'exited') {
      await sleep(100);
      const again = readContainer(dir, found.name);
      rec = again && observedContainer(dir, again);
    }
    out(`${rec?.exitCode ?? 0}\n`);
  }
  return code;
}

// ---------------------------------------------------------------------------------------------- logs

async function cmdLogs(args: string[]): Promise<number> {
  const f = parseOrFail('logs', args, {
    follow: { short: 'f' },
    tail: { short: 'n', value: true },
    timestamps: { short: 't' },
    since: { value: true },
    until: { value: true },
    details: {},
  });
  if (typeof f === 'number') return f;
  const missing = requireArgs('logs', '[OPTIONS] CONTAINER', f.positionals.length, 1, true);
  const ref = f.positionals[0];
  if (missing !== undefined || !ref) return missing ?? 1;
  const dir = hostDir();
  const rec = findContainer(dir, ref);
  if (!rec) {
    err(noSuchContainer(ref));
    return 1;
  }
  const tail = f.get('tail') ?? 'all';
  if (tail !== 'all' && !/^-?\d+$/.test(tail)) {
    err(`invalid value for "tail": ${tail}`);
    return 1;
  }
  const logFile = containerPaths.log(dir, rec.name);
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    // Nothing written yet.
  }
  const n = tail === 'all' ? -1 : Number(tail);
  if (n >= 0) {
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const kept = n === 0 ? [] : lines.slice(-n);
    out(kept.length ? `${kept.join('\n')}\n` : '');
  } else {
    out(text);
  }
  if (!f.has('follow')) return 0;
  let offset = Buffer.byteLength(text);
  for (;;) {
    const now = readContainer(dir, rec.name);
    const live = now && observedContainer(dir, now);
    offset = copyFrom(logFile, offset);
    if (!live || !isRunning(live)) return 0;
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------- inspect

function shmBytes(size: string | null): number {
  if (!size) return 64 * 1024 * 1024;
  const m = /^(\d+(?:\.\d+)?)([bkmg]?)b?$/i.exec(size);
  if (!m) return 64 * 1024 * 1024;
  const mult: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
  return Math.round(Number(m[1]) * (mult[(m[2] ?? '').toLowerCase()] ?? 1));
}

function inspectContainer(rec: ContainerRecord, cfg: HostConfig): Record<string, unknown> {
  const [path, ...pathArgs] = mainCommand(rec);
  const running = rec.status === 'running';
  const restart = rec.hostConfig.restart.split(':');
  return {
    Id: rec.id,
    Created: rec.created,
    Path: path,
    Args: pathArgs,
    State: {
      Status: rec.status,
      Running: running,
      Paused: false,
      Restarting: false,
      OOMKilled: false,
      Dead: false,
      Pid: running ? rec.pid : 0,
      ExitCode: rec.exitCode,
      Error: rec.error,
      StartedAt: rec.startedAt ?? zeroTime,
      FinishedAt: rec.finishedAt ?? zeroTime,
    },
    Image: imageId(rec.image),
    Name: `/${rec.name}`,
    RestartCount: 0,
    Driver: 'overlay2',
    Platform: 'linux',
    HostConfig: {
      Binds: rec.mounts.length
        ? rec.mounts.map((m) => `${m.source}:${m.destination}${m.readOnly ? ':ro' : ''}`)
        : null,
      NetworkMode: rec.hostConfig.networkMode,
      RestartPolicy: { Name: restart[0] ?? 'no', MaximumRetryCount: Number(restart[1] ?? 0) },
      AutoRemove: rec.hostConfig.autoRemove,
      IpcMode: rec.hostConfig.ipcMode,
      Privileged: rec.hostConfig.privileged,
      ShmSize: shmBytes(rec.hostConfig.shmSize),
      DeviceRequests: rec.hostConfig.gpus
        ? [
            {
              Driver: '',
              Count: rec.hostConfig.gpus === 'all' ? -1 : 0,
              DeviceIDs: rec.hostConfig.gpus.startsWith('device=')
                ? rec.hostConfig.gpus.slice('device='.length).split(',')
                : null,
              Capabilities: [['gpu']],
              Options: {},
            },
          ]
        : null,
    },
    Mounts: rec.mounts.map((m) => ({
      Type: m.type,
      ...(m.type === 'volume' ? { Name: m.source } : {}),
      Source: m.source,
      Destination: m.destination,
      Mode: m.readOnly ? 'ro' : '',
      RW: !m.readOnly,
      Propagation: m.type === 'bind' ? 'rprivate' : '',
    })),
    Config: {
      Hostname: rec.hostConfig.networkMode === 'host' ? cfg.name : rec.id.slice(0, 12),
      Env: rec.env,
      Cmd: rec.args.length ? rec.args : rec.entrypoint ? null : ['/bin/bash'],
      Image: rec.image,
      WorkingDir: rec.workdir ?? '',
      Entrypoint: rec.entrypoint,
      Labels: rec.labels,
    },
    NetworkSettings: { Networks: { [rec.hostConfig.networkMode]: {} } },
  };
}

const imageCreated = '2025-10-14T09:12:44.000000000Z';
const imageBytes = 19_812_345_678;

function inspectImage(image: string, cfg: HostConfig): Record<string, unknown> {
  return {
    Id: imageId(image),
    RepoTags: [normaliseImage(image)],
    RepoDigests: [],
    Parent: '',
    Comment: '',
    Created: imageCreated,
    DockerVersion: '',
    Author: '',
    Config: {
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      Cmd: ['/bin/bash'],
      Entrypoint: null,
      WorkingDir: '',
      Labels: {},
    },
    Architecture: cfg.flavour === 'gb10' ? 'arm64' : 'amd64',
    Os: 'linux',
    Size: imageBytes,
    RootFS: { Type: 'layers', Layers: [] },
    Metadata: { LastTagTime: zeroTime },
  };
}

function printInspect(found: Record<string, unknown>[], format: string | undefined): number {
  if (format === undefined) {
    out(`${JSON.stringify(found, null, 4)}\n`);
    return 0;
  }
  return withTemplate(() => found.map((o) => `${renderTemplate(format, o)}\n`).join(''));
}

function cmdInspect(args: string[], only?: 'container' | 'image'): number {
  const f = parseOrFail(only ? `${only} inspect` : 'inspect', args, {
    format: { short: 'f', value: true },
    size: { short: 's' },
    type: { value: true },
  });
  if (typeof f === 'number') return f;
  const missing = requireArgs('inspect', '[OPTIONS] NAME|ID [NAME|ID...]', f.positionals.length, 1);
  if (missing !== undefined) return missing;
  const type = only ?? f.get('type');
  const dir = hostDir();
  const cfg = readHostConfig(dir);
  const found: Record<string, unknown>[] = [];
  const errors: string[] = [];
  for (const ref of f.positionals) {
    if (type !== 'image') {
      const c = findContainer(dir, ref);
      const rec = c && observedContainer(dir, c);
      if (rec) {
        found.push(inspectContainer(rec, cfg));
        continue;
      }
    }
    if (type !== 'container') {
      const img = findImage(cfg, ref);
      if (img) {
        found.push(inspectImage(img, cfg));
        continue;
      }
    }
    errors.push(
      type === 'container'
        ? `Error: No such container: ${ref}`
        : type === 'image'
          ? `Error: No such image: ${ref}`
          : `Error: No such object: ${ref}`,
    );
  }
  const code = found.length || f.get('format') === undefined ? printInspect(found, f.get('format')) : 0;
  for (const e of errors) err(e);
  return errors.length ? 1 : code;
}

// ---------------------------------------------------------------------------------------------- images

function cmdImages(args: string[], cmd: string): number {
  const f = parseOrFail(cmd, args, {
    all: { short: 'a' },
    quiet: { short: 'q' },
    format: { value: true },
    filter: { short: 'f', value: true },
    'no-trunc': {},
    digests: {},
  });
  if (typeof f === 'number') return f;
  const cfg = readHostConfig();
  const now = Date.now();
  const repoFilter = f.positionals[0];
  const rows = cfg.images
    .map((img) => normaliseImage(img))
    .filter((img) => !repoFilter || img === normaliseImage(repoFilter) || img.startsWith(`${repoFilter}:`))
    .map((img) => {
      const colon = img.lastIndexOf(':');
      const id = imageId(img);
      return {
        Containers: 'N/A',
        CreatedAt: goTimeString(imageCreated),
        CreatedSince: `${humanDuration(now - Date.parse(imageCreated))} ago`,
        Digest: '<none>',
        ID: f.has('no-trunc') ? id : id.slice('sha256:'.length, 'sha256:'.length + 12),
        Repository: img.slice(0, colon),
        SharedSize: 'N/A',
        Size: humanSize(imageBytes),
        Tag: img.slice(colon + 1),
        UniqueSize: 'N/A',
        VirtualSize: humanSize(imageBytes),
      };
    });
  const format = f.has('quiet')
    ? '{{.ID}}'
    : (f.get('format') ?? 'table {{.Repository}}\t{{.Tag}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}');
  return withTemplate(() =>
    renderList(format, rows, {
      Containers: 'CONTAINERS',
      CreatedAt: 'CREATED AT',
      CreatedSince: 'CREATED',
      Digest: 'DIGEST',
      ID: 'IMAGE ID',
      Repository: 'REPOSITORY',
      SharedSize: 'SHARED SIZE',
      Size: 'SIZE',
      Tag: 'TAG',
      UniqueSize: 'UNIQUE SIZE',
      VirtualSize: 'VIRTUAL SIZE',
    }),
  );
}

// ---------------------------------------------------------------------------------------------- version / info

function versionData(cfg: HostConfig): Record<string, unknown> {
  const arch = cfg.flavour === 'gb10' ? 'arm64' : 'amd64';
  const common = {
    Version: dockerVersion,
    ApiVersion: apiVersion,
    GoVersion: 'go1.24.8',
    Os: 'linux',
    Arch: arch,
  };
  return {
    Client: { ...common, GitCommit: 'e180ab8', BuildTime: 'Wed Oct  8 12:17:26 2025', Context: 'default' },
    Server: {
      ...common,
      GitCommit: 'f8215cc',
      MinAPIVersion: '1.24',
      KernelVersion: '6.8.0-86-generic',
      BuildTime: '2025-10-08T12:17:26.000000000+00:00',
      Experimental: false,
    },
  };
}

function cmdVersion(args: string[]): number {
  const f = parseOrFail('version', args, { format: { short: 'f', value: true } });
  if (typeof f === 'number') return f;
  const cfg = readHostConfig();
  const data = versionData(cfg);
  const format = f.get('format');
  if (format !== undefined) return withTemplate(() => `${renderTemplate(format, data)}\n`);
  const arch = cfg.flavour === 'gb10' ? 'arm64' : 'amd64';
  out(
    [
      'Client: Docker Engine - Community',
      ` Version:           ${dockerVersion}`,
      ` API version:       ${apiVersion}`,
      ' Go version:        go1.24.8',
      ' Git commit:        e180ab8',
      ' Built:             Wed Oct  8 12:17:26 2025',
      ` OS/Arch:           linux/${arch}`,
      ' Context:           default',
      '',
      'Server: Docker Engine - Community',
      ' Engine:',
      `  Version:          ${dockerVersion}`,
      `  API version:      ${apiVersion} (minimum version 1.24)`,
      '  Go version:       go1.24.8',
      '  Git commit:       f8215cc',
      '  Built:            Wed Oct  8 12:17:26 2025',
      `  OS/Arch:          linux/${arch}`,
      '  Experimental:     false',
      '',
    ].join('\n'),
  );
  return 0;
}

function cmdInfo(args: string[]): number {
  const f = parseOrFail('info', args, { format: { short: 'f', value: true } });
  if (typeof f === 'number') return f;
  const dir = hostDir();
  const cfg = readHostConfig(dir);
  const recs = listContainers(dir)
    .map((r) => observedContainer(dir, r))
    .filter((r): r is ContainerRecord => r !== undefined);
  const running = recs.filter((r) => r.status === 'running').length;
  const data = {
    Containers: recs.length,
    ContainersRunning: running,
    ContainersPaused: 0,
    ContainersStopped: recs.length - running,
    Images: cfg.images.length,
    Driver: 'overlay2',
    ServerVersion: dockerVersion,
    Runtimes: {
      'io.containerd.runc.v2': { path: 'runc' },
      nvidia: { path: 'nvidia-container-runtime' },
      runc: { path: 'runc' },
    },
    DefaultRuntime: 'runc',
    OperatingSystem: 'Ubuntu 24.04.3 LTS',
    OSType: 'linux',
    Architecture: cfg.flavour === 'gb10' ? 'aarch64' : 'x86_64',
    Name: cfg.name || hostname(),
    DockerRootDir: '/var/lib/docker',
  };
  const format = f.get('format');
  if (format !== undefined) return withTemplate(() => `${renderTemplate(format, data)}\n`);
  out(
    [
      'Client: Docker Engine - Community',
      ` Version:    ${dockerVersion}`,
      ' Context:    default',
      ' Debug Mode: false',
      '',
      'Server:',
      ` Containers: ${data.Containers}`,
      `  Running: ${data.ContainersRunning}`,
      '  Paused: 0',
      `  Stopped: ${data.ContainersStopped}`,
      ` Images: ${data.Images}`,
      ` Server Version: ${dockerVersion}`,
      ' Storage Driver: overlay2',
      ' Runtimes: io.containerd.runc.v2 nvidia runc',
      ' Default Runtime: runc',
      ` Operating System: ${data.OperatingSystem}`,
      ' OSType: linux',
      ` Architecture: ${data.Architecture}`,
      ` Name: ${data.Name}`,
      ' Docker Root Dir: /var/lib/docker',
      '',
    ].join('\n'),
  );
  return 0;
}

// ---------------------------------------------------------------------------------------------- dispatch

async function dispatchContainer(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'run':
      return cmdRun(rest);
    case 'exec':
      return cmdExec(rest);
    case 'ls':
    case 'ps':
    case 'list':
      return cmdPs(rest);
    case 'rm':
    case 'remove':
      return cmdRm(rest);
    case 'stop':
      return cmdStop(rest);
    case 'kill':
      return cmdKill(rest);
    case 'logs':
      return cmdLogs(rest);
    case 'wait':
      return cmdWait(rest);
    case 'inspect':
      return cmdInspect(rest, 'container');
    default:
      err(`docker: '${sub ?? ''}' is not a docker container command.\nSee 'docker container --help'`);
      return 1;
  }
}

function dispatchImage(args: string[]): number {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'inspect':
      return cmdInspect(rest, 'image');
    case 'ls':
    case 'list':
      return cmdImages(rest, 'image ls');
    default:
      err(`docker: '${sub ?? ''}' is not a docker image command.\nSee 'docker image --help'`);
      return 1;
  }
}

export const main: ToolMain = async (args) => {
  const [cmd, ...rest] = args;
  switch (cmd) {
    case undefined:
    case '--help':
      out('Usage:  docker [OPTIONS] COMMAND\n\nA self-sufficient runtime for containers\n');
      return cmd === undefined ? 1 : 0;
    case '--version':
    case '-v':
      out(`Docker version ${dockerVersion}, build e180ab8\n`);
      return 0;
    case 'run':
      return cmdRun(rest);
    case 'exec':
      return cmdExec(rest);
    case 'ps':
      return cmdPs(rest);
    case 'rm':
      return cmdRm(rest);
    case 'stop':
      return cmdStop(rest);
    case 'kill':
      return cmdKill(rest);
    case 'logs':
      return cmdLogs(rest);
    case 'wait':
      return cmdWait(rest);
    case 'inspect':
      return cmdInspect(rest);
    case 'images':
      return cmdImages(rest, 'images');
    case 'image':
      return dispatchImage(rest);
    case 'container':
      return dispatchContainer(rest);
    case 'version':
      return cmdVersion(rest);
    case 'info':
      return cmdInfo(rest);
    default:
      err(`docker: '${cmd}' is not a docker command.\nSee 'docker --help'`);
      return 1;
  }
};
