// A step's plan entry and the pieces `liftoff plan`'s host list is made of: a planned command (a read or a change), a
// step of them, the placeholders for what exists only once the deploy runs, and the env transport the deploy
// would build, without reading a secret. Pure.
import type { HostRef } from '../config/targets.js';
import { envTransport, type EnvTransport } from '../host-commands/env-transport.js';
import type { EnvSpec } from '../config/schema.js';
import { isSecretEnvName } from '../shared/secrets.js';
import type { RemoteCommand } from '../ssh/quote.js';
import { batchCommand } from '../host-commands/sections.js';
import type { StepCommand } from '../host-commands/step-command.js';

/** Stand-ins for what exists only once the deploy runs; the plan shows them by these names. */
export const planPlaceholders = {
  runId: 'RUN_ID',
  startedAt: 'START_MS',
  pid: 'PID',
} as const;

/** A host of the spec, as the plan addresses it. */
export interface PlanHost {
  name: string;
  role: 'head' | 'worker';
  clusterIp: string;
  ref: HostRef;
}

/** One command inside a batch (one round trip that runs several, src/host-commands/sections.ts). */
export interface PlannedPart {
  /** The exact command the deploy runs (for a batch, the script that carries its parts). */
  text: string;
  /** The step command's name (host-commands/step-command.ts), when it has one: the plan's short word for it. */
  name?: string;
  /** Changes the host (stops, removes, starts); every other command only reads. */
  change: boolean;
  /** It runs only in a case the plan cannot know beforehand (an earlier answer, the host decides); said which. */
  when?: string;
  /** How it runs, when that is worth saying (a wait before it). */
  note?: string;
}

/** One round trip: a command alone, or a batch whose `parts` it runs in order. */
export interface PlannedCommand extends Omit<PlannedPart, 'note'> {
  parts?: PlannedPart[];
  /** Run again until a condition holds (a poll); said how. */
  repeats?: string;
}

export interface PlannedStep {
  step: string;
  /** What the step will do on this host, in words (what it stops, removes, starts; what it makes sure of): the plan's first lines. */
  intent?: string[];
  commands: PlannedCommand[];
  /** The step does not run with this spec, and why (the Ray steps of serve.backend multiproc). */
  skipped?: string;
  /** When the step runs here relative to the other hosts (multiproc: the headless ranks start before rank 0). */
  note?: string;
}

export const read = (cmd: RemoteCommand, repeats?: string): PlannedCommand => ({
  text: cmd.text,
  change: false,
  ...(repeats ? { repeats } : {}),
});
export const readWhen = (cmd: RemoteCommand, when: string): PlannedCommand => ({
  text: cmd.text,
  change: false,
  when,
});

/**
 * A step's commands as the runner (activities/run-commands.ts) runs them: one round trip when there are several,
 * each command shown on its own, `text` the trip's script (shown under --verbose and in --json).
 */
export function plannedRun(
  commands: readonly StepCommand[],
  extra: { repeats?: string; when?: string } = {},
): PlannedCommand {
  const only = commands.length === 1 ? commands[0] : undefined;
  const parts = commands.map((c): PlannedPart => ({
    text: c.command.text,
    name: c.name,
    change: c.change === true,
    ...(c.unlessOk !== undefined
      ? { when: c.when ?? `${c.unlessOk} failed` }
      : c.when
        ? { when: c.when }
        : {}),
    ...(c.waitUntil !== undefined
      ? {
          note: `after the host waited until \`${c.waitUntil.until.text}\` holds, up to ${c.waitUntil.seconds} s`,
        }
      : {}),
  }));
  if (only && only.waitUntil === undefined)
    return {
      text: only.command.text,
      name: only.name,
      change: only.change === true,
      ...extra,
      ...(only.when ? { when: only.when } : {}),
    };
  return { text: batchCommand(commands).command.text, change: parts.some((p) => p.change), parts, ...extra };
}

/**
 * The spec's env blocks merged in order, as the worker would resolve them, with a reference's value left on the
 * worker: its name is a secret, sent on stdin, so a command shows only `-e NAME`.
 */
export function planEnv(envs: readonly EnvSpec[]): {
  values: Record<string, string>;
  secretNames: Set<string>;
} {
  const values: Record<string, string> = {};
  const secretNames = new Set<string>();
  for (const env of envs) {
    for (const [name, value] of Object.entries(env)) {
      values[name] = typeof value === 'string' ? value : '';
      if (typeof value !== 'string' || isSecretEnvName(name)) secretNames.add(name);
    }
  }
  return { values, secretNames };
}

/** The env a command gets, as the deploy's envTransport builds it from `env` and then `extra`. */
export function planTransport(env: EnvSpec, extra: Record<string, string> = {}): EnvTransport {
  const { values, secretNames } = planEnv([env]);
  return envTransport({ ...values, ...extra }, secretNames);
}
