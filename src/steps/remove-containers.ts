// Step 3 of the deploy (and the teardown's removal): containers that hold the GPUs or the names the launch needs
// are removed (those the spec names, and those an earlier liftoff run left, found by label), then checked gone
// from docker's own list. The two lists it starts from come from stopServices' trip after the stop when it
// stopped something (passed on by the workflow), else from a read of its own.
import { ApplicationFailure } from '@temporalio/common';
import { clusterFilter, containerNamesCommand, removeContainersCommand } from '../host-commands/cleanup.js';
import { answerOf, type Answers, type StepCommand } from '../host-commands/step-command.js';
import { plannedRun, type PlannedStep } from './plan-entry.js';
import { FailureType } from '../shared/failures.js';
import { tail } from '../shared/text.js';
import type { ExecResult } from '../ssh/executor.js';

/** A host's container names (bounded: src/steps/remove-containers.ts), as read after the stop. */
export interface ContainerLists {
  all: string[];
  /** Those labelled liftoff.cluster=<cluster>. */
  labelled: string[];
  /** When the stop's worker read them (its clock): the removal reads again when they are stale. */
  readAtMs: number;
}

/** More names than this are not passed through the workflow's history: removeContainers reads them itself. */
const maxListedNames = 512;
const maxNameLength = 255;
/** The stop's lists serve a first attempt within this long of their read (a resumed deploy reads the host again). */
const listsFreshMs = 60_000;

export type ContainerNames = Pick<ContainerLists, 'all' | 'labelled'>;

/** The lists the removal starts from: every container, then those labelled for this cluster. */
export const containerListCommands = (cluster: string): StepCommand[] => [
  { name: 'containers', command: containerNamesCommand(), check: true },
  { name: 'labelled', command: containerNamesCommand(clusterFilter(cluster)), check: true },
];

/** `docker ps --format {{.Names}}`, read: a container with legacy links lists several names, comma-separated. */
export function containerNamesOf(stdout: string): string[] {
  const names = stdout
    .split('\n')
    .flatMap((line) => line.split(','))
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return [...new Set(names)];
}

/** The two lists as read, for the workflow to pass on; undefined when a read failed or they are too big to pass. */
export function containerListsOf(answers: Answers): ContainerNames | undefined {
  const [all, labelled] = ['containers', 'labelled'].map((name) => {
    const answer = answers.get(name);
    if (!answer || answer.exitCode !== 0 || answer.stdoutCutBytes !== undefined) return undefined;
    const names = containerNamesOf(answer.stdout);
    return names.length <= maxListedNames && names.every((n) => n.length <= maxNameLength)
      ? names
      : undefined;
  });
  return all && labelled ? { all, labelled } : undefined;
}

/**
 * The stop's lists when this removal may start from them: its first attempt, soon after they were read. A retry
 * reads the host again, since the failed attempt may have changed what the stop saw.
 */
export function listsToUse(
  lists: ContainerLists | undefined,
  attempt: number,
  nowMs: number,
): ContainerNames | undefined {
  return lists && attempt <= 1 && Math.abs(nowMs - lists.readAtMs) <= listsFreshMs ? lists : undefined;
}

/** What goes: the spec's names that exist, and every container labelled for this cluster. */
export function removalTargets(names: readonly string[], lists: ContainerNames): string[] {
  const present = new Set(lists.all);
  return [...new Set([...names.filter((n) => present.has(n)), ...lists.labelled])];
}

/** The removal and docker's list after it, in one round trip. */
export const removalCommands = (targets: readonly string[]): StepCommand[] => [
  { name: 'remove', command: removeContainersCommand(targets), change: true },
  { name: 'after', command: containerNamesCommand(), check: true },
];

/** Each container gets up to docker's stop grace before SIGKILL; several may be removed in one call. */
export const removalTimeoutMs = (targets: readonly string[]): number => 90_000 + 15_000 * targets.length;

/** Every target is gone from docker's list after the removal, or the step fails (retryable). */
export function judgeRemoval(answers: Answers, host: string, targets: readonly string[]): void {
  const rm = answerOf(answers, 'remove');
  const after = new Set(containerNamesOf(answerOf(answers, 'after').stdout));
  const left = targets.filter((n) => after.has(n));
  if (left.length === 0) return;
  throw ApplicationFailure.create({
    type: FailureType.containerStillPresent,
    message:
      `On ${host}, ${left.join(', ')} still present after docker rm -f${describeOutcome(rm)}. ` +
      'Check `docker ps -a` and the docker daemon log on the host; a container that will not die ' +
      'usually has a process stuck in the kernel (D state), which may need a reboot.',
    nonRetryable: false,
    details: [{ host, left, removeExitCode: rm.exitCode, removeStderr: tail(rm.stderr.trim(), 800) }],
  });
}

/** ` (exit N: what it said)` after a command that failed; nothing after one that passed. */
export function describeOutcome(outcome: ExecResult): string {
  if (outcome.exitCode === 0) return '';
  const said = tail(outcome.stderr.trim(), 800);
  return ` (exit ${outcome.exitCode}${said ? `: ${said}` : ''})`;
}

/**
 * The plan's entry: `lists` are what the plan's look at the host found; `listsWithStop` says stopServices stops
 * something here, so the lists come with its trip and this step reads them only when it is retried.
 */
export function planRemoveContainers(
  names: readonly string[],
  cluster: string,
  lists: ContainerNames,
  listsWithStop: boolean,
): PlannedStep {
  const targets = removalTargets(names, lists);
  const read = plannedRun(containerListCommands(cluster));
  return {
    step: 'removeContainers',
    intent: [targets.length > 0 ? `remove ${targets.join(', ')}` : 'remove nothing: none is there'],
    commands: [
      listsWithStop
        ? {
            ...read,
            when: 'removeContainers is retried, or starts over 60 s after the stop; else the lists came with it',
          }
        : read,
      ...(targets.length > 0 ? [plannedRun(removalCommands(targets))] : []),
    ],
  };
}
