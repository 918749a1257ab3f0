// Reads of the host's docker state that every step shares: one container's state, its log tail (any log's tail,
// as liftoff shows it), and a pause that a cancelled activity cuts short.
import { activityFailure } from './activity-failure.js';
import { FailureType } from '../shared/failures.js';
import { redactText, secretEnvValues } from '../shared/secrets.js';
import { sentence, tail } from '../shared/text.js';
import type { SshSession } from '../ssh/executor.js';
import type { RemoteCommand } from '../ssh/quote.js';
import { currentContext } from './heartbeat.js';
import { parseContainerInspect } from '../parsers/container-state.js';
import {
  containerLogTailCommand,
  inspectContainerCommand,
  rayConfirmLogLines,
} from '../host-commands/launch.js';

/** Sleeps, ending early with a CancelledFailure when the activity is cancelled. */
export async function pause(ms: number): Promise<void> {
  const context = currentContext();
  if (context) await context.sleep(ms);
  else await new Promise((resolve) => setTimeout(resolve, ms));
}

export interface ContainerState {
  exists: boolean;
  id?: string;
  running: boolean;
  status?: string;
  exitCode?: number;
  labels: Record<string, string>;
  /** Config.Env as K=V: used only to learn which values to redact. */
  env: string[];
}

/** `docker inspect` of one container; a missing container is `exists: false`, not an error. */
export async function inspectContainer(session: SshSession, name: string): Promise<ContainerState> {
  const res = await session.exec(inspectContainerCommand(name), {
    timeoutMs: 20_000,
    check: false,
  });
  return containerStateOf(res, name, session.target.name);
}

/**
 * What `docker inspect --type container -- NAME` printed, read: a missing container is `exists: false`; any
 * other failure (the daemon down, no docker at all) throws, since the container's state is then unknown. In a
 * sectioned read (src/host-commands/sections.ts) stderr comes merged into the output: pass it as both.
 */
export function containerStateOf(
  res: { exitCode: number; stdout: string; stderr: string },
  name: string,
  host: string,
): ContainerState {
  if (res.exitCode !== 0) {
    if (/No such (container|object)/i.test(res.stderr.slice(0, 4096)))
      return { exists: false, running: false, labels: {}, env: [] };
    throw activityFailure(
      FailureType.rayContainerFailed,
      `docker inspect ${name} on ${host} failed (exit ${res.exitCode}): ${sentence(tail(res.stderr.trim(), 1024))} Check that the docker daemon runs on that host.`,
      false,
    );
  }
  const entry = parseContainerInspect(res.stdout);
  return entry ? { exists: true, ...entry } : { exists: false, running: false, labels: {}, env: [] };
}

/** The secret-looking values of a container's env (what liftoff gave it): what its log must not show. */
export function containerSecrets(state: ContainerState): string[] {
  return secretEnvValues(
    Object.fromEntries(
      state.env.map((kv) => {
        const eq = kv.indexOf('=');
        return [eq < 0 ? kv : kv.slice(0, eq), eq < 0 ? '' : kv.slice(eq + 1)];
      }),
    ),
  );
}

/**
 * The last lines a container printed (stdout and stderr), redacted; '' when there is none. The secrets are not
 * optional: every read of a container's log is redacted with the values liftoff gave it.
 */
export async function containerLogTail(
  session: SshSession,
  name: string,
  secrets: readonly string[],
  lines = rayConfirmLogLines,
): Promise<string> {
  return redactedLogTail(session, containerLogTailCommand(name, lines), secrets, 20_000);
}

/**
 * What the tail command `cmd` printed, redacted of the values liftoff handed the process that wrote the log; ''
 * when it printed nothing. Read without failing: a missing log is an empty one.
 */
export async function redactedLogTail(
  session: SshSession,
  cmd: RemoteCommand,
  secrets: readonly string[],
  timeoutMs: number,
): Promise<string> {
  const res = await session.exec(cmd, { timeoutMs, check: false });
  return redactText(res.stdout.trimEnd(), secrets);
}
