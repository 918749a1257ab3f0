// The worker's SSH idle time: how long a connection that no activity uses stays open (src/ssh/shared-pool.ts).
import { parseDuration } from './duration.js';

/**
 * The default: longer than the gaps between a deploy's steps and a supervisor's rounds (30 s by default, and a
 * supervisor asks for a little over its interval anyway), short enough that a cluster nobody touches holds no
 * login for long.
 */
export const defaultSshIdleMs = 5 * 60_000;

/** The variable that sets it, as a duration (`90s`, `5m`, `0s` to close a connection once unused). */
export const sshIdleEnv = 'LIFTOFF_SSH_IDLE_TIMEOUT';

/** The idle time the environment sets, or the default; a value that is not a duration is refused, by name. */
export function sshIdleMsFromEnv(env: NodeJS.ProcessEnv): number {
  const text = env[sshIdleEnv]?.trim();
  if (text === undefined || text === '') return defaultSshIdleMs;
  if (/^0+(ms|s|m|h)?$/.test(text)) return 0;
  const ms = parseDuration(text);
  if (ms === undefined)
    throw new Error(`${sshIdleEnv}=${JSON.stringify(text)} is not a duration: expected e.g. 90s, 5m or 0s`);
  return ms;
}
