// Step 3 of the deploy and the teardown's removal, on one host (src/steps/remove-containers.ts declares it): the
// lists it starts from, unless stopServices passed them through the workflow, then the removal and the list after.
import { currentContext } from './heartbeat.js';
import { answerOf, runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';
import {
  containerListCommands,
  containerNamesOf,
  judgeRemoval,
  listsToUse,
  removalCommands,
  removalTargets,
  removalTimeoutMs,
} from '../steps/remove-containers.js';
import type { RemoveContainersInput, RemoveContainersResult } from './types.js';

export async function removeContainers(input: RemoveContainersInput): Promise<RemoveContainersResult> {
  const host = input.host.target.name;
  return onHost(input.host, async (session) => {
    // Outside an activity (a direct call in a test or bench) there is one attempt.
    let lists = listsToUse(input.containerLists, currentContext()?.info.attempt ?? 1, Date.now());
    if (!lists) {
      const read = await runCommands(session, containerListCommands(input.cluster), { timeoutMs: 30_000 });
      lists = {
        all: containerNamesOf(answerOf(read, 'containers').stdout),
        labelled: containerNamesOf(answerOf(read, 'labelled').stdout),
      };
    }
    const targets = removalTargets(input.names, lists);
    if (targets.length === 0) return { host, removed: [] };
    const answers = await runCommands(session, removalCommands(targets), {
      timeoutMs: removalTimeoutMs(targets),
    });
    judgeRemoval(answers, host, targets);
    return { host, removed: targets };
  });
}
