// `docker inspect` (and `docker container inspect`, `docker image inspect`): the daemon's JSON for containers
// and images, or a Go template over it.
import { hostDir, readHostConfig, type HostConfig } from '../../host-state.js';
import { err, out, parseOrFail, requireArgs, withTemplate } from './cli.js';
import { renderTemplate } from './format.js';
import {
  findContainer,
  findImage,
  imageBytes,
  imageCreated,
  imageId,
  mainCommand,
  normaliseImage,
  observedContainer,
  zeroTime,
  type ContainerRecord,
} from './state.js';

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

export function cmdInspect(args: string[], only?: 'container' | 'image'): number {
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
  // With --format and nothing found, 20.10 prints one empty line.
  const code =
    found.length || f.get('format') === undefined ? printInspect(found, f.get('format')) : (out('\n'), 0);
  for (const e of errors) err(e);
  return errors.length ? 1 : code;
}
