// Text formats of `ray status`, matching fixtures/ray-status/two-nodes.txt, and the banners of `ray start`.
import type { StatusSnapshot } from './protocol.js';

/** Python's repr of a float: `2.0`, `0.5`, `40.0`. */
export function pyFloat(n: number): string {
  return Number.isInteger(n) ? n.toFixed(1) : String(n);
}

/** Ray's format_memory: `0B`, `1023.0MiB`, `221.76GiB` (value rounded to two decimals, Python repr). */
export function formatMemory(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  if (bytes === 0) return '0B';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const rounded = Math.round(value * 100) / 100;
  return `${unit === 0 ? String(Math.round(value)) : pyFloat(rounded)}${units[unit]}`;
}

/** `2026-04-19 17:08:02.711002` (local time, microseconds like Python's datetime). */
export function autoscalerTimestamp(d = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const micros = d.getMilliseconds() * 1000 + Math.floor(Math.random() * 1000);
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(micros, 6)}`;
}

const RULE = '-'.repeat(63);

export function formatStatus(status: StatusSnapshot, now = new Date()): string {
  const sum = (pick: (n: StatusSnapshot['nodes'][number]) => number) =>
    status.nodes.reduce((s, n) => s + pick(n), 0);
  const lines = [
    `======== Autoscaler status: ${autoscalerTimestamp(now)} ========`,
    'Node status',
    RULE,
    'Active:',
    ...(status.nodes.length ? status.nodes.map((n) => ` 1 node_${n.nodeId}`) : [' (no active nodes)']),
    'Pending:',
    ' (no pending nodes)',
    'Recent failures:',
    ' (no failures)',
    '',
    'Resources',
    RULE,
    'Total Usage:',
    ` 0.0/${pyFloat(sum((n) => n.cpus))} CPU`,
    ` ${pyFloat(status.usedGpus)}/${pyFloat(sum((n) => n.gpus))} GPU`,
    ` 0B/${formatMemory(sum((n) => n.memoryBytes))} memory`,
    ` 0B/${formatMemory(sum((n) => n.objectStoreBytes))} object_store_memory`,
    '',
    'From request_resources:',
    ' (none)',
    'Pending Demands:',
    ...(status.pendingPlacementGroups.length
      ? status.pendingPlacementGroups.map((specs) => ` ${specs} (PACK): 1+ pending placement groups`)
      : [' (no resource demands)']),
  ];
  return `${lines.join('\n')}\n`;
}

/** The bundle list as Ray prints it: `[{'GPU': 1.0, 'node:10.1.230.180': 0.001}, {'GPU': 1.0}]`. */
export function formatBundleSpecs(bundles: number, driverIp: string): string {
  const specs = Array.from({ length: bundles }, (_, i) =>
    i === 0 ? `{'GPU': 1.0, 'node:${driverIp}': 0.001}` : `{'GPU': 1.0}`,
  );
  return `[${specs.join(', ')}]`;
}

/** Pending-demand form: `{'GPU': 1.0, 'node:IP': 0.001} * 1, {'GPU': 1.0} * 1`. */
export function formatPendingDemand(bundles: number, driverIp: string): string {
  const parts = [`{'GPU': 1.0, 'node:${driverIp}': 0.001} * 1`];
  if (bundles > 1) parts.push(`{'GPU': 1.0} * ${bundles - 1}`);
  return parts.join(', ');
}

export function headBanner(nodeIp: string, port: number, dashboardHost: string): string[] {
  const dashboard = dashboardHost === '0.0.0.0' ? nodeIp : dashboardHost;
  return [
    '',
    '--------------------',
    'Ray runtime started.',
    '--------------------',
    '',
    'Next steps',
    '  To add another node to this Ray cluster, run',
    `    ray start --address='${nodeIp}:${port}'`,
    '',
    '  To connect to this Ray cluster:',
    '    import ray',
    `    ray.init(_node_ip_address='${nodeIp}')`,
    '',
    '  To submit a Ray job using the Ray Jobs CLI:',
    `    RAY_ADDRESS='http://${dashboard}:8265' ray job submit --working-dir . -- python my_script.py`,
    '',
    '  See https://docs.ray.io/en/latest/cluster/running-applications/job-submission/index.html ',
    '  for more information on submitting Ray jobs to the Ray cluster.',
    '',
    '  To terminate the Ray runtime, run',
    '    ray stop',
    '',
    '  To view the status of the cluster, use',
    '    ray status',
    '',
    '  To monitor and debug Ray, view the dashboard at ',
    `    ${dashboard}:8265`,
    '',
    '  If connection to the dashboard fails, check your firewall settings and network configuration.',
  ];
}

export const WORKER_BANNER = [
  '',
  '--------------------',
  'Ray runtime started.',
  '--------------------',
  '',
  'To terminate the Ray runtime, run',
  '  ray stop',
];

export const BLOCK_TEXT = [
  '--block',
  '  This command will now block forever until terminated by a signal.',
  '  Running subprocesses are monitored and a message will be printed if any of them terminate unexpectedly. Subprocesses exit with SIGTERM will be treated as graceful, thus NOT reported.',
];
