// One probe round of the supervisor in one (local) activity: the head's probes (serving-probe.ts) and every
// worker's Ray container, in parallel, over one SSH pool, so a worker behind the head as its jump host rides the
// head's connection (one handshake per host), and a round costs one workflow task instead of an activity task
// per host and a workflow task per result. The connections are the worker's (ssh-context.ts), kept open at least
// until the next round. Each host's outcome stays its own: a host that cannot be reached is
// reported with the error, never failing the others, so the workflow still counts each against its
// unreachable window.
import { redactedTail } from '../shared/secrets.js';
import { toFailureDetails } from '../ssh/errors.js';
import { inspectContainer } from './docker.js';
import { containerCheck, probeHead } from './serving-probe.js';
import { secretValues } from './secrets.js';
import { onHosts } from './ssh-context.js';
import type { HostRef } from '../config/targets.js';
import type { ProbeCheck, ProbeServingInput } from './types.js';

export interface ProbeServingClusterInput {
  head: ProbeServingInput;
  workers: HostRef[];
  /** The container that must run on every worker: Ray's, or (serve.backend multiproc) the host's rank. */
  container: string;
  /**
   * Keep the connections open unused at least this long (a little over the interval), even past the worker's
   * SSH idle time, so a healthy round costs no SSH handshake; unset: the worker's idle time alone.
   */
  keepConnectionsMs?: number;
}

export type HostProbe =
  | { host: string; ok: true; checks: ProbeCheck[] }
  /** The host could not be reached (or its probe could not run): why, as the SSH layer or the host said it. */
  | { host: string; ok: false; error: string };

export async function probeServingCluster(input: ProbeServingClusterInput): Promise<{ hosts: HostProbe[] }> {
  const keep = input.keepConnectionsMs !== undefined ? { idleMs: input.keepConnectionsMs } : undefined;
  // The spec's env secrets, which nothing the probes report may show (a server's error body can quote them).
  const secrets = await secretValues(...(input.head.secretEnv ?? []));
  return onHosts(
    [input.head.head, ...input.workers],
    async (open) => {
      const settle = async (ref: HostRef, probe: () => Promise<ProbeCheck[]>): Promise<HostProbe> => {
        try {
          return { host: ref.target.name, ok: true, checks: await probe() };
        } catch (err) {
          const error = redactedTail(toFailureDetails(err).message, secrets, 2048);
          return { host: ref.target.name, ok: false, error };
        }
      };
      const hosts = await Promise.all([
        settle(input.head.head, async () => probeHead(await open(input.head.head), input.head, secrets)),
        ...input.workers.map((ref, i) =>
          settle(ref, async () => {
            const state = await inspectContainer(await open(ref), input.container);
            const check = containerCheck(state, input.head.backend, i + 1, input.container);
            return [{ name: 'container' as const, host: ref.target.name, ...check }];
          }),
        ),
      ]);
      return { hosts };
    },
    keep,
  );
}
