// A container's state, read from `docker inspect` and judged: it runs, or one sentence says what became of it. The
// deploy's load watch, a rank's end, the companions' probes and the supervisor's probes of the head and the workers
// all read and say it this way.

/** What a read of one container found: docker's State.Status (absent: no such container) and its exit code. */
export interface ContainerLook {
  running: boolean;
  status?: string | undefined;
  exitCode?: number | undefined;
}

export type ContainerVerdict = { ok: true } | { ok: false; message: string };

/** `<what> is exited (exit code 137)`, `<what> is gone`: the one sentence for a container that does not run. */
export function judgeContainer(look: ContainerLook, what: string): ContainerVerdict {
  if (look.running) return { ok: true };
  if (look.status === undefined) return { ok: false, message: `${what} is gone` };
  const code = look.exitCode === undefined ? '' : ` (exit code ${look.exitCode})`;
  return { ok: false, message: `${what} is ${look.status}${code}` };
}

/** What `docker inspect` of one container says of it, as liftoff uses it. */
export interface InspectedContainer extends ContainerLook {
  id?: string;
  labels: Record<string, string>;
  /** Config.Env as K=V. */
  env: string[];
}

/**
 * `docker inspect`'s JSON (an array of one entry), read field by field; undefined when it names no container (an
 * empty array, or not the JSON docker prints). Every field is checked for its type: the text came from a host.
 */
export function parseContainerInspect(stdout: string): InspectedContainer | undefined {
  let entries: unknown;
  try {
    entries = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  const entry: unknown = Array.isArray(entries) ? entries[0] : undefined;
  if (!isRecord(entry)) return undefined;
  const state = isRecord(entry.State) ? entry.State : {};
  const config = isRecord(entry.Config) ? entry.Config : {};
  const labels = Object.fromEntries(
    Object.entries(isRecord(config.Labels) ? config.Labels : {}).filter(
      (kv): kv is [string, string] => typeof kv[1] === 'string',
    ),
  );
  return {
    ...(typeof entry.Id === 'string' ? { id: entry.Id } : {}),
    running: state.Running === true,
    ...(typeof state.Status === 'string' ? { status: state.Status } : {}),
    ...(typeof state.ExitCode === 'number' ? { exitCode: state.ExitCode } : {}),
    labels,
    env: Array.isArray(config.Env) ? config.Env.filter((e): e is string => typeof e === 'string') : [],
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
