// One probe round of the supervisor in one activity: the head's probes (serving-probe.ts) and every worker's
// Ray container, in parallel, over one SSH pool, so a worker behind the head as its jump host rides the head's
// connection (one handshake per host), and a round costs one activity task and one workflow task instead of one
// of each per host. Each host's outcome stays its own: a host that cannot be reached is reported with the
// error, never failing the others, so the workflow still counts each against its unreachable window.
import { toFailureDetails } from '../ssh/errors.js';
import { inspectContainer } from './docker.js';
import { probeHead } from './serving-probe.js';
import { onHosts, type HostRef } from './ssh-context.js';
import type { ProbeCheck, ProbeServingInput } from './types.js';

export interface ProbeServingClusterInput {
  head: ProbeServingInput;
  workers: HostRef[];
  /** The Ray container that must run on every worker. */
  container: string;
}

export type HostProbe =
  | { host: string; ok: true; checks: ProbeCheck[] }
  /** The host could not be reached (or its probe could not run): why, as the SSH layer or the host said it. */
  | { host: string; ok: false; error: string };

export interface ProbeServingClusterResult {
  hosts: HostProbe[];
}

export async function probeServingCluster(
  input: ProbeServingClusterInput,
): Promise<ProbeServingClusterResult> {
  return onHosts([input.head.head, ...input.workers], async (open) => {
    const settle = async (ref: HostRef, probe: () => Promise<ProbeCheck[]>): Promise<HostProbe> => {
      try {
        return { host: ref.target.name, ok: true, checks: await probe() };
      } catch (err) {
        return { host: ref.target.name, ok: false, error: toFailureDetails(err).message };
      }
    };
    const hosts = await Promise.all([
      settle(input.head.head, async () => (await probeHead(await open(input.head.head), input.head)).checks),
      ...input.workers.map((ref) =>
        settle(ref, async () => {
          const container = await inspectContainer(await open(ref), input.container);
          return [
            {
              name: 'container' as const,
              host: ref.target.name,
              ok: container.running,
              ...(container.running
                ? {}
                : { error: `the Ray container ${input.container} is ${container.status ?? 'gone'}` }),
            },
          ];
        }),
      ),
    ]);
    return { hosts };
  });
}
