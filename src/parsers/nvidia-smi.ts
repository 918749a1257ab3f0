// nvidia-smi output: the CSV of --query-compute-apps and --query-gpu (with or without header and units).
// On GB10 (unified memory) memory fields read `[N/A]` or `Not Supported`: those
// become null, never 0, so callers cannot mistake "unknown" for "free". A number no real nvidia-smi prints
// (negative, not finite, absurdly large) is an error, never a value a check could pass on. judgeGpusClear is the
// one verdict on what the queries found: whether anything holds the GPUs.
import { FailureType } from '../shared/failures.js';
import { boundedNumber, hostLines } from './host-output.js';

export class NvidiaSmiParseError extends Error {
  override readonly name = 'NvidiaSmiParseError';
}

export interface ComputeApp {
  pid: number;
  processName: string;
  /** null when nvidia-smi cannot tell (`[N/A]`, `[Not Supported]`). */
  usedMiB: number | null;
  gpuUuid?: string;
}

export type QueryValue = string | number | null;
export type QueryRecord = Record<string, QueryValue>;

const unavailable = new Set([
  '[N/A]',
  'N/A',
  '[Not Supported]',
  'Not Supported',
  '[Unknown Error]',
  '[Insufficient Permissions]',
]);

/**
 * A number with an optional unit as nvidia-smi prints it: `29222 MiB`, `0 %`, `11.17 W`, `35`. Signs and
 * exponents are matched too, so that `-5000` or `1e999` is caught by the bound instead of read as a name.
 */
const numberWithUnit = /^([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?:\s*(?:MiB|GiB|KiB|B|%|W|C|MHz|s|us))?$/i;
/** No field nvidia-smi prints (MiB, MHz, W, %, an index) comes near this. */
const maxValue = 1e9;
/** Linux's PID_MAX_LIMIT. */
const maxPid = 4_194_304;

/** `memory.total [MiB]` → `memory.total`. */
function fieldName(headerCell: string): string {
  return headerCell.replace(/\s*\[[^\]]*\]\s*$/, '').trim();
}

/** nvidia-smi prints its own failures (no driver, no devices) on stdout in place of the CSV. */
const nvidiaSmiError =
  /^(NVIDIA-SMI has failed|No devices were found|Failed to initialize NVML|Unable to determine)/i;

function parseValue(cell: string, field: string): QueryValue {
  if (unavailable.has(cell)) return null;
  const match = numberWithUnit.exec(cell);
  return match?.[1] !== undefined
    ? boundedNumber(Number(match[1]), `nvidia-smi ${field}`, maxValue, cell)
    : cell;
}

const headerCell = /^[a-z][a-z0-9_.]*(?: \[[^\]]+\])?$/i;

function looksLikeHeader(cells: string[], fields?: readonly string[]): boolean {
  if (!cells.every((c) => headerCell.test(c))) return false;
  if (fields && cells.map(fieldName).join(',') === fields.join(',')) return true;
  // Data rows are numbers, names and uuids; a header row has dotted or bracketed field names, or `pid`.
  return cells.some((c) => c.includes('.') || c.includes('[') || c === 'pid');
}

/** The cells of a `--format=csv` answer: its header's field names (none under `noheader`) and its data rows. */
function csvRows(csv: string, fields?: readonly string[]): { header?: string[]; data: string[][] } {
  const lines = hostLines(csv)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const [first = ''] = lines;
  if (nvidiaSmiError.test(first)) throw new NvidiaSmiParseError(`nvidia-smi reported an error: ${first}`);
  const rows = lines.map((l) => l.split(',').map((cell) => cell.trim()));
  const [head] = rows;
  if (head && looksLikeHeader(head, fields)) return { header: head.map(fieldName), data: rows.slice(1) };
  return { data: rows };
}

/**
 * `--query-gpu=… --format=csv[,noheader][,nounits]`. With a header the keys come from it (units stripped);
 * without one pass the queried field list. Numbers are parsed; unavailable values are null.
 */
export function parseQueryGpu(csv: string, fields?: readonly string[]): QueryRecord[] {
  const { header, data } = csvRows(csv, fields);
  if (!header && data.length === 0) return [];
  const keys = header ? (fields ?? header) : fields;
  if (!keys) {
    throw new NvidiaSmiParseError('nvidia-smi --query-gpu output has no header: pass the queried field list');
  }
  return data.map((cells, row) => {
    if (cells.length !== keys.length) {
      throw new NvidiaSmiParseError(
        `nvidia-smi --query-gpu row ${row + 1} has ${cells.length} values for ${keys.length} fields (${keys.join(', ')}): ${cells.join(', ')}`,
      );
    }
    return Object.fromEntries(keys.map((key, i) => [key, parseValue(cells[i] ?? '', key)]));
  });
}

const defaultComputeAppFields = ['pid', 'process_name', 'used_gpu_memory', 'gpu_uuid'] as const;

/**
 * `--query-compute-apps=pid,process_name,used_gpu_memory[,gpu_uuid] --format=csv[,noheader][,nounits]`.
 * Without a header the columns are taken in that order (or as `fields` says). A process name that itself
 * holds ", " is rejoined, since nvidia-smi does not quote it.
 */
export function parseComputeApps(csv: string, fields?: readonly string[]): ComputeApp[] {
  const { header, data } = csvRows(csv, fields);
  if (!header && data.length === 0) return [];
  const columns = header ?? fields ?? defaultComputeAppFields;
  const pidAt = columns.indexOf('pid');
  const nameAt = columns.indexOf('process_name');
  if (pidAt < 0)
    throw new NvidiaSmiParseError(
      `nvidia-smi --query-compute-apps output has no pid column: ${columns.join(', ')}`,
    );

  return data.map((rawCells) => {
    const cells = [...rawCells];
    if (nameAt >= 0 && cells.length > columns.length) {
      const parts = cells.length - columns.length + 1;
      cells.splice(nameAt, parts, cells.slice(nameAt, nameAt + parts).join(', '));
    }
    const cell = (name: string): string | undefined => {
      const i = columns.indexOf(name);
      return i >= 0 ? cells[i] : undefined;
    };
    const pidText = cells[pidAt] ?? '';
    if (!/^\d+$/.test(pidText)) {
      throw new NvidiaSmiParseError(
        `nvidia-smi --query-compute-apps: not a pid ${JSON.stringify(pidText)} in row: ${rawCells.join(', ')}`,
      );
    }
    const memory = cell('used_gpu_memory') ?? cell('used_memory');
    const parsedMemory = memory === undefined ? null : parseValue(memory, 'used_gpu_memory');
    if (typeof parsedMemory === 'string') {
      throw new NvidiaSmiParseError(
        `nvidia-smi --query-compute-apps: not a memory figure ${JSON.stringify(parsedMemory)} in row: ${rawCells.join(', ')}`,
      );
    }
    const uuid = cell('gpu_uuid');
    return {
      pid: boundedNumber(Number(pidText), 'nvidia-smi --query-compute-apps pid', maxPid, pidText),
      processName: cell('process_name') ?? cell('name') ?? '',
      usedMiB: parsedMemory,
      ...(uuid !== undefined && uuid !== '' && !unavailable.has(uuid) ? { gpuUuid: uuid } : {}),
    };
  });
}

/** A host's GPUs as the queries found them (activities/gpu.ts reads them, with /proc/meminfo's MemAvailable). */
export interface GpuLook {
  host: string;
  gpus: ReadonlyArray<{ index: number; memoryUsedMiB: number | null }>;
  processes: readonly ComputeApp[];
  /** nvidia-smi cannot report device memory (GB10): MemAvailable is the measure instead. */
  unifiedMemory: boolean;
  memAvailableMiB: number;
}

export interface GpuClearLimits {
  /** Device memory still used that counts as "not clear", where nvidia-smi reports it. */
  maxUsedMiB: number;
  /** On unified memory: the MemAvailable a launch needs. */
  minAvailableMiB: number;
}

export type GpuClearVerdict =
  | { ok: true }
  | {
      ok: false;
      type: typeof FailureType.gpuNotClear;
      message: string;
      busyGpus: Array<{ index: number; memoryUsedMiB: number | null }>;
    };

/**
 * Clear: no compute process; device memory, where nvidia-smi reports it, at most maxUsedMiB per GPU; on unified
 * memory MemAvailable at least minAvailableMiB. Memory of a killed process is freed some seconds later, so a
 * caller may wait and ask again.
 */
export function judgeGpusClear(look: GpuLook, limits: GpuClearLimits): GpuClearVerdict {
  const busyGpus = look.gpus
    .filter((g) => g.memoryUsedMiB !== null && g.memoryUsedMiB > limits.maxUsedMiB)
    .map((g) => ({ index: g.index, memoryUsedMiB: g.memoryUsedMiB }));
  const lowMemory = look.unifiedMemory && look.memAvailableMiB < limits.minAvailableMiB;
  if (look.processes.length === 0 && busyGpus.length === 0 && !lowMemory) return { ok: true };

  const findings: string[] = [];
  if (look.processes.length > 0) {
    const memory = (p: ComputeApp) => (p.usedMiB === null ? 'memory unknown' : `${p.usedMiB} MiB`);
    const listed = look.processes.map((p) => `pid ${p.pid} ${p.processName} (${memory(p)})`).join(', ');
    findings.push(`${look.processes.length} compute process(es) hold them: ${listed}`);
  }
  if (busyGpus.length > 0) {
    const listed = busyGpus.map((g) => `GPU ${g.index} ${g.memoryUsedMiB} MiB used`).join(', ');
    findings.push(`device memory above ${limits.maxUsedMiB} MiB: ${listed}`);
  }
  if (lowMemory) {
    findings.push(
      `unified memory: MemAvailable ${look.memAvailableMiB} MiB, below the ${limits.minAvailableMiB} MiB required`,
    );
  }
  return {
    ok: false,
    type: FailureType.gpuNotClear,
    message:
      `GPUs on ${look.host} are not clear: ${findings.join('; ')}. ` +
      'Stop what holds them (add its service to cleanup.services or its container to cleanup.containers, ' +
      'or kill the pid on the host); memory of a killed process is freed some seconds later.',
    busyGpus,
  };
}
