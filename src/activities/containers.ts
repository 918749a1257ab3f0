// Step 3 of the deploy: containers that hold the GPUs or the names we need are removed (those the spec names,
// and those an earlier liftoff run left, found by label), then checked gone from docker's own list.
import { ApplicationFailure } from '@temporalio/common';
import type { SshSession } from '../ssh/executor.js';
import {
  clusterFilter,
  containerListsCommands,
  containerListsKey,
  containerNamesCommand,
  removeContainersCommand,
} from '../host-commands/cleanup.js';
import { FailureType } from '../shared/failures.js';
import { onHost } from './ssh-context.js';
import { prefetchReads, sessionAnswering } from './prefetch.js';
import { takeHandoff } from './step-handoff.js';
import type { RemoveContainersInput, RemoveContainersResult } from './types.js';

/** A list older than this is read again: nothing of liftoff's changes containers between the steps, others might. */
const handoffFreshMs = 10_000;

export async function removeContainers(input: RemoveContainersInput): Promise<RemoveContainersResult> {
  const host = input.host.target.name;
  return onHost(input.host, async (direct) => {
    // The two lists as stopServices read them after its stop a moment ago in this worker, or else in one round
    // trip; the list after the removal is read anew.
    const lists = containerListsCommands(input.cluster);
    const handed = takeHandoff('containerLists', containerListsKey(host, input.cluster), handoffFreshMs);
    const session = handed
      ? sessionAnswering(direct, handed)
      : await prefetchReads(direct, lists, { timeoutMs: 30_000 });
    const present = await containerNames(session);
    const labelled = await containerNames(session, clusterFilter(input.cluster));
    const named = [...new Set(input.names)].filter((n) => present.has(n));
    const targets = [...new Set([...named, ...labelled])];
    if (targets.length === 0) return { host, removed: [] };

    // Each container gets up to docker's stop grace before SIGKILL; several may be removed in one call.
    // The removal and the list after it in one round trip.
    const steps = await prefetchReads(direct, [removeContainersCommand(targets), containerNamesCommand()], {
      timeoutMs: 90_000 + 15_000 * targets.length,
    });
    const rm = await steps.exec(removeContainersCommand(targets), {
      timeoutMs: 60_000 + 15_000 * targets.length,
      check: false,
    });

    const after = await containerNames(steps);
    const left = targets.filter((n) => after.has(n));
    if (left.length > 0) {
      const said = rm.stderr.trim();
      throw ApplicationFailure.create({
        type: FailureType.containerStillPresent,
        message:
          `On ${host}, ${left.join(', ')} still present after docker rm -f` +
          `${rm.exitCode !== 0 ? ` (exit ${rm.exitCode}${said ? `: ${tail(said)}` : ''})` : ''}. ` +
          'Check `docker ps -a` and the docker daemon log on the host; a container that will not die ' +
          'usually has a process stuck in the kernel (D state), which may need a reboot.',
        nonRetryable: false,
        details: [{ host, left, removeExitCode: rm.exitCode, removeStderr: tail(said) }],
      });
    }
    return { host, removed: targets };
  });
}

/** Names of every container (running or not), optionally only those a `docker ps --filter` selects. */
export async function containerNames(session: SshSession, filter?: string): Promise<Set<string>> {
  const listed = await session.exec(containerNamesCommand(filter), { timeoutMs: 30_000 });
  // A container with legacy links lists several names, comma-separated.
  return new Set(
    listed.stdout
      .split('\n')
      .flatMap((line) => line.split(','))
      .map((name) => name.trim())
      .filter((name) => name !== ''),
  );
}

function tail(text: string, max = 800): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}
