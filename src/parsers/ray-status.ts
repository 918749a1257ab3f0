// `ray status` text: node membership and resource totals. The point is to count nodes and GPUs, never to
// trust that the command merely answered. Ray 2.4x prints `Total Usage:` / `Pending Demands:`; older
// releases print `Usage:` / `Demands:`; both are read. Counts and quantities are bounded: a node count or a
// GPU total no real cluster has is an error, never a number the cluster check could pass on. judgeRayStatus is the
// one verdict on an answer: the deploy's verification, the launch's recheck and the supervisor's probe all use it.
import { FailureType } from '../shared/failures.js';
import { redactedTail } from '../shared/secrets.js';
import { clause } from '../shared/text.js';
import { boundedNumber, hostLines, HostOutputError } from './host-output.js';

/** More nodes than any Ray cluster liftoff drives; a count past it is not real `ray status` output. */
export const maxRayNodes = 10_000;
/** CPU, GPU and custom resources, in units. */
const maxUnits = 1e7;
/** memory and object_store_memory, in bytes (1 EiB). */
const maxBytes = 2 ** 60;

export interface RayStatus {
  /** Node ids (`node_…`) listed under Active:, and under Idle: on Ray versions that split them out. */
  activeNodes: string[];
  /** The Idle: subset of activeNodes (empty on versions without that section). */
  idleNodes: string[];
  pendingNodes: string[];
  failures: string[];
  /** CPU and GPU in units; memory and object_store_memory in bytes. */
  resources: Record<string, { used: number; total: number }>;
  pendingDemands: string[];
}

export class RayNotRunningError extends Error {
  override readonly name = 'RayNotRunningError';
  /** `detail`: the line of `ray status` that told us. */
  constructor(readonly detail: string) {
    super(
      `Ray is not running or not reachable: ${detail}. Check that the Ray head container is up (docker ps, docker logs) and that RAY_ADDRESS / --address point at the head.`,
    );
  }
}

export class RayStatusParseError extends Error {
  override readonly name = 'RayStatusParseError';
}

const byteUnits: Record<string, number> = {
  B: 1,
  ...Object.fromEntries(['K', 'M', 'G', 'T', 'P'].map((p, i) => [`${p}iB`, 1024 ** (i + 1)])),
  ...Object.fromEntries(['K', 'M', 'G', 'T'].map((p, i) => [`${p}B`, 1000 ** (i + 1)])),
};

/** `0.0`, `40.0`, `0B`, `221.76GiB` → a number (bytes for sizes), bounded; `what` names it in errors. */
function quantity(text: string, what: string): number | undefined {
  const match = /^([-+]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([KMGTP]i?B|B)?$/i.exec(text.trim());
  if (!match?.[1]) return undefined;
  const unit = match[2];
  if (unit === undefined) return boundedNumber(Number(match[1]), what, maxUnits, text);
  const factor = byteUnits[unit];
  if (factor === undefined) return undefined;
  return boundedNumber(Math.round(Number(match[1]) * factor), what, maxBytes, text);
}

const headDownPatterns = [
  /Could not find any running Ray instance/i,
  /ConnectionError:.*Ray/i,
  /Failed to connect to GCS/i,
  /Unable to connect to GCS/i,
  /No cluster status/i,
];

type Section = 'none' | 'active' | 'idle' | 'pending' | 'failures' | 'usage' | 'requests' | 'demands';

const sectionHeaders: Array<[RegExp, Section]> = [
  [/^Active:$/, 'active'],
  [/^Idle:$/, 'idle'],
  [/^Pending:$/, 'pending'],
  [/^Recent failures:$/, 'failures'],
  [/^(Total )?Usage:$/, 'usage'],
  [/^From request_resources:$/, 'requests'],
  [/^(Pending )?Demands:$/, 'demands'],
];

/** `(no pending nodes)`, `(no failures)`, `(none)`, `(no resource demands)`. */
const emptyMarker = /^\(no .*\)$|^\(none\)$/;

/**
 * Parses `ray status`. Throws RayNotRunningError when the text says no cluster answers (head down,
 * GCS unreachable, autoscaler not reporting yet), RayStatusParseError when it is not `ray status` output.
 */
export function parseRayStatus(text: string): RayStatus {
  const lines = hostLines(text).map((l) => l.replace(/\r$/, ''));
  for (const pattern of headDownPatterns) {
    const line = lines.find((l) => pattern.test(l));
    if (line !== undefined) throw new RayNotRunningError(line.trim());
  }
  if (!lines.some((l) => /^Node status\s*$/.test(l.trim()))) {
    throw new RayStatusParseError(
      `not ray status output (no "Node status" section): ${JSON.stringify(text.slice(0, 300))}`,
    );
  }

  const status: RayStatus = {
    activeNodes: [],
    idleNodes: [],
    pendingNodes: [],
    failures: [],
    resources: {},
    pendingDemands: [],
  };
  // The sections whose lines are kept as printed.
  const kept: Partial<Record<Section, string[]>> = {
    pending: status.pendingNodes,
    failures: status.failures,
    demands: status.pendingDemands,
  };
  let section: Section = 'none';
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || /^-+$/.test(line) || /^=+ .* =+$/.test(line)) continue;
    if (line === 'Node status' || line === 'Resources') {
      section = 'none';
      continue;
    }
    const header = sectionHeaders.find(([pattern]) => pattern.test(line));
    if (header) {
      section = header[1];
      continue;
    }
    if (emptyMarker.test(line)) continue;
    kept[section]?.push(line);
    if (section === 'active' || section === 'idle') {
      // ` 1 node_83e4…`; with node types configured the id is a type name and the count can exceed 1.
      const [, countText, node] = /^(\d+)\s+(\S+)/.exec(line) ?? [];
      if (!countText || !node) continue;
      const count = boundedNumber(
        Number(countText),
        `ray status node count of ${node}`,
        maxRayNodes,
        countText,
      );
      if (status.activeNodes.length + count > maxRayNodes) {
        throw new HostOutputError(
          `ray status lists more than ${maxRayNodes} nodes (at ${JSON.stringify(line)}): more than any real cluster. The host's output cannot be trusted; check \`ray status\` on the head by hand.`,
        );
      }
      for (let i = 0; i < count; i++) {
        status.activeNodes.push(node);
        if (section === 'idle') status.idleNodes.push(node);
      }
    } else if (section === 'usage') {
      // ` 0.0/2.0 GPU`, ` 0B/221.76GiB memory`, newer Ray may append `(… reserved in placement groups)`.
      const [, usedText, totalText, name] = /^(\S+)\/(\S+)\s+(\S+)/.exec(line) ?? [];
      if (!usedText || !totalText || !name) continue;
      const used = quantity(usedText, `ray status ${name} used`);
      const total = quantity(totalText, `ray status ${name} total`);
      if (used !== undefined && total !== undefined) status.resources[name] = { used, total };
    }
  }
  return status;
}

/** What the cluster must show. Without `nodes` only the GPUs count (the launch needs GPUs, wherever they are). */
export interface RayExpectation {
  nodes?: number;
  gpus: number;
}

export interface RayCount {
  nodes: number;
  gpus: number;
  gpusUsed: number;
}

type NoCount = typeof FailureType.rayClusterIncomplete | typeof FailureType.hostOutputInvalid;

export type RayVerdict =
  | { ok: true; seen: RayCount; message: string }
  /** Ray answered with fewer nodes or GPUs than expected: a node may still be joining, or one left. */
  | { ok: false; type: typeof FailureType.rayClusterIncomplete; seen: RayCount; message: string }
  /**
   * No count: the head's container is not running (`headContainerDown`), or Ray in it does not answer; or
   * (HostOutputInvalid) the answer holds what no real `ray status` prints, which no wait can fix.
   */
  | { ok: false; type: NoCount; problem: string; headContainerDown: boolean; message: string };

/**
 * The one verdict on `docker exec … ray status` as it came back (stdout and stderr read together: Ray splits
 * them freely) against what the cluster must show; `host` and `container` name where it came from.
 */
export function judgeRayStatus(
  res: { exitCode: number; stdout: string; stderr: string },
  expected: RayExpectation,
  { host, container }: { host: string; container: string },
): RayVerdict {
  const noCount = (type: NoCount, problem: string, headContainerDown: boolean, message: string) =>
    ({ ok: false, type, problem, headContainerDown, message }) as const;
  const text = `${res.stdout}\n${res.stderr}`;
  if (res.exitCode !== 0 && /No such container|is not running/i.test(res.stderr)) {
    const problem = res.stderr.trim().split('\n')[0] ?? 'container not running';
    const message = `The Ray head container ${container} on ${host} is not running (${clause(problem)})`;
    return noCount(FailureType.rayClusterIncomplete, problem, true, message);
  }
  let status: RayStatus;
  try {
    status = parseRayStatus(text);
  } catch (err) {
    if (err instanceof HostOutputError) {
      const message = `The Ray cluster on ${host} cannot be judged: ${clause(err.message)}`;
      return noCount(FailureType.hostOutputInvalid, err.message, false, message);
    }
    if (!(err instanceof RayNotRunningError) && !(err instanceof RayStatusParseError)) throw err;
    const problem =
      err instanceof RayNotRunningError
        ? err.detail
        : redactedTail(text.trim(), [], 512) || `ray status exited with code ${res.exitCode}`;
    const message = `Ray in ${container} on ${host} does not answer \`ray status\`: ${clause(problem)}`;
    return noCount(FailureType.rayClusterIncomplete, problem, false, message);
  }
  const gpu = status.resources.GPU;
  return judgeRayCount(
    { nodes: status.activeNodes.length, gpus: gpu?.total ?? 0, gpusUsed: gpu?.used ?? 0 },
    expected,
    host,
  );
}

/** The verdict on counts `ray status` gave earlier (a look passed on by the workflow), as judgeRayStatus's. */
export function judgeRayCount(
  seen: RayCount,
  expected: RayExpectation,
  host: string,
): Extract<RayVerdict, { seen: RayCount }> {
  const nodesPart = expected.nodes === undefined ? '' : `${seen.nodes} of ${expected.nodes} nodes and `;
  const message = `The Ray cluster on ${host} has ${nodesPart}${seen.gpus} of ${expected.gpus} GPUs`;
  return seen.gpus >= expected.gpus && seen.nodes >= (expected.nodes ?? 0)
    ? { ok: true, seen, message }
    : { ok: false, type: FailureType.rayClusterIncomplete, seen, message };
}
