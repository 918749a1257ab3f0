// Simulated nvidia-smi. Layouts are those of driver 580 (fixtures/nvidia-smi): the h200 flavour reports
// device memory; the gb10 flavour (DGX Spark, unified memory) reports `[N/A]` / `Not Supported` for it but
// still lists compute processes with their memory. Processes come from host-state's GPU registry.
import { createHash } from 'node:crypto';
import {
  hostDir,
  liveGpuProcesses,
  readHostConfig,
  type GpuProcess,
  type HostConfig,
} from '../host-state.js';
import type { ToolMain } from './tool.js';
import { toolIo } from './io.js';

interface Flavour {
  gpuName: string;
  driver: string;
  nvml: string;
  cuda: string;
  unifiedMemory: boolean;
}

const flavours: Record<HostConfig['flavour'], Flavour> = {
  h200: { gpuName: 'NVIDIA H200', driver: '580.159.04', nvml: '580.159', cuda: '13.0', unifiedMemory: false },
  gb10: { gpuName: 'NVIDIA GB10', driver: '580.95.05', nvml: '580.95', cuda: '13.0', unifiedMemory: true },
};

/** Memory the driver keeps for itself on a discrete GPU (free = total - reserved - used). */
const reservedMiB = 615;
/** PCI addresses of the GPUs in a DGX H200 tray; a one-GPU host looks like the captured VM. */
const dgxBusIds = ['18', '2A', '3A', '5D', '9A', 'AB', 'BA', 'DB'];

interface Gpu {
  index: number;
  uuid: string;
  busId: string;
  flavour: Flavour;
  totalMiB: number;
  usedMiB: number;
  busy: boolean;
  tempC: number;
  powerW: number;
  powerCapW: number | null;
  pstate: string;
  processes: GpuProcess[];
}

export function gpuUuid(hostName: string, index: number): string {
  const h = createHash('sha256').update(`liftoff-sim-gpu:${hostName}:${index}`).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function busIdOf(cfg: HostConfig, index: number): string {
  if (cfg.flavour === 'gb10') return index === 0 ? '0000000F:01:00.0' : `0000000F:0${index + 1}:00.0`;
  if (cfg.gpuCount === 1) return '00000000:00:06.0';
  return `00000000:${dgxBusIds[index] ?? (0x10 + index).toString(16).toUpperCase()}:00.0`;
}

function gpus(cfg: HostConfig, procs: GpuProcess[]): Gpu[] {
  const flavour = flavours[cfg.flavour];
  return Array.from({ length: cfg.gpuCount }, (_, index) => {
    const own = procs.filter((p) => p.gpuIndex === index);
    const busy = own.length > 0;
    const gb10 = cfg.flavour === 'gb10';
    return {
      index,
      uuid: gpuUuid(cfg.name, index),
      busId: busIdOf(cfg, index),
      flavour,
      totalMiB: cfg.gpuMemoryMiB,
      usedMiB: own.reduce((s, p) => s + p.usedMiB, 0),
      busy,
      tempC: gb10 ? (busy ? 42 : 35) : busy ? 36 : 34,
      powerW: gb10 ? (busy ? 31.54 : 11.17) : busy ? 120.31 : 106.42,
      powerCapW: gb10 ? null : 700,
      pstate: gb10 && !busy ? 'P8' : 'P0',
      processes: own,
    };
  });
}

// ------------------------------------------------------------------------------------------- table

/** C's asctime layout, as the first line of the table: "Wed Dec  2 10:04:53 2026". */
function asctime(d: Date): string {
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const two = (n: number) => String(n).padStart(2, '0');
  return `${days[d.getDay()]} ${months[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())} ${d.getFullYear()}`;
}

const wideRule = `+${'-'.repeat(89)}+`;
const gpuRule = `+${'-'.repeat(41)}+${'-'.repeat(24)}+${'-'.repeat(22)}+`;

function processName(name: string): string {
  return name.length <= 37 ? name : `...${name.slice(-34)}`;
}

function renderTable(cfg: HostConfig, list: Gpu[], showProcesses: boolean, now: Date): string {
  const flavour = flavours[cfg.flavour];
  const lines: string[] = [
    `${asctime(now)}       `,
    wideRule,
    `| NVIDIA-SMI ${flavour.driver.padEnd(23)}Driver Version: ${flavour.driver.padEnd(15)}CUDA Version: ${flavour.cuda.padEnd(9)}|`,
    gpuRule,
    '| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |',
    '| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |',
    '|                                         |                        |               MIG M. |',
    `|${'='.repeat(41)}+${'='.repeat(24)}+${'='.repeat(22)}|`,
  ];
  for (const g of list) {
    const cap = g.powerCapW === null ? 'N/A ' : `${g.powerCapW}W`;
    const memory = flavour.unifiedMemory
      ? ` ${'Not Supported'.padEnd(23)}`
      : `${`${g.usedMiB}MiB`.padStart(11)} / ${`${g.totalMiB}MiB`.padStart(9)} `;
    lines.push(
      `| ${String(g.index).padStart(3)}  ${flavour.gpuName.padEnd(29)}${'On'.padStart(4)}  |${g.busId.padStart(19)} ${'Off'.padStart(3)} |${(flavour.unifiedMemory ? 'N/A' : '0').padStart(21)} |`,
      `| N/A${`${g.tempC}C`.padStart(6)}${g.pstate.padStart(6)}${`${Math.round(g.powerW)}W`.padStart(16)} / ${cap.padStart(5)} |${memory}|${`0%`.padStart(8)}${'Default'.padStart(13)} |`,
      `|${' '.repeat(41)}|${' '.repeat(24)}|${(flavour.unifiedMemory ? 'N/A' : 'Disabled').padStart(21)} |`,
      gpuRule,
    );
  }
  lines.push(
    '',
    wideRule,
    `|${' Processes:'.padEnd(89)}|`,
    '|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |',
    '|        ID   ID                                                               Usage      |',
    `|${'='.repeat(89)}|`,
  );
  const procs = showProcesses ? list.flatMap((g) => g.processes) : [];
  if (procs.length === 0) lines.push(`|${'  No running processes found'.padEnd(89)}|`);
  for (const p of procs) {
    lines.push(
      `|${String(p.gpuIndex).padStart(5)}${'N/A'.padStart(6)}${'N/A'.padStart(5)}${String(p.pid).padStart(16)}${'C'.padStart(7)}   ${processName(p.processName).padEnd(37)}${`${p.usedMiB}MiB`.padStart(9)} |`,
    );
  }
  lines.push(wideRule, '');
  return lines.join('\n');
}

// ------------------------------------------------------------------------------------------- queries

interface Field<T> {
  header: string;
  unit?: string;
  value: (row: T) => string | number | null;
}

const gpuFields: Record<string, Field<Gpu>> = {
  index: { header: 'index', value: (g) => g.index },
  uuid: { header: 'uuid', value: (g) => g.uuid },
  name: { header: 'name', value: (g) => g.flavour.gpuName },
  'pci.bus_id': { header: 'pci.bus_id', value: (g) => g.busId },
  driver_version: { header: 'driver_version', value: (g) => g.flavour.driver },
  count: { header: 'count', value: () => null },
  persistence_mode: { header: 'persistence_mode', value: () => 'Enabled' },
  pstate: { header: 'pstate', value: (g) => g.pstate },
  compute_mode: { header: 'compute_mode', value: () => 'Default' },
  'memory.total': {
    header: 'memory.total',
    unit: 'MiB',
    value: (g) => (g.flavour.unifiedMemory ? null : g.totalMiB),
  },
  'memory.reserved': {
    header: 'memory.reserved',
    unit: 'MiB',
    value: (g) => (g.flavour.unifiedMemory ? null : reservedMiB),
  },
  'memory.used': {
    header: 'memory.used',
    unit: 'MiB',
    value: (g) => (g.flavour.unifiedMemory ? null : g.usedMiB),
  },
  'memory.free': {
    header: 'memory.free',
    unit: 'MiB',
    value: (g) => (g.flavour.unifiedMemory ? null : Math.max(0, g.totalMiB - reservedMiB - g.usedMiB)),
  },
  'utilization.gpu': { header: 'utilization.gpu', unit: '%', value: () => 0 },
  'utilization.memory': { header: 'utilization.memory', unit: '%', value: () => 0 },
  'power.draw': { header: 'power.draw', unit: 'W', value: (g) => g.powerW.toFixed(2) },
  'power.limit': {
    header: 'power.limit',
    unit: 'W',
    value: (g) => (g.powerCapW === null ? null : g.powerCapW.toFixed(2)),
  },
  'temperature.gpu': { header: 'temperature.gpu', value: (g) => g.tempC },
};
const gpuAliases: Record<string, string> = {
  gpu_uuid: 'uuid',
  gpu_name: 'name',
  gpu_bus_id: 'pci.bus_id',
  'persistence-mode': 'persistence_mode',
  'compute-mode': 'compute_mode',
};

interface AppRow {
  proc: GpuProcess;
  gpu: Gpu;
}

const appFields: Record<string, Field<AppRow>> = {
  pid: { header: 'pid', value: (r) => r.proc.pid },
  process_name: { header: 'process_name', value: (r) => r.proc.processName },
  used_gpu_memory: { header: 'used_gpu_memory', unit: 'MiB', value: (r) => r.proc.usedMiB },
  gpu_uuid: { header: 'gpu_uuid', value: (r) => r.gpu.uuid },
  gpu_name: { header: 'gpu_name', value: (r) => r.gpu.flavour.gpuName },
  gpu_bus_id: { header: 'gpu_bus_id', value: (r) => r.gpu.busId },
};
const appAliases: Record<string, string> = { used_memory: 'used_gpu_memory', name: 'process_name' };

function resolveFields<T>(
  spec: string,
  fields: Record<string, Field<T>>,
  aliases: Record<string, string>,
): Field<T>[] | string {
  const out: Field<T>[] = [];
  for (const raw of spec.split(',')) {
    const key = raw.trim();
    const field = fields[aliases[key] ?? key];
    if (!field) return key;
    out.push(field);
  }
  return out;
}

function renderCsv<T>(fields: Field<T>[], rows: T[], opts: { header: boolean; units: boolean }): string {
  const lines: string[] = [];
  if (opts.header) lines.push(fields.map((f) => (f.unit ? `${f.header} [${f.unit}]` : f.header)).join(', '));
  for (const row of rows) {
    lines.push(
      fields
        .map((f) => {
          const v = f.value(row);
          if (v === null) return '[N/A]';
          return f.unit && opts.units ? `${v} ${f.unit}` : String(v);
        })
        .join(', '),
    );
  }
  return lines.map((l) => `${l}\n`).join('');
}

// ------------------------------------------------------------------------------------------- -q

function renderQuery(cfg: HostConfig, list: Gpu[], showProcesses: boolean, now: Date): string {
  const flavour = flavours[cfg.flavour];
  const kv = (key: string, value: string | number) => `${key.padEnd(55)}: ${value}`;
  const mem = (v: number) => (flavour.unifiedMemory ? 'N/A' : `${v} MiB`);
  const lines = [
    '',
    '==============NVSMI LOG==============',
    '',
    kv('Timestamp', asctime(now)),
    kv('Driver Version', flavour.driver),
    kv('CUDA Version', flavour.cuda),
    '',
    kv('Attached GPUs', list.length),
  ];
  for (const g of list) {
    lines.push(
      `GPU ${g.busId}`,
      kv('    Product Name', flavour.gpuName),
      kv('    GPU UUID', g.uuid),
      '    FB Memory Usage',
      kv('        Total', mem(g.totalMiB)),
      kv('        Reserved', mem(reservedMiB + 1)),
      kv('        Used', mem(g.usedMiB)),
      kv('        Free', mem(Math.max(0, g.totalMiB - reservedMiB - g.usedMiB))),
      '    BAR1 Memory Usage',
      kv('        Total', flavour.unifiedMemory ? 'N/A' : '262144 MiB'),
      kv('        Used', flavour.unifiedMemory ? 'N/A' : '1 MiB'),
      kv('        Free', flavour.unifiedMemory ? 'N/A' : '262143 MiB'),
    );
    const procs = showProcesses ? g.processes : [];
    if (procs.length === 0) lines.push(kv('    Processes', 'None'));
    else {
      lines.push('    Processes');
      for (const p of procs) {
        lines.push(
          kv('        GPU instance ID', 'N/A'),
          kv('        Compute instance ID', 'N/A'),
          kv('        Process ID', p.pid),
          kv('            Type', 'C'),
          kv('            Name', p.processName),
          kv('            Used GPU Memory', `${p.usedMiB} MiB`),
        );
      }
    }
  }
  lines.push('', '');
  return lines.join('\n');
}

// ------------------------------------------------------------------------------------------- main

function usageError(): number {
  toolIo().stderr(`Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n`);
  return 2;
}

function selectGpus(list: Gpu[], ids: string | undefined): Gpu[] | undefined {
  if (ids === undefined) return list;
  const picked: Gpu[] = [];
  for (const id of ids.split(',')) {
    const g = list.find(
      (x) => String(x.index) === id.trim() || x.uuid === id.trim() || x.busId === id.trim(),
    );
    if (!g) return undefined;
    picked.push(g);
  }
  return picked;
}

export const main: ToolMain = (args) => {
  const dir = hostDir();
  const cfg = readHostConfig(dir);
  const flavour = flavours[cfg.flavour];
  // Inside a container the PID namespace hides host processes from nvidia-smi.
  const showProcesses = toolIo().env.LIFTOFF_SIM_CONTAINER === undefined;

  let queryGpu: string | undefined;
  let queryApps: string | undefined;
  let format: string | undefined;
  let ids: string | undefined;
  let mode: 'table' | 'list' | 'version' | 'query' | 'help' = 'table';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const eq = arg.indexOf('=');
    const key = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : undefined;
    const value = () => inline ?? args[++i];
    switch (key) {
      case '--query-gpu':
        queryGpu = value();
        break;
      case '--query-compute-apps':
        queryApps = value();
        break;
      case '--format':
        format = value();
        break;
      case '-i':
      case '--id':
        ids = value();
        break;
      case '-L':
      case '--list-gpus':
        mode = 'list';
        break;
      case '--version':
        mode = 'version';
        break;
      case '-q':
      case '--query':
        mode = 'query';
        break;
      case '-d':
      case '--display':
        value();
        break;
      case '-h':
      case '--help':
        mode = 'help';
        break;
      default:
        return Promise.resolve(usageError());
    }
  }
  if (mode === 'help') {
    toolIo().stdout(`NVIDIA System Management Interface -- v${flavour.driver}\n`);
    return Promise.resolve(0);
  }
  if (mode === 'version') {
    toolIo().stdout(
      [
        `NVIDIA-SMI version  : ${flavour.driver}`,
        `NVML version        : ${flavour.nvml}`,
        `DRIVER version      : ${flavour.driver}`,
        `CUDA Version        : ${flavour.cuda}`,
        '',
      ].join('\n'),
    );
    return Promise.resolve(0);
  }
  const all = gpus(cfg, liveGpuProcesses(dir));
  const list = selectGpus(all, ids);
  if (!list || list.length === 0) {
    toolIo().stdout('No devices were found\n');
    return Promise.resolve(6);
  }
  if (mode === 'list') {
    toolIo().stdout(list.map((g) => `GPU ${g.index}: ${flavour.gpuName} (UUID: ${g.uuid})\n`).join(''));
    return Promise.resolve(0);
  }
  if (queryGpu !== undefined || queryApps !== undefined) {
    if (queryGpu !== undefined && queryApps !== undefined) return Promise.resolve(usageError());
    const formatOpts = (format ?? '').split(',').map((s) => s.trim());
    if (!formatOpts.includes('csv') || formatOpts.some((o) => !['csv', 'noheader', 'nounits'].includes(o))) {
      toolIo().stderr(`"${format ?? ''}" is not a valid format. Please run 'nvidia-smi -h' for help.\n`);
      return Promise.resolve(2);
    }
    const opts = { header: !formatOpts.includes('noheader'), units: !formatOpts.includes('nounits') };
    if (queryGpu !== undefined) {
      const fields = resolveFields(queryGpu, gpuFields, gpuAliases);
      if (typeof fields === 'string') return Promise.resolve(invalidField(fields));
      const withCount = fields.map((f) => (f.header === 'count' ? { ...f, value: () => list.length } : f));
      toolIo().stdout(renderCsv(withCount, list, opts));
      return Promise.resolve(0);
    }
    const fields = resolveFields(queryApps ?? '', appFields, appAliases);
    if (typeof fields === 'string') return Promise.resolve(invalidField(fields));
    const rows = showProcesses ? list.flatMap((gpu) => gpu.processes.map((proc) => ({ proc, gpu }))) : [];
    toolIo().stdout(renderCsv(fields, rows, opts));
    return Promise.resolve(0);
  }
  const now = new Date();
  toolIo().stdout(
    mode === 'query'
      ? renderQuery(cfg, list, showProcesses, now)
      : renderTable(cfg, list, showProcesses, now),
  );
  return Promise.resolve(0);
};

function invalidField(name: string): number {
  toolIo().stdout(`Field "${name}" is not a valid field to query.\n\n`);
  return 2;
}
