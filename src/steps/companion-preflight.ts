// Preflight's companion checks on a host that runs companions (src/steps/preflight-checks.ts declares them): each
// companion's own image is on the host and its volumes' host paths exist; the main model's share of the host's
// memory plus the companions' budgets fit the host; and each companion's port is free or held by something the
// deploy stops first. Their reads and pure judges; a refusal names the host, the
// figures and the spec fields to change, and the failure type it gives the deploy. Read only, like all of preflight:
// nothing is stopped before every host passed.
import {
  companionContainersCommand,
  companionListenerCommand,
  gpuMemoryCommand,
  imageIdCommand,
  meminfoCommand,
  missingPathsCommand,
} from '../host-commands/preflight.js';
import { gpuFields } from '../host-commands/cleanup.js';
import type { StepCommand } from '../host-commands/step-command.js';
import { listenerOf } from '../parsers/host-output.js';
import { parseMeminfo } from '../parsers/meminfo.js';
import { parseQueryGpu } from '../parsers/nvidia-smi.js';
import type { ExecResult } from '../ssh/executor.js';
import { FailureType, type FailureTypeName } from '../shared/failures.js';
import { tail } from '../shared/text.js';
import type { CompanionOnHost, CompanionsOnHost, PreflightInput } from './preflight-input.js';

export interface CompanionCheckVerdict {
  ok: boolean;
  detail: string;
  /** The deploy's failure type when this is its only kind of finding (else PreflightFailed). */
  failureType?: FailureTypeName;
}

type Answer = (name: string) => ExecResult;

/** nvidia-smi's device table, as verifyGpusClear bounds it; /proc/meminfo is far shorter. */
const memoryReads = (): StepCommand[] => [
  { name: 'companion-gpus', command: gpuMemoryCommand(), maxBytes: 1024 * 1024 },
  { name: 'companion-meminfo', command: meminfoCommand(), maxBytes: 65536 + 4096 },
];

export function companionMemoryReads(input: PreflightInput): StepCommand[] {
  return input.companions ? memoryReads() : [];
}

/** Each companion's port (`port-PORT`: the ports on one host differ), and this cluster's running companions. */
export function companionPortReads(input: PreflightInput): StepCommand[] {
  if (!input.companions) return [];
  return [
    ...input.companions.companions.map((c) => ({
      name: portRead(c),
      command: companionListenerCommand(c.port),
      maxBytes: 16384,
    })),
    {
      name: 'companion-containers',
      command: companionContainersCommand(input.companions.cluster),
      maxBytes: 16384,
    },
  ];
}

const portRead = (c: CompanionOnHost): string => `companion-port-${c.port}`;

/** The memory the host gives a GPU, in MiB, and where that figure comes from. */
export interface HostMemory {
  mib: number;
  source: string;
}

/**
 * The host's memory as the main model's --gpu-memory-utilization counts it: on unified memory (nvidia-smi reports
 * memory.total as [N/A], GB10) MemTotal; else the GPU's memory.total (the smallest, where there are several: the
 * share is taken on each GPU the model uses). A string says why it cannot be told.
 */
export function hostMemoryOf(gpusRead: ExecResult, meminfoRead: ExecResult): HostMemory | string {
  if (gpusRead.exitCode !== 0 || gpusRead.stdoutCutBytes !== undefined)
    return `nvidia-smi --query-gpu exited with code ${gpusRead.exitCode}${gpusRead.stdoutCutBytes !== undefined ? ' and printed more than it can' : ''}: ${tail(gpusRead.stderr.trim() || gpusRead.stdout.trim(), 300)}`;
  try {
    const totals = parseQueryGpu(gpusRead.stdout, [...gpuFields]).map((row) => row['memory.total']);
    if (totals.length === 0) return 'nvidia-smi lists no GPU';
    if (totals.some((t) => t === null)) {
      if (meminfoRead.exitCode !== 0)
        return `/proc/meminfo could not be read (exit ${meminfoRead.exitCode}): ${tail(meminfoRead.stderr.trim(), 300)}`;
      const mib = Math.floor(parseMeminfo(meminfoRead.stdout).memTotalKiB / 1024);
      return { mib, source: 'MemTotal (unified memory)' };
    }
    const numbers = totals.filter((t): t is number => typeof t === 'number');
    if (numbers.length !== totals.length)
      return `nvidia-smi memory.total is not a figure: ${totals.map(String).join(', ').slice(0, 200)}`;
    return { mib: Math.min(...numbers), source: `the GPU's memory.total` };
  } catch (err) {
    return err instanceof Error ? err.message.slice(0, 300) : String(err).slice(0, 300);
  }
}

const mib = (n: number): string => `${Math.ceil(n)} MiB`;

/** The fit of the main model's share and this host's companions' budgets, and each budget against its own vLLM's. */
export function judgeCompanionMemory(
  answer: Answer,
  input: PreflightInput,
): CompanionCheckVerdict | undefined {
  const on = input.companions;
  if (!on) return undefined;
  const host = input.host.target.name;
  const memory = hostMemoryOf(answer('companion-gpus'), answer('companion-meminfo'));
  if (typeof memory === 'string')
    return { ok: false, detail: `could not tell the memory of ${host}: ${memory}` };
  return judgeMemoryFit(host, memory, on);
}

/** The pure sum, on figures already read. */
export function judgeMemoryFit(
  host: string,
  memory: HostMemory,
  on: CompanionsOnHost,
): CompanionCheckVerdict {
  const { value: util, fromArgs } = on.mainUtilization;
  const mainShare = util * memory.mib;
  const budgets = on.companions.reduce((n, c) => n + c.memoryMiB, 0);
  const listed = on.companions
    .map((c) => `${c.name} ${c.memoryMiB} MiB (companions[${c.index}].memoryMiB)`)
    .join(', ');
  const utilText = fromArgs
    ? `serve.args --gpu-memory-utilization ${util}`
    : `--gpu-memory-utilization ${util}, vLLM's default as serve.args gives none`;
  const shareText = `the main model's share, ${mib(mainShare)} (${utilText}, of ${memory.mib} MiB, ${memory.source})`;
  const problems: string[] = [];
  if (mainShare + budgets > memory.mib) {
    const room = Math.floor(((memory.mib - budgets) / memory.mib) * 100) / 100;
    const lower =
      room > 0
        ? `lower serve.args --gpu-memory-utilization (to at most ${room} here)`
        : 'lower serve.args --gpu-memory-utilization';
    problems.push(
      `on ${host}, ${shareText} and the companions' budgets, ${budgets} MiB (${listed}), come to ${mib(mainShare + budgets)}, ${mib(mainShare + budgets - memory.mib)} more than the host's ${memory.mib} MiB: ${lower}, or ${on.companions.map((c) => `companions[${c.index}].memoryMiB`).join(', ')}`,
    );
  }
  for (const c of on.companions) {
    if (c.utilization === undefined) continue;
    const reserved = c.utilization * memory.mib;
    if (reserved > c.memoryMiB)
      problems.push(
        `on ${host}, companion ${c.name}'s own command gives vLLM --gpu-memory-utilization ${c.utilization}, ${mib(reserved)} of the host's ${memory.mib} MiB, more than its budget companions[${c.index}].memoryMiB ${c.memoryMiB}: raise companions[${c.index}].memoryMiB to at least ${Math.ceil(reserved)}, or lower --gpu-memory-utilization in companions[${c.index}].command`,
      );
  }
  if (problems.length > 0)
    return { ok: false, detail: problems.join('; '), failureType: FailureType.companionsDoNotFit };
  return {
    ok: true,
    detail: `${shareText} and the companions' ${budgets} MiB (${listed}) fit, ${mib(memory.mib - mainShare - budgets)} to spare`,
  };
}

/** This cluster's companions running on the host, by name (docker ps's liftoff.companion labels). */
function runningCompanions(res: ExecResult): Set<string> {
  if (res.exitCode !== 0) return new Set();
  return new Set(
    res.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== ''),
  );
}

/** Each companion's port: free, held by what the deploy stops (checked again when it starts), or refused. */
export function judgeCompanionPorts(
  answer: Answer,
  input: PreflightInput,
): CompanionCheckVerdict | undefined {
  const on = input.companions;
  if (!on) return undefined;
  const host = input.host.target.name;
  const running = runningCompanions(answer('companion-containers'));
  const passed: string[] = [];
  const refused: string[] = [];
  let unread = false;
  for (const c of on.companions) {
    const res = answer(portRead(c));
    if (res.exitCode !== 0) {
      unread = true;
      refused.push(
        `could not tell whether companions[${c.index}].port ${c.port} is free on ${host} (ss exited with code ${res.exitCode}: ${tail(res.stderr.trim() || res.stdout.trim(), 200)})`,
      );
      continue;
    }
    const held = listenerOf(res.stdout);
    if (held === undefined) {
      passed.push(`${c.name}'s port ${c.port} is free`);
      continue;
    }
    const stopped = running.has(c.name)
      ? `its own container (companion ${c.name} of cluster ${on.cluster}) runs there and is replaced`
      : on.cleanupListed
        ? 'the deploy stops what spec.cleanup lists first'
        : undefined;
    if (stopped !== undefined) {
      passed.push(
        `${c.name}'s port ${c.port} is in use now (${held}); ${stopped}, and the port is checked again after the stop, when ${c.name} starts`,
      );
      continue;
    }
    refused.push(
      `companions[${c.index}].port ${c.port} is in use on ${host} (${held}), and the deploy stops nothing that could hold it (no container of companion ${c.name} of cluster ${on.cluster} runs there, and spec.cleanup lists no services or containers): stop what listens on it, list its service or container in spec.cleanup, or pick another companions[${c.index}].port`,
    );
  }
  if (refused.length > 0)
    return {
      ok: false,
      detail: refused.join('; '),
      ...(unread ? {} : { failureType: FailureType.companionPortInUse }),
    };
  return { ok: true, detail: passed.join('; ') };
}

/**
 * The companions' images that the main image check does not already cover: each other image once, named by the
 * companions that use it.
 */
function otherImages(input: PreflightInput): Map<string, CompanionOnHost[]> {
  const images = new Map<string, CompanionOnHost[]>();
  for (const c of input.companions?.companions ?? []) {
    if (c.image === input.image) continue;
    images.set(c.image, [...(images.get(c.image) ?? []), c]);
  }
  return images;
}

const imageRead = (i: number): string => `companion-image-${i}`;

export function companionImageReads(input: PreflightInput): StepCommand[] {
  return [...otherImages(input).keys()].map((image, i) => ({
    name: imageRead(i),
    command: imageIdCommand(image),
    maxBytes: 16384,
  }));
}

/** Each companion image other than ray.image is on the host: a companion's docker run would fail after the stop. */
export function judgeCompanionImages(
  answer: Answer,
  input: PreflightInput,
): CompanionCheckVerdict | undefined {
  const images = [...otherImages(input)];
  if (images.length === 0) return undefined;
  const host = input.host.target.name;
  const passed: string[] = [];
  const missing: string[] = [];
  images.forEach(([image, users], i) => {
    const res = answer(imageRead(i));
    const fields = users.map((c) => `companions[${c.index}].image`).join(', ');
    if (res.exitCode === 0) passed.push(`${image} is present`);
    else
      missing.push(
        `image ${image} (${fields}) is not on ${host} (${tail(res.stderr.trim() || `exit ${res.exitCode}`, 200)}): run docker pull ${image} there, or docker load it, or fix ${fields}`,
      );
  });
  if (missing.length > 0) return { ok: false, detail: missing.join('; ') };
  return { ok: true, detail: passed.join('; ') };
}

const companionPaths = (input: PreflightInput): string[] => [
  ...new Set((input.companions?.companions ?? []).flatMap((c) => c.volumeHostPaths)),
];

export function companionVolumeReads(input: PreflightInput): StepCommand[] {
  const paths = companionPaths(input);
  return paths.length > 0
    ? [{ name: 'companion-missing-paths', command: missingPathsCommand(paths), maxBytes: 65536 }]
    : [];
}

/** Every host path a companion mounts exists: docker would create an empty root-owned folder instead. */
export function judgeCompanionVolumes(
  answer: Answer,
  input: PreflightInput,
): CompanionCheckVerdict | undefined {
  const paths = companionPaths(input);
  if (paths.length === 0) return undefined;
  const host = input.host.target.name;
  const res = answer('companion-missing-paths');
  if (res.exitCode !== 0)
    return {
      ok: false,
      detail: `could not tell whether the companions' volume paths exist on ${host} (exit ${res.exitCode}: ${tail(res.stderr.trim(), 200)})`,
    };
  const missing = new Set(res.stdout.split('\n').filter((l) => l !== ''));
  const problems = (input.companions?.companions ?? []).flatMap((c) => {
    const gone = c.volumeHostPaths.filter((p) => missing.has(p));
    return gone.length > 0
      ? [
          `missing on ${host}: ${gone.join(', ')} (companions[${c.index}].volumes of ${c.name}). Create them (mkdir -p) or fix companions[${c.index}].volumes; docker would create an empty root-owned folder instead`,
        ]
      : [];
  });
  if (problems.length > 0) return { ok: false, detail: problems.join('; ') };
  return { ok: true, detail: `every companion host path exists: ${paths.join(', ')}` };
}
