// Step 1 of the deploy, read only: can this host run its part? Nothing is stopped before every host passes,
// so a deploy that cannot succeed never tears down the running one. A failed check is a finding in the
// report (with what to fix); only SSH failures are thrown, and the workflow reports those per host.
import type { SshSession } from '../ssh/executor.js';
import { sentence } from '../shared/text.js';
import { dockerSaid } from './docker.js';
import {
  dockerVersionCommand,
  folderExistsCommand,
  freeSpaceCommand,
  gpuAccessCommand,
  imageIdCommand,
  ipv4AddressesCommand,
  logDirCommand,
  missingPathsCommand,
  preflightReads,
  volumeHostPaths,
  weightFilesCommand,
} from '../host-commands/preflight.js';
import { onHost } from './ssh-context.js';
import { factsKey, hostReadBatch } from '../host-commands/agreement.js';
import { factsOfTrip, newNonce, readTimeoutMs } from './agreement-read.js';
import { handOn } from './step-handoff.js';
import { prefetchReads } from './prefetch.js';
import { systemDirOf } from '../config/host-guards.js';
import { carries, parseIpv4Addresses, type Ipv4Address } from '../parsers/ip-addr.js';
import type { PreflightCheck, PreflightInput, PreflightReport } from './types.js';

type Check = PreflightCheck;

export async function preflightHost(input: PreflightInput): Promise<PreflightReport> {
  const target = input.host.target;
  return onHost(input.host, async (host) => {
    // Every read the checks below make, in one round trip (a read that only matters when another passed is
    // read anyway: each is cheap, and read only).
    // With the agreement read in the same trip, the step costs this host one remote command.
    const agreement = input.agreement;
    const nonce = newNonce();
    const startedAtMs = Date.now();
    const session = await prefetchReads(
      host,
      [
        ...preflightReads(input),
        ...(agreement ? hostReadBatch(agreement.read, nonce, agreement.versions) : []),
      ],
      { timeoutMs: 120_000 + (agreement ? readTimeoutMs(agreement.read) : 0) },
    );
    const ssh: Check = {
      name: 'ssh',
      ok: true,
      detail: `connected as ${target.user} to ${target.host}:${target.port}${target.jump ? ` through ${target.jump.name}` : ''}, host key verified`,
    };
    const [docker, model, volumes, iface, disk, logDir] = await Promise.all([
      checkDocker(session),
      checkModel(session, input.modelPath),
      checkVolumes(session, input.volumes),
      checkInterface(session, input.clusterIp, input.iface),
      checkDisk(session, input.modelPath, input.minFreeDiskGiB),
      input.logDir === undefined ? undefined : checkLogDir(session, input.logDir, input.logPath),
    ]);
    const image: Check = docker.ok
      ? await checkImage(session, input.image)
      : { name: 'image', ok: false, detail: `not checked: docker does not answer (see the docker check)` };
    // Asked only of an image that is there: a missing image is the finding already.
    const gpus = image.ok ? await checkGpus(session, input.image) : undefined;
    const checks = [
      ssh,
      docker,
      image,
      ...(gpus ? [gpus] : []),
      model,
      volumes,
      iface,
      disk,
      ...(logDir ? [logDir] : []),
    ];
    if (agreement) {
      const facts = await factsOfTrip(session, agreement.read, nonce, startedAtMs, agreement.versions);
      handOn('hostFacts', factsKey(agreement.read), facts);
    }
    return { host: target.name, ok: checks.every((c) => c.ok), checks };
  });
}

async function checkDocker(session: SshSession): Promise<Check> {
  const res = await session.exec(dockerVersionCommand(), {
    timeoutMs: 30_000,
    check: false,
  });
  const version = res.stdout.trim();
  if (res.exitCode === 0 && version !== '') {
    return { name: 'docker', ok: true, detail: `Docker ${version} answers` };
  }
  const said = firstLines(res.stderr || res.stdout);
  const user = session.target.user;
  if (res.exitCode === 127 || /command not found|docker: not found/i.test(said)) {
    return {
      name: 'docker',
      ok: false,
      detail: `docker is not installed, or not on the PATH of ${user}'s SSH sessions: install Docker Engine with the NVIDIA container toolkit`,
    };
  }
  if (/permission denied/i.test(said)) {
    return {
      name: 'docker',
      ok: false,
      detail: `${user} may not use the Docker socket (${said}): add it to the docker group (sudo usermod -aG docker ${user}) and reconnect`,
    };
  }
  // The CLI's own words already ask whether the daemon runs: say what to do instead of asking again.
  if (/Cannot connect to the Docker daemon/i.test(said)) {
    return {
      name: 'docker',
      ok: false,
      detail: `docker version failed (exit ${res.exitCode}): ${sentence(said)} Start it (sudo systemctl start docker; systemctl status docker says why it stopped)`,
    };
  }
  return {
    name: 'docker',
    ok: false,
    detail: `docker version failed (exit ${res.exitCode}): ${sentence(said || 'no output')} Is the Docker daemon running (systemctl status docker)?`,
  };
}

async function checkImage(session: SshSession, image: string): Promise<Check> {
  const res = await session.exec(imageIdCommand(image), {
    timeoutMs: 30_000,
    check: false,
  });
  if (res.exitCode === 0) {
    return { name: 'image', ok: true, detail: `${image} is present (${res.stdout.trim().slice(0, 19)})` };
  }
  return {
    name: 'image',
    ok: false,
    detail: `image ${image} is not on the host (${firstLines(res.stderr) || `exit ${res.exitCode}`}): run docker pull ${image} there, or docker load it`,
  };
}

/**
 * The Ray container's `docker run --gpus all` fails on a host whose Docker has no NVIDIA runtime, after every
 * host's old services were stopped: asked here, before anything is.
 */
async function checkGpus(session: SshSession, image: string): Promise<Check> {
  const res = await session.exec(gpuAccessCommand(image), { timeoutMs: 60_000, check: false });
  // 126/127: the image has no `true` to run, which the engine finds only after it set up the container's GPUs.
  if (res.exitCode === 0 || res.exitCode === 126 || res.exitCode === 127) {
    return { name: 'gpus', ok: true, detail: 'docker run --gpus all starts a container' };
  }
  const said = firstLines(dockerSaid(res.stderr || res.stdout)) || `exit ${res.exitCode}`;
  if (/device driver|nvidia|gpu|cdi/i.test(said)) {
    return {
      name: 'gpus',
      ok: false,
      detail: `Docker cannot give containers GPUs (docker run --gpus all: ${said}): install the NVIDIA container toolkit on the host (nvidia-container-toolkit; then sudo nvidia-ctk runtime configure --runtime=docker and restart Docker)`,
    };
  }
  return {
    name: 'gpus',
    ok: false,
    detail: `a throwaway docker run --gpus all of ${image} failed (exit ${res.exitCode}): ${sentence(said)} The Ray container's docker run would fail the same way.`,
  };
}

async function checkModel(session: SshSession, modelPath: string): Promise<Check> {
  const dir = await session.exec(folderExistsCommand(modelPath), { timeoutMs: 10_000, check: false });
  if (dir.exitCode !== 0) {
    return {
      name: 'model',
      ok: false,
      detail: `model path ${modelPath} does not exist (or is not a folder the SSH user can read): download the weights there (huggingface-cli download ORG/NAME) or set serve.modelPath`,
    };
  }
  const found = await session.exec(weightFilesCommand(modelPath), { timeoutMs: 60_000, check: false });
  const files = found.stdout.split('\n').filter((l) => l !== '');
  const shards = files.filter((f) => f.endsWith('.safetensors')).length;
  const configs = files.length - shards;
  if (files.length === 0) {
    return {
      name: 'model',
      ok: false,
      detail: `no *.safetensors or config.json below ${modelPath}: the weights are not downloaded there (huggingface-cli download ORG/NAME), or serve.modelPath points elsewhere`,
    };
  }
  return {
    name: 'model',
    ok: true,
    detail: `${shards} .safetensors file(s) and ${configs} config.json below ${modelPath}`,
  };
}

async function checkVolumes(session: SshSession, volumes: string[]): Promise<Check> {
  const hostPaths = volumeHostPaths(volumes);
  if (hostPaths.length === 0) return { name: 'volumes', ok: true, detail: 'no host paths to mount' };
  const res = await session.exec(missingPathsCommand(hostPaths), {
    timeoutMs: 10_000,
    check: false,
  });
  const missing = res.stdout.split('\n').filter((l) => l !== '');
  if (missing.length > 0) {
    return {
      name: 'volumes',
      ok: false,
      detail: `missing on the host: ${missing.join(', ')}. Create them (mkdir -p) or fix ray.volumes; docker would create an empty root-owned folder instead`,
    };
  }
  return { name: 'volumes', ok: true, detail: `every host path exists: ${hostPaths.join(', ')}` };
}

async function checkInterface(session: SshSession, clusterIp: string, iface?: string): Promise<Check> {
  const all = await session.exec(ipv4AddressesCommand(), { timeoutMs: 10_000, check: false });
  const addresses = parseIpv4Addresses(all.stdout);
  const holder = addresses.find((a) => carries(a, clusterIp));
  const where = holder
    ? `clusterIp ${clusterIp} is on ${holder.iface}`
    : `clusterIp ${clusterIp} is on no interface of the host`;
  if (iface === undefined) {
    return holder
      ? { name: 'interface', ok: true, detail: where }
      : {
          name: 'interface',
          ok: false,
          detail: `${where} (it has ${describeAddresses(addresses)}): fix the host's clusterIp in the spec, or bring the interconnect up`,
        };
  }
  const dev = await session.exec(ipv4AddressesCommand(iface), {
    timeoutMs: 10_000,
    check: false,
  });
  if (dev.exitCode !== 0) {
    return {
      name: 'interface',
      ok: false,
      detail: `interface ${iface} (NCCL_SOCKET_IFNAME) does not exist on the host (${firstLines(dev.stderr) || `exit ${dev.exitCode}`}); ${where}${holder ? `: set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to ${holder.iface}` : ''}`,
    };
  }
  const onIface = parseIpv4Addresses(dev.stdout);
  if (!onIface.some((a) => carries(a, clusterIp))) {
    return {
      name: 'interface',
      ok: false,
      detail: `interface ${iface} does not carry clusterIp ${clusterIp} (it has ${describeAddresses(onIface)}); ${where}`,
    };
  }
  return { name: 'interface', ok: true, detail: `${iface} carries clusterIp ${clusterIp}` };
}

function describeAddresses(addresses: Ipv4Address[]): string {
  if (addresses.length === 0) return 'no IPv4 address';
  return addresses.map((a) => `${a.address}/${a.prefix} on ${a.iface}`).join(', ');
}

async function checkDisk(session: SshSession, modelPath: string, minFreeGiB: number): Promise<Check> {
  // The nearest existing folder: a model path not yet created will live on its parent's filesystem.
  const res = await session.exec(freeSpaceCommand(modelPath), { timeoutMs: 20_000, check: false });
  // POSIX format: `Filesystem 1024-blocks Used Available Capacity Mounted on`, one line per filesystem.
  const row = res.stdout
    .split('\n')
    .slice(1)
    .map((line) => /^(.*?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%\s+(\/.*)$/.exec(line.trim()))
    .find((m) => m !== null);
  if (res.exitCode !== 0 || !row?.[4] || !row[6]) {
    return {
      name: 'disk',
      ok: false,
      detail: `could not read free space for ${modelPath} (df exit ${res.exitCode}: ${firstLines(res.stderr) || 'no output'})`,
    };
  }
  const freeGiB = Number(row[4]) / 1024 / 1024;
  const shown = `${freeGiB.toFixed(1)} GiB free on ${row[6]} (the filesystem of ${modelPath})`;
  if (freeGiB < minFreeGiB) {
    return {
      name: 'disk',
      ok: false,
      detail: `only ${shown}, ${minFreeGiB} GiB needed: free space there (old images: docker image prune)`,
    };
  }
  return { name: 'disk', ok: true, detail: `${shown}, ${minFreeGiB} GiB needed` };
}

/**
 * The serve log's folder exists; the log is not a symbolic link and its folder, links followed, is not a system
 * folder: the launch truncates the log, so a link would truncate whatever it points at (the schema has already
 * refused a path that names a system folder as written).
 */
async function checkLogDir(session: SshSession, logDir: string, logPath: string | undefined): Promise<Check> {
  const res = await session.exec(logDirCommand(logDir, logPath), {
    timeoutMs: 10_000,
    check: false,
  });
  if (res.exitCode === 2) {
    return {
      name: 'logDir',
      ok: false,
      detail: `log folder ${logDir} does not exist on the host: create it (mkdir -p ${logDir}) or change serve.logPath`,
    };
  }
  if (res.exitCode === 3) {
    return {
      name: 'logDir',
      ok: false,
      detail: `serve.logPath ${logPath ?? ''} is a symbolic link on the host; the launch truncates the log, and would truncate what the link points at: remove the link (the log is created as a regular file) or change serve.logPath`,
    };
  }
  const real = res.stdout.trim();
  const system = res.exitCode === 0 && real.startsWith('/') ? systemDirOf(real) : undefined;
  if (system !== undefined) {
    return {
      name: 'logDir',
      ok: false,
      detail: `log folder ${logDir} is ${real} once its links are followed, under the system folder ${system}: put serve.logPath in a folder of its own`,
    };
  }
  return { name: 'logDir', ok: true, detail: `${logDir} exists` };
}

function firstLines(text: string, max = 300): string {
  const trimmed = text.trim().split('\n').slice(0, 3).join(' ').trim();
  return trimmed.length > max ? `${trimmed.slice(0, max)}…` : trimmed;
}
