// Step 1's per-host checks, each declared once: its reads (named commands built by src/host-commands/preflight.ts)
// and a pure judge of what they returned, with its message and fix; the plan names the checks a host gets. The
// host's one preflight trip runs every check's reads (src/steps/preflight.ts); a failed check is a finding in the
// report, never a thrown error. Adding a check: its command builder, one entry in `hostChecks`, and the input it
// needs, if new, in src/steps/preflight-input.ts.
import { systemDirOf } from '../config/host-guards.js';
import {
  dockerVersionCommand,
  folderExistsCommand,
  freeSpaceCommand,
  gpuAccessCommand,
  imageIdCommand,
  ipv4AddressesCommand,
  logDirCommand,
  logWritableCommand,
  missingPathsCommand,
  volumeHostPaths,
  weightFilesCommand,
} from '../host-commands/preflight.js';
import type { StepCommand } from '../host-commands/step-command.js';
import type { FailureTypeName } from '../shared/failures.js';
import type { HostFacts } from '../parsers/agreement-facts.js';
import { dockerSaid } from '../parsers/host-output.js';
import { carries, parseIpv4Addresses, type Ipv4Address } from '../parsers/ip-addr.js';
import type { ExecResult } from '../ssh/executor.js';
import { sentence } from '../shared/text.js';
import type { PreflightInput } from './preflight-input.js';
import {
  companionImageReads,
  companionMemoryReads,
  companionPortReads,
  companionVolumeReads,
  judgeCompanionImages,
  judgeCompanionMemory,
  judgeCompanionPorts,
  judgeCompanionVolumes,
} from './companion-preflight.js';

export interface Verdict {
  ok: boolean;
  detail: string;
  /**
   * The type a failed check gives the deploy's failure when every finding names one (the companion checks); else,
   * and on every other check, the failure is PreflightFailed.
   */
  failureType?: FailureTypeName;
}

/** One declared check. Its reads' names are unique across all checks, unless two checks share the very read. */
interface HostCheck<N extends string> {
  name: N;
  reads(input: PreflightInput): StepCommand[];
  /**
   * The verdict on its reads' answers (`answer(name)`), or undefined where it is not judged (it does not apply
   * here, or an earlier check's failure is already the finding). `earlier` is an earlier check's verdict.
   */
  judge(
    answer: (name: string) => ExecResult,
    input: PreflightInput,
    earlier: (name: string) => Verdict | undefined,
  ): Verdict | undefined;
}

const declare = <N extends string>(c: HostCheck<N>): HostCheck<N> => c;
const pass = (detail: string): Verdict => ({ ok: true, detail });
const fail = (detail: string): Verdict => ({ ok: false, detail });

function firstLines(text: string, max = 300): string {
  const trimmed = text.trim().split('\n').slice(0, 3).join(' ').trim();
  return trimmed.length > max ? `${trimmed.slice(0, max)}…` : trimmed;
}

const ssh = declare({
  name: 'ssh',
  reads: () => [],
  judge: (_answer, { host: { target } }) =>
    pass(
      `connected as ${target.user} to ${target.host}:${target.port}${target.jump ? ` through ${target.jump.name}` : ''}, host key verified`,
    ),
});

const docker = declare({
  name: 'docker',
  reads: () => [{ name: 'docker-version', command: dockerVersionCommand() }],
  judge: (answer, input) => {
    const res = answer('docker-version');
    const version = res.stdout.trim();
    if (res.exitCode === 0 && version !== '') return pass(`Docker ${version} answers`);
    const said = firstLines(res.stderr || res.stdout);
    const user = input.host.target.user;
    if (res.exitCode === 127 || /command not found|docker: not found/i.test(said))
      return fail(
        `docker is not installed, or not on the PATH of ${user}'s SSH sessions: install Docker Engine with the NVIDIA container toolkit`,
      );
    if (/permission denied/i.test(said))
      return fail(
        `${user} may not use the Docker socket (${said}): add it to the docker group (sudo usermod -aG docker ${user}) and reconnect`,
      );
    // The CLI's own words already ask whether the daemon runs: say what to do instead of asking again.
    if (/Cannot connect to the Docker daemon/i.test(said))
      return fail(
        `docker version failed (exit ${res.exitCode}): ${sentence(said)} Start it (sudo systemctl start docker; systemctl status docker says why it stopped)`,
      );
    return fail(
      `docker version failed (exit ${res.exitCode}): ${sentence(said || 'no output')} Is the Docker daemon running (systemctl status docker)?`,
    );
  },
});

const image = declare({
  name: 'image',
  reads: (input) => [{ name: 'image-id', command: imageIdCommand(input.image) }],
  judge: (answer, input, earlier) => {
    if (!earlier('docker')?.ok) return fail(`not checked: docker does not answer (see the docker check)`);
    const res = answer('image-id');
    if (res.exitCode === 0) return pass(`${input.image} is present (${res.stdout.trim().slice(0, 19)})`);
    return fail(
      `image ${input.image} is not on the host (${firstLines(res.stderr) || `exit ${res.exitCode}`}): run docker pull ${input.image} there, or docker load it`,
    );
  },
});

/**
 * The Ray container's `docker run --gpus all` fails on a host whose Docker has no NVIDIA runtime, after every
 * host's old services were stopped: asked here, before anything is. Judged only of an image that is there: a
 * missing image is the finding already.
 */
const gpus = declare({
  name: 'gpus',
  reads: (input) => [{ name: 'gpu-access', command: gpuAccessCommand(input.image) }],
  judge: (answer, input, earlier) => {
    if (!earlier('image')?.ok) return undefined;
    const res = answer('gpu-access');
    // 126/127: the image has no `true` to run, which the engine finds only after it set up the container's GPUs.
    if (res.exitCode === 0 || res.exitCode === 126 || res.exitCode === 127)
      return pass('docker run --gpus all starts a container');
    const said = firstLines(dockerSaid(res.stderr || res.stdout)) || `exit ${res.exitCode}`;
    if (/device driver|nvidia|gpu|cdi/i.test(said))
      return fail(
        `Docker cannot give containers GPUs (docker run --gpus all: ${said}): install the NVIDIA container toolkit on the host (nvidia-container-toolkit; then sudo nvidia-ctk runtime configure --runtime=docker and restart Docker)`,
      );
    return fail(
      `a throwaway docker run --gpus all of ${input.image} failed (exit ${res.exitCode}): ${sentence(said)} The Ray container's docker run would fail the same way.`,
    );
  },
});

const model = declare({
  name: 'model',
  reads: (input) => [
    { name: 'model-dir', command: folderExistsCommand(input.modelPath) },
    { name: 'weight-files', command: weightFilesCommand(input.modelPath) },
  ],
  judge: (answer, { modelPath }) => {
    if (answer('model-dir').exitCode !== 0)
      return fail(
        `model path ${modelPath} does not exist (or is not a folder the SSH user can read): download the weights there (huggingface-cli download ORG/NAME) or set serve.modelPath`,
      );
    const files = answer('weight-files')
      .stdout.split('\n')
      .filter((l) => l !== '');
    const shards = files.filter((f) => f.endsWith('.safetensors')).length;
    if (files.length === 0)
      return fail(
        `no *.safetensors or config.json below ${modelPath}: the weights are not downloaded there (huggingface-cli download ORG/NAME), or serve.modelPath points elsewhere`,
      );
    return pass(`${shards} .safetensors file(s) and ${files.length - shards} config.json below ${modelPath}`);
  },
});

const volumes = declare({
  name: 'volumes',
  reads: (input) => {
    const paths = volumeHostPaths(input.volumes);
    return paths.length > 0 ? [{ name: 'missing-paths', command: missingPathsCommand(paths) }] : [];
  },
  judge: (answer, input) => {
    const hostPaths = volumeHostPaths(input.volumes);
    if (hostPaths.length === 0) return pass('no host paths to mount');
    const missing = answer('missing-paths')
      .stdout.split('\n')
      .filter((l) => l !== '');
    if (missing.length > 0)
      return fail(
        `missing on the host: ${missing.join(', ')}. Create them (mkdir -p) or fix ray.volumes; docker would create an empty root-owned folder instead`,
      );
    return pass(`every host path exists: ${hostPaths.join(', ')}`);
  },
});

function describeAddresses(addresses: Ipv4Address[]): string {
  if (addresses.length === 0) return 'no IPv4 address';
  return addresses.map((a) => `${a.address}/${a.prefix} on ${a.iface}`).join(', ');
}

const iface = declare({
  name: 'interface',
  reads: (input) => [
    { name: 'addresses', command: ipv4AddressesCommand() },
    ...(input.iface !== undefined
      ? [{ name: 'addresses-iface', command: ipv4AddressesCommand(input.iface) }]
      : []),
  ],
  judge: (answer, { clusterIp, iface: name }) => {
    const addresses = parseIpv4Addresses(answer('addresses').stdout);
    const holder = addresses.find((a) => carries(a, clusterIp));
    const where = holder
      ? `clusterIp ${clusterIp} is on ${holder.iface}`
      : `clusterIp ${clusterIp} is on no interface of the host`;
    if (name === undefined)
      return holder
        ? pass(where)
        : fail(
            `${where} (it has ${describeAddresses(addresses)}): fix the host's clusterIp in the spec, or bring the interconnect up`,
          );
    const dev = answer('addresses-iface');
    if (dev.exitCode !== 0)
      return fail(
        `interface ${name} (NCCL_SOCKET_IFNAME) does not exist on the host (${firstLines(dev.stderr) || `exit ${dev.exitCode}`}); ${where}${holder ? `: set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to ${holder.iface}` : ''}`,
      );
    const onIface = parseIpv4Addresses(dev.stdout);
    if (!onIface.some((a) => carries(a, clusterIp)))
      return fail(
        `interface ${name} does not carry clusterIp ${clusterIp} (it has ${describeAddresses(onIface)}); ${where}`,
      );
    return pass(`${name} carries clusterIp ${clusterIp}`);
  },
});

const disk = declare({
  name: 'disk',
  // The nearest existing folder: a model path not yet created will live on its parent's filesystem.
  reads: (input) => [{ name: 'free-space', command: freeSpaceCommand(input.modelPath) }],
  judge: (answer, { modelPath, minFreeDiskGiB }) => {
    const res = answer('free-space');
    // POSIX format: `Filesystem 1024-blocks Used Available Capacity Mounted on`, one line per filesystem.
    const row = res.stdout
      .split('\n')
      .slice(1)
      .map((line) => /^(.*?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%\s+(\/.*)$/.exec(line.trim()))
      .find((m) => m !== null);
    if (res.exitCode !== 0 || !row?.[4] || !row[6])
      return fail(
        `could not read free space for ${modelPath} (df exit ${res.exitCode}: ${firstLines(res.stderr) || 'no output'})`,
      );
    const freeGiB = Number(row[4]) / 1024 / 1024;
    const shown = `${freeGiB.toFixed(1)} GiB free on ${row[6]} (the filesystem of ${modelPath})`;
    if (freeGiB < minFreeDiskGiB)
      return fail(
        `only ${shown}, ${minFreeDiskGiB} GiB needed: free space there (old images: docker image prune)`,
      );
    return pass(`${shown}, ${minFreeDiskGiB} GiB needed`);
  },
});

/**
 * The serve log's folder exists; the log is not a symbolic link and its folder, links followed, is not a system
 * folder: the launch truncates the log, so a link would truncate whatever it points at (the schema has already
 * refused a path that names a system folder as written).
 */
const logDir = declare({
  name: 'logDir',
  reads: (input) =>
    input.logDir === undefined
      ? []
      : [{ name: 'log-dir', command: logDirCommand(input.logDir, input.logPath) }],
  judge: (answer, { logDir: dir, logPath }) => {
    if (dir === undefined) return undefined;
    const res = answer('log-dir');
    if (res.exitCode === 2)
      return fail(
        `log folder ${dir} does not exist on the host: create it (mkdir -p ${dir}) or change serve.logPath`,
      );
    if (res.exitCode === 3)
      return fail(
        `serve.logPath ${logPath ?? ''} is a symbolic link on the host; the launch truncates the log, and would truncate what the link points at: remove the link (the log is created as a regular file) or change serve.logPath`,
      );
    const real = res.stdout.trim();
    const system = res.exitCode === 0 && real.startsWith('/') ? systemDirOf(real) : undefined;
    if (system !== undefined)
      return fail(
        `log folder ${dir} is ${real} once its links are followed, under the system folder ${system}: put serve.logPath in a folder of its own`,
      );
    return pass(`${dir} exists`);
  },
});

/**
 * The launch (`: > LOG`, then the marker beside it) runs as the SSH user: a log folder it cannot write fails the
 * launch after every host's old server was stopped. Judged where the folder is sound (else that is the finding).
 */
const logWritable = declare({
  name: 'logWritable',
  reads: ({ logDir: dir, logPath }) =>
    dir === undefined ? [] : [{ name: 'log-writable', command: logWritableCommand(dir, logPath) }],
  judge: (answer, { logDir: dir, logPath, host }, earlier) => {
    if (dir === undefined || !earlier('logDir')?.ok) return undefined;
    const res = answer('log-writable');
    const user = host.target.user;
    if (res.exitCode === 4)
      return fail(
        `${user} cannot create files in the log folder ${dir}, where the launch writes serve.logPath and its marker: make it ${user}'s (sudo chown ${user} ${dir}) or change serve.logPath`,
      );
    if (res.exitCode === 5)
      return fail(
        `serve.logPath ${logPath ?? ''} exists and ${user} cannot write it; the launch truncates it first: remove it or give it to ${user}`,
      );
    if (res.exitCode !== 0)
      return fail(`could not tell whether ${user} can write ${dir} (exit ${res.exitCode})`);
    return pass(`${user} can write in ${dir}`);
  },
});

/**
 * On a host that runs companions (and only there: elsewhere they neither read nor report): their own images (those
 * other than ray.image) and volume host paths are there; the main model's share of the host's memory and the
 * companions' budgets fit it; each companion's port is free, or held by what the deploy stops first
 * (src/steps/companion-preflight.ts has their reads and judges).
 */
const companionImages = declare({
  name: 'companionImages',
  reads: companionImageReads,
  judge: judgeCompanionImages,
});
const companionVolumes = declare({
  name: 'companionVolumes',
  reads: companionVolumeReads,
  judge: judgeCompanionVolumes,
});
const companionMemory = declare({
  name: 'companionMemory',
  reads: companionMemoryReads,
  judge: judgeCompanionMemory,
});
const companionPorts = declare({
  name: 'companionPorts',
  reads: companionPortReads,
  judge: judgeCompanionPorts,
});

/** In report order; a check judged after another may read that one's verdict. */
export const hostChecks = [
  ssh,
  docker,
  image,
  gpus,
  model,
  volumes,
  iface,
  disk,
  logDir,
  logWritable,
  companionImages,
  companionVolumes,
  companionMemory,
  companionPorts,
] as const;

export type PreflightCheckName = (typeof hostChecks)[number]['name'];

export interface PreflightCheck extends Verdict {
  name: PreflightCheckName;
}

export interface PreflightReport {
  host: string;
  ok: boolean;
  checks: PreflightCheck[];
  /**
   * This host's agreement facts, read in the same trip, for the workflow to pass to checkHostsAgree (parsed and
   * bounded, no secret among them); absent when the agreement was not read here or they were too big to pass.
   */
  facts?: HostFacts;
}
