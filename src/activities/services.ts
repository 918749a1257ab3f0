// Step 2 of the deploy: the services that held the GPUs in the reference case are stopped (and disabled,
// so a reboot does not bring them back), then checked from systemd's own view.
import { ApplicationFailure } from '@temporalio/common';
import type { ExecResult, SshSession } from '../ssh/executor.js';
import type { RawShell } from '../ssh/quote.js';
import {
  containerListsCommands,
  containerListsKey,
  disableUnitsCommand,
  privilegePrefix as prefixFor,
  stopUnitsCommand,
  unitStatesCommand,
  userIdCommand,
} from '../host-commands/cleanup.js';
import { FailureType } from '../shared/failures.js';
import { onHost } from './ssh-context.js';
import { answeredReads, prefetchReads } from './prefetch.js';
import { handOn } from './step-handoff.js';
import type { StopServicesInput, StopServicesResult } from './types.js';

interface UnitState {
  unit: string;
  loadState: string;
  activeState: string;
  unitFileState: string;
}

// systemd's "still running, or about to": anything but inactive and failed.
const stoppedStates = new Set(['inactive', 'failed']);
const enabledStates = new Set(['enabled', 'enabled-runtime']);

export async function stopServices(input: StopServicesInput): Promise<StopServicesResult> {
  const host = input.host.target.name;
  const units = [...new Set(input.units)];
  if (units.length === 0) return { host, stopped: [], disabled: [], notLoaded: [] };

  return onHost(input.host, async (direct) => {
    // The units' states and the user's id in one round trip; the states after the stop are read anew.
    const session = await prefetchReads(direct, [unitStatesCommand(units), userIdCommand()], {
      timeoutMs: 30_000,
    });
    const before = await readUnitStates(session, units);
    const notLoaded = before.filter((u) => u.loadState === 'not-found').map((u) => u.unit);
    const loaded = units.filter((u) => !notLoaded.includes(u));
    if (loaded.length === 0) return { host, stopped: [], disabled: [], notLoaded };

    const privileged = await privilegePrefix(session);
    const rule = sudoersRule(session.target.user, loaded, input.disable);
    // Stop, disable and the read of the states after them in one round trip, in that order: each keeps its own
    // exit status and stderr, judged below as when they ran one by one. (A sudo that refuses the stop refuses the
    // disable too, so running it as well changes nothing.) The container lists after the stop ride along for
    // removeContainers, the next step, when this worker runs it.
    const listsCluster = input.containerListsFor?.cluster;
    const lists = listsCluster !== undefined ? containerListsCommands(listsCluster) : [];
    const steps = await prefetchReads(
      direct,
      [
        stopUnitsCommand(privileged, loaded),
        ...(input.disable ? [disableUnitsCommand(privileged, loaded)] : []),
        unitStatesCommand(loaded),
        ...lists,
      ],
      { timeoutMs: 240_000 },
    );
    const stop = await steps.exec(stopUnitsCommand(privileged, loaded), {
      timeoutMs: 150_000,
      check: false,
    });
    refuseSudoFailure(host, stop, rule);
    let disableOutcome: ExecResult | undefined;
    if (input.disable) {
      disableOutcome = await steps.exec(disableUnitsCommand(privileged, loaded), {
        timeoutMs: 60_000,
        check: false,
      });
      refuseSudoFailure(host, disableOutcome, rule);
    }

    const after = await readUnitStates(steps, loaded);
    const stillActive = after.filter((u) => !stoppedStates.has(u.activeState));
    if (stillActive.length > 0) {
      throw ApplicationFailure.create({
        type: FailureType.serviceStillActive,
        message:
          `On ${host}, ${stillActive.map((u) => `${u.unit} is ${u.activeState}`).join(', ')} after ` +
          `systemctl stop${describeOutcome(stop)}. Check \`systemctl status\` and \`journalctl -u\` for the unit ` +
          `on the host: a unit that restarts itself or is pulled in by another one needs that fixed first.`,
        nonRetryable: false,
        details: [{ host, stillActive, stopExitCode: stop.exitCode, stopStderr: tail(stop.stderr) }],
      });
    }
    if (listsCluster !== undefined)
      handOn(
        'containerLists',
        containerListsKey(host, listsCluster),
        await answeredReads(steps, lists, 30_000),
      );
    const stillEnabled = input.disable ? after.filter((u) => enabledStates.has(u.unitFileState)) : [];
    if (stillEnabled.length > 0) {
      throw ApplicationFailure.create({
        type: FailureType.serviceStillEnabled,
        message:
          `On ${host}, ${stillEnabled.map((u) => u.unit).join(', ')} still enabled after systemctl disable` +
          `${disableOutcome ? describeOutcome(disableOutcome) : ''}; a reboot would start them again. ` +
          `Disable them on the host (or mask them), or set cleanup.disableServices to false.`,
        nonRetryable: true,
        details: [{ host, stillEnabled: stillEnabled.map((u) => u.unit) }],
      });
    }
    return {
      host,
      stopped: loaded,
      disabled: input.disable ? loaded : [],
      notLoaded,
    };
  });
}

/** Root runs systemctl itself; anyone else through `sudo -n`, which fails at once instead of prompting. */
async function privilegePrefix(session: SshSession): Promise<RawShell> {
  const id = await session.exec(userIdCommand(), { timeoutMs: 10_000 });
  return prefixFor(id.stdout);
}

// sudoers reads `,` `:` `=` and a backslash in a command's arguments as its own syntax unless escaped.
const sudoersEscape = (word: string): string => word.replace(/[,:=\\]/g, (c) => `\\${c}`);

/**
 * The sudoers rule that lets `user` run exactly the commands this step runs, and nothing else of systemctl:
 * `stop` (and `disable`) of these units, with the arguments as liftoff passes them.
 */
export function sudoersRule(user: string, units: readonly string[], disable: boolean): string {
  const list = units.map(sudoersEscape).join(' ');
  const commands = [`/usr/bin/systemctl stop -- ${list}`];
  if (disable) commands.push(`/usr/bin/systemctl disable -- ${list}`);
  return `${user} ALL=(root) NOPASSWD: ${commands.join(', ')}`;
}

function refuseSudoFailure(host: string, outcome: ExecResult, rule: string): void {
  if (outcome.exitCode === 0) return;
  const sudoSays = outcome.stderr
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.startsWith('sudo:'));
  if (sudoSays === undefined) return;
  throw ApplicationFailure.create({
    type: FailureType.sudoNotPermitted,
    message:
      `On ${host}, sudo refused to run systemctl without a password (${sudoSays}). ` +
      `Let the SSH user run these systemctl commands without a password, and only these (a sudoers rule, ` +
      `e.g. in /etc/sudoers.d/liftoff, edited with visudo; the path is what \`command -v systemctl\` prints): ` +
      `\`${rule}\`. Or connect as root.`,
    nonRetryable: true,
    details: [{ host, sudo: sudoSays, sudoersRule: rule }],
  });
}

/**
 * `systemctl show` prints one block of KEY=VALUE lines per unit, in the order the units were named,
 * blocks separated by a blank line. A unit that does not exist still gets a block (LoadState=not-found).
 */
export async function readUnitStates(session: SshSession, units: string[]): Promise<UnitState[]> {
  const shown = await session.exec(unitStatesCommand(units), { timeoutMs: 30_000 });
  const blocks = shown.stdout
    .split(/\r?\n\s*\r?\n/)
    .map((block) => block.trim())
    .filter((block) => block !== '');
  if (blocks.length !== units.length) {
    throw new Error(
      `On ${session.target.name}, systemctl show printed ${blocks.length} blocks for ${units.length} units (${units.join(', ')}): ${tail(shown.stdout)}`,
    );
  }
  return blocks.map((block, i) => {
    const props = new Map<string, string>();
    for (const line of block.split(/\r?\n/)) {
      const eq = line.indexOf('=');
      if (eq > 0) props.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
    }
    return {
      unit: units[i] ?? '',
      loadState: props.get('LoadState') ?? '',
      activeState: props.get('ActiveState') ?? '',
      unitFileState: props.get('UnitFileState') ?? '',
    };
  });
}

function describeOutcome(outcome: ExecResult): string {
  if (outcome.exitCode === 0) return '';
  const said = tail(outcome.stderr.trim());
  return ` (exit ${outcome.exitCode}${said ? `: ${said}` : ''})`;
}

function tail(text: string, max = 800): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}
