// Step 2 of the deploy, on one host (src/steps/stop-services.ts declares it): the units' states and the login's
// uid, then the stop, the disable and the states after them, with the container lists the removal starts from.
import { answerOf, runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';
import { privilegePrefix } from '../host-commands/cleanup.js';
import { judgeStop, loadedUnitsOf, stopCommands, unitReads, unitStatesOf } from '../steps/stop-services.js';
import type { StopServicesInput, StopServicesResult } from './types.js';

export async function stopServices(input: StopServicesInput): Promise<StopServicesResult> {
  const host = input.host.target.name;
  const units = [...new Set(input.units)];
  if (units.length === 0) return { host, stopped: [], disabled: [], notLoaded: [] };

  return onHost(input.host, async (session) => {
    const before = await runCommands(session, unitReads(units), { timeoutMs: 30_000 });
    const loaded = loadedUnitsOf(unitStatesOf(answerOf(before, 'states').stdout, units, host));
    const notLoaded = units.filter((u) => !loaded.includes(u));
    if (loaded.length === 0) return { host, stopped: [], disabled: [], notLoaded };

    const privileged = privilegePrefix(answerOf(before, 'uid').stdout);
    const commands = stopCommands(privileged, loaded, input.disable, input.containerListsFor?.cluster);
    const answers = await runCommands(session, commands, { timeoutMs: 240_000 });
    const containerLists = judgeStop(answers, {
      host,
      user: session.target.user,
      loaded,
      disable: input.disable,
    });
    return {
      host,
      stopped: loaded,
      disabled: input.disable ? loaded : [],
      notLoaded,
      ...(containerLists ? { containerLists: { ...containerLists, readAtMs: Date.now() } } : {}),
    };
  });
}
