// Containers of one simulated host: containers/<name>.json (the record), <name>.log (stdout and stderr of
// every process the container ran), <name>.exec/ (requests for `docker exec -d`, served by the shim).
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, linkSync, mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  hostDir,
  isAliveSince,
  paths,
  readFaults,
  readJson,
  safeReaddir,
  writeJson,
  type HostConfig,
} from '../../host-state.js';
import { containerTagVar, killAll, membersOf, signalPids, unitTagVar } from './procs.js';

export interface MountRecord {
  type: 'bind' | 'volume';
  source: string;
  destination: string;
  readOnly: boolean;
}

export type ContainerStatus = 'created' | 'running' | 'exited';

export interface ContainerRecord {
  id: string;
  name: string;
  image: string;
  created: string;
  /** `--entrypoint`, split on whitespace as docker does for a string; null keeps the image's. */
  entrypoint: string[] | null;
  args: string[];
  /** `-e` values as K=V, in order. */
  env: string[];
  labels: Record<string, string>;
  mounts: MountRecord[];
  workdir: string | null;
  hostConfig: {
    networkMode: string;
    ipcMode: string;
    shmSize: string | null;
    restart: string;
    gpus: string | null;
    autoRemove: boolean;
    privileged: boolean;
  };
  status: ContainerStatus;
  /** The shim: leader of the container's process group. */
  pgid: number;
  /** When the shim started (startTicks): a later process that took its pid is not the container. */
  pgidStartTicks?: number;
  /** The container's main process (State.Pid), a child of the shim. */
  pid: number;
  exitCode: number;
  /** Start failure, as docker's State.Error. */
  error: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export const zeroTime = '0001-01-01T00:00:00Z';

export const containerPaths = {
  record: (dir: string, name: string) => join(paths.containers(dir), `${name}.json`),
  log: (dir: string, name: string) => join(paths.containers(dir), `${name}.log`),
  exec: (dir: string, name: string) => join(paths.containers(dir), `${name}.exec`),
};

export function readContainer(dir: string, name: string): ContainerRecord | undefined {
  return readJson<ContainerRecord>(containerPaths.record(dir, name));
}

export function listContainers(dir: string): ContainerRecord[] {
  return safeReaddir(paths.containers(dir))
    .filter((f) => f.endsWith('.json'))
    .map((f) => readContainer(dir, f.slice(0, -'.json'.length)))
    .filter((c): c is ContainerRecord => c !== undefined);
}

/** Docker resolves a reference as a full name, a full id, or an unambiguous id prefix. */
export function findContainer(dir: string, ref: string): ContainerRecord | undefined {
  const name = ref.startsWith('/') ? ref.slice(1) : ref;
  const byName = readContainer(dir, name);
  if (byName) return byName;
  const all = listContainers(dir);
  const exact = all.find((c) => c.id === ref);
  if (exact) return exact;
  const prefixed = /^[0-9a-f]+$/.test(ref) ? all.filter((c) => c.id.startsWith(ref)) : [];
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** Creates the record only if the name is free, atomically, so two `docker run --name N` cannot both win. */
export function createContainer(dir: string, rec: ContainerRecord): boolean {
  mkdirSync(paths.containers(dir), { recursive: true });
  const tmp = join(paths.containers(dir), `.${rec.name}.${process.pid}.tmp`);
  writeFileSync(tmp, JSON.stringify(rec, null, 2));
  try {
    linkSync(tmp, containerPaths.record(dir, rec.name));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

/** One line of `<hostDir>/containers.log`: every container `docker run` ever created on the host. */
export interface ContainerCreation {
  time: string;
  name: string;
  id: string;
  labels: Record<string, string>;
}

/** Append-only, never pruned by `docker rm`: tests read it to prove a container was created only once. */
export const containersLogPath = (dir: string): string => join(dir, 'containers.log');

export function recordContainerCreated(dir: string, rec: ContainerRecord): void {
  const line: ContainerCreation = { time: rec.created, name: rec.name, id: rec.id, labels: rec.labels };
  appendFileSync(containersLogPath(dir), `${JSON.stringify(line)}\n`);
}

/** Read-modify-write; a removed container stays removed. */
export function updateContainer(
  dir: string,
  name: string,
  change: (rec: ContainerRecord) => void,
): ContainerRecord | undefined {
  const rec = readContainer(dir, name);
  if (!rec) return undefined;
  change(rec);
  if (!existsSync(containerPaths.record(dir, name))) return undefined;
  writeJson(containerPaths.record(dir, name), rec);
  return rec;
}

/** The record goes last: a container without its record is gone, so nothing of it may remain by then. */
export function removeContainerState(dir: string, name: string): void {
  rmSync(containerPaths.log(dir, name), { force: true });
  rmSync(containerPaths.exec(dir, name), { force: true, recursive: true });
  rmSync(containerPaths.record(dir, name), { force: true });
}

/**
 * The record as docker would report it now. The file says "running" until the shim records the exit; a shim
 * that was SIGKILLed never does, so the shim's liveness decides, and the verdict is written back.
 */
export function observedContainer(dir: string, rec: ContainerRecord): ContainerRecord | undefined {
  if (rec.status !== 'running' || shimAlive(rec)) return rec;
  // The runtime kills what is left of a container whose init died; so do we.
  signalPids(membersOf({ tagVar: containerTagVar, tagValue: rec.id, pgid: rec.pgid }), 'SIGKILL');
  if (rec.hostConfig.autoRemove) {
    removeContainerState(dir, rec.name);
    return undefined;
  }
  return (
    updateContainer(dir, rec.name, (r) => {
      if (r.status !== 'running') return;
      r.status = 'exited';
      r.exitCode = 137;
      r.finishedAt = new Date().toISOString();
    }) ?? rec
  );
}

export function isRunning(rec: ContainerRecord): boolean {
  return rec.status === 'running' && shimAlive(rec);
}

/** Whether the container's shim lives (pgid 0: not started yet, as before any record of it). */
export function shimAlive(rec: ContainerRecord): boolean {
  return isAliveSince(rec.pgid, rec.pgidStartTicks);
}

/** SIGKILLs the container's group and every process tagged with its id (those that left the group). */
export async function killContainerProcesses(rec: ContainerRecord): Promise<boolean> {
  return killAll({
    pgid: rec.pgid > 0 && shimAlive(rec) ? rec.pgid : undefined,
    tagVar: containerTagVar,
    tagValue: rec.id,
  });
}

/** Image references as docker normalises them: no tag means `:latest`. */
export function normaliseImage(ref: string): string {
  const lastSlash = ref.lastIndexOf('/');
  const tagColon = ref.indexOf(':', lastSlash + 1);
  if (ref.includes('@') || tagColon >= 0) return ref;
  return `${ref}:latest`;
}

/** An image's ID as `docker image inspect` gives it; docker takes it wherever it takes a reference. */
const imageIdPattern = /^sha256:[0-9a-f]{64}$/;

/** An image ID as docker takes it in place of a name: whole (`sha256:…`), or at least 12 of its hex digits. */
function isImageIdRef(ref: string): boolean {
  return imageIdPattern.test(ref) || /^[0-9a-f]{12,64}$/.test(ref);
}

/**
 * The image a reference names, as the host's config lists it: a tag, or an image's ID, whole (`sha256:…`, as a
 * rollback pins ray.image) or as a prefix of at least 12 hex digits.
 */
export function findImage(cfg: HostConfig, ref: string): string | undefined {
  if (imageIdPattern.test(ref)) return cfg.images.find((img) => imageId(img) === ref);
  const want = normaliseImage(ref);
  const bare = want.startsWith('docker.io/') ? want.slice('docker.io/'.length) : want;
  const byTag = cfg.images.find((img) => {
    const have = normaliseImage(img);
    return have === want || have === bare;
  });
  if (byTag !== undefined || !isImageIdRef(ref)) return byTag;
  const hex = ref.replace(/^sha256:/, '');
  const full = ref.startsWith('sha256:');
  return cfg.images.find((img) => {
    const id = imageId(img).slice('sha256:'.length);
    return full ? id === hex : id.startsWith(hex);
  });
}

/** Every simulated image was built at the same time and has the same size. */
export const imageCreated = '2025-10-14T09:12:44.000000000Z';
export const imageBytes = 19_812_345_678;

/** The content hash of an image; a host's imageIdSalt knob stands for another build under the same tag. */
export function imageId(image: string, salt = readFaults().imageIdSalt ?? ''): string {
  if (imageIdPattern.test(image)) return image;
  return `sha256:${createHash('sha256')
    .update(`liftoff-sim-image:${normaliseImage(image)}${salt === '' ? '' : `:${salt}`}`)
    .digest('hex')}`;
}

/**
 * What the image's python3 sees as site-packages: PYTHONPATH to the host's folder for this image, where seed.ts
 * and the versions knob write ray and vllm dist-info (the image's "installed" versions).
 */
export function imageEnv(dir: string, image: string): NodeJS.ProcessEnv {
  const byId = imageIdPattern.test(image) ? readJson<HostConfig>(paths.config(dir)) : undefined;
  const named = (byId && findImage(byId, image)) ?? image;
  return { PYTHONPATH: paths.imageSite(dir, normaliseImage(named)) };
}

/**
 * The environment every process of a container sees: the host's, the image's (only PYTHONPATH, to its
 * site-packages: imageEnv), the `-e` values, and the container tag that lets `docker rm -f` find processes
 * that left the group.
 * A unit's tag is dropped: a container started from a unit lives in docker's cgroup, not the unit's.
 */
export function containerEnv(
  rec: ContainerRecord,
  base: NodeJS.ProcessEnv,
  extra: string[] = [],
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, ...imageEnv(hostDir(), rec.image) };
  delete env[unitTagVar];
  for (const kv of [...rec.env, ...extra]) {
    const eq = kv.indexOf('=');
    if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  env[containerTagVar] = rec.id;
  return env;
}

/** What the container's main process runs: entrypoint then arguments; with neither, the image's bash. */
export function mainCommand(rec: ContainerRecord): string[] {
  const argv = [...(rec.entrypoint ?? []), ...rec.args];
  return argv.length > 0 ? argv : ['/bin/bash'];
}

/** One `docker exec -d` request, written by docker into <name>.exec/ and served by the shim. */
export interface ExecRequest {
  argv: string[];
  env: string[];
  workdir: string | null;
}

export type ExecResponse = { pid: number } | { error: string };

export function notFoundError(command: string, phase: 'run' | 'exec'): string {
  const cause = `exec: "${command}": executable file not found in $PATH: unknown`;
  return phase === 'run'
    ? `failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: ${cause}`
    : `OCI runtime exec failed: exec failed: unable to start container process: ${cause}`;
}
