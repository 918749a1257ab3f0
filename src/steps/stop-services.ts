// Step 2 of the deploy: the services that held the GPUs in the reference case are stopped (and disabled, so a
// reboot does not bring them back), then checked from systemd's own view. Two trips per host: the units' states
// and the login's uid; then the stop, the disable, the states after them and the container lists the removal
// starts from, in that order.
import { ApplicationFailure } from '@temporalio/common';
import {
  disableUnitsCommand,
  privilegePrefix,
  stopUnitsCommand,
  unitStatesCommand,
  userIdCommand,
} from '../host-commands/cleanup.js';
import { answerOf, type Answers, type StepCommand } from '../host-commands/step-command.js';
import { plannedRun, type PlannedStep } from './plan-entry.js';
import { FailureType } from '../shared/failures.js';
import { tail } from '../shared/text.js';
import type { ExecResult } from '../ssh/executor.js';
import type { RawShell } from '../ssh/quote.js';
import {
  containerListCommands,
  containerListsOf,
  describeOutcome,
  type ContainerNames,
} from './remove-containers.js';

export interface UnitState {
  unit: string;
  loadState: string;
  activeState: string;
  unitFileState: string;
}

// systemd's "still running, or about to": anything but inactive and failed.
const stoppedStates = new Set(['inactive', 'failed']);
const enabledStates = new Set(['enabled', 'enabled-runtime']);

/** The first trip: the units' states and the login's uid (root runs systemctl itself, anyone else `sudo -n`). */
export const unitReads = (units: readonly string[]): StepCommand[] => [
  { name: 'states', command: unitStatesCommand(units), check: true },
  { name: 'uid', command: userIdCommand(), check: true },
];

/**
 * `systemctl show` prints one block of KEY=VALUE lines per unit, in the order the units were named, blocks
 * separated by a blank line. A unit that does not exist still gets a block (LoadState=not-found).
 */
export function unitStatesOf(stdout: string, units: readonly string[], host: string): UnitState[] {
  const blocks = stdout
    .split(/\r?\n\s*\r?\n/)
    .map((block) => block.trim())
    .filter((block) => block !== '');
  if (blocks.length !== units.length) {
    throw new Error(
      `On ${host}, systemctl show printed ${blocks.length} blocks for ${units.length} units (${units.join(', ')}): ${tail(stdout, 800)}`,
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

/** The units systemd knows (LoadState other than not-found). */
export const loadedUnitsOf = (states: readonly UnitState[]): string[] =>
  states.filter((u) => u.loadState !== 'not-found').map((u) => u.unit);

/**
 * The second trip, in this order: stop, disable, the states after them, and (for the removal, the next step)
 * the container lists after the stop. Each keeps its own exit status and stderr, judged as when they ran one by
 * one; a sudo that refuses the stop refuses the disable too, so running it as well changes nothing. A failed
 * list read is not this step's failure: the removal then reads the lists itself.
 */
export function stopCommands(
  privileged: RawShell,
  loaded: readonly string[],
  disable: boolean,
  listsFor?: string,
): StepCommand[] {
  return [
    { name: 'stop', command: stopUnitsCommand(privileged, loaded), change: true },
    ...(disable
      ? [{ name: 'disable', command: disableUnitsCommand(privileged, loaded), change: true as const }]
      : []),
    { name: 'states-after', command: unitStatesCommand(loaded), check: true },
    ...(listsFor === undefined ? [] : containerListCommands(listsFor).map(({ check: _, ...read }) => read)),
  ];
}

export interface StopFacts {
  host: string;
  /** The SSH login, for the sudoers rule a refusal names. */
  user: string;
  loaded: readonly string[];
  disable: boolean;
}

/**
 * The stop's verdict: a sudo refusal (final), a unit still active (retryable), a unit still enabled (final);
 * else the container lists read after the stop, when they were asked for and came back whole.
 */
export function judgeStop(answers: Answers, facts: StopFacts): ContainerNames | undefined {
  const { host, loaded } = facts;
  const rule = sudoersRule(facts.user, loaded, facts.disable);
  const stop = answerOf(answers, 'stop');
  refuseSudoFailure(host, stop, rule);
  const disabled = facts.disable ? answerOf(answers, 'disable') : undefined;
  if (disabled) refuseSudoFailure(host, disabled, rule);

  const after = unitStatesOf(answerOf(answers, 'states-after').stdout, loaded, host);
  const stillActive = after.filter((u) => !stoppedStates.has(u.activeState));
  if (stillActive.length > 0) {
    throw ApplicationFailure.create({
      type: FailureType.serviceStillActive,
      message:
        `On ${host}, ${stillActive.map((u) => `${u.unit} is ${u.activeState}`).join(', ')} after ` +
        `systemctl stop${describeOutcome(stop)}. Check \`systemctl status\` and \`journalctl -u\` for the unit ` +
        `on the host: a unit that restarts itself or is pulled in by another one needs that fixed first.`,
      nonRetryable: false,
      details: [{ host, stillActive, stopExitCode: stop.exitCode, stopStderr: tail(stop.stderr, 800) }],
    });
  }
  const stillEnabled = facts.disable ? after.filter((u) => enabledStates.has(u.unitFileState)) : [];
  if (stillEnabled.length > 0) {
    throw ApplicationFailure.create({
      type: FailureType.serviceStillEnabled,
      message:
        `On ${host}, ${stillEnabled.map((u) => u.unit).join(', ')} still enabled after systemctl disable` +
        `${disabled ? describeOutcome(disabled) : ''}; a reboot would start them again. ` +
        `Disable them on the host (or mask them), or set cleanup.disableServices to false.`,
      nonRetryable: true,
      details: [{ host, stillEnabled: stillEnabled.map((u) => u.unit) }],
    });
  }
  return containerListsOf(answers);
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

/** The plan's entry, from the plan's look at the host: its login's uid and which listed units are loaded. */
export function planStopServices(
  units: readonly string[],
  disable: boolean,
  cluster: string,
  seen: { uid: string; loadedUnits: readonly string[] },
): PlannedStep {
  const stop = units.filter((u) => seen.loadedUnits.includes(u));
  return {
    step: 'stopServices',
    intent: [
      stop.length > 0
        ? `stop ${disable ? 'and disable ' : ''}${stop.join(', ')}`
        : 'stop nothing: no listed unit is loaded',
    ],
    commands: [
      plannedRun(unitReads(units)),
      ...(stop.length > 0
        ? [plannedRun(stopCommands(privilegePrefix(seen.uid), stop, disable, cluster))]
        : []),
    ],
  };
}
