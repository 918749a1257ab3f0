// What the daemon says about itself and its images: `docker version`, `docker info`, `docker images`.
import { hostname } from 'node:os';
import { hostDir, readHostConfig, type HostConfig } from '../../host-state.js';
import { apiVersion, dockerVersion, out, parseOrFail, withTemplate } from './cli.js';
import { goTimeString, humanDuration, humanSize, renderList, renderTemplate } from './format.js';
import {
  imageBytes,
  imageCreated,
  imageId,
  listContainers,
  normaliseImage,
  observedContainer,
  type ContainerRecord,
} from './state.js';

export function cmdImages(args: string[], cmd: string): number {
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

function versionData(cfg: HostConfig): Record<string, unknown> {
  const arch = cfg.flavour === 'gb10' ? 'arm64' : 'amd64';
  const common = {
    Version: dockerVersion,
    // The template's field names are Go's (APIVersion), not the JSON's (ApiVersion).
    APIVersion: apiVersion,
    GoVersion: 'go1.19.8',
    Os: 'linux',
    Arch: arch,
  };
  return {
    Client: {
      ...common,
      DefaultAPIVersion: apiVersion,
      GitCommit: '297e128',
      BuildTime: 'Thu May  7 21:09:36 2026',
      Context: 'default',
      Experimental: true,
    },
    Server: {
      ...common,
      GitCommit: '5d6db84',
      MinAPIVersion: '1.12',
      KernelVersion: '6.8.0-86-generic',
      BuildTime: '2026-05-07T21:09:36.000000000+00:00',
    },
  };
}

export function cmdVersion(args: string[]): number {
  const f = parseOrFail('version', args, { format: { short: 'f', value: true } });
  if (typeof f === 'number') return f;
  const cfg = readHostConfig();
  const data = versionData(cfg);
  const format = f.get('format');
  if (format !== undefined) return withTemplate(() => `${renderTemplate(format, data)}\n`);
  const arch = cfg.flavour === 'gb10' ? 'arm64' : 'amd64';
  out(
    [
      'Client:',
      ` Version:           ${dockerVersion}`,
      ` API version:       ${apiVersion}`,
      ' Go version:        go1.19.8',
      ' Git commit:        297e128',
      ' Built:             Thu May  7 21:09:36 2026',
      ` OS/Arch:           linux/${arch}`,
      ' Context:           default',
      ' Experimental:      true',
      '',
      'Server:',
      ' Engine:',
      `  Version:          ${dockerVersion}`,
      `  API version:      ${apiVersion} (minimum version 1.12)`,
      '  Go version:       go1.19.8',
      '  Git commit:       5d6db84',
      '  Built:            Thu May  7 21:09:36 2026',
      `  OS/Arch:          linux/${arch}`,
      '  Experimental:     false',
      ' containerd:',
      '  Version:          1.6.20~ds1',
      '  GitCommit:        1.6.20~ds1-1+deb12u3',
      ' runc:',
      '  Version:          1.1.5+ds1',
      '  GitCommit:        1.1.5+ds1-1+deb12u1',
      ' docker-init:',
      '  Version:          0.19.0',
      '  GitCommit:        ',
      '',
    ].join('\n'),
  );
  return 0;
}

export function cmdInfo(args: string[]): number {
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
      'Client:',
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
