// What the `liftoff schedule` commands share: the ids a schedule and its runs get, finding a schedule by id or
// cluster, reading a scheduled run's outcome back from its workflow, and showing a stored spec without secrets.
import {
  ScheduleNotFoundError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
  type ScheduleDescription,
  type ScheduleExecutionResult,
} from '@temporalio/client';
import { z } from 'zod';
import { deployWorkflowId, searchAttributes } from '../../shared/constants.js';
import { redactDeep, secretsOfSpec } from '../../shared/secrets.js';
import { cutWebhookUrls } from '../../shared/webhook-shown.js';
import type { DeploySpec } from '../../config/schema.js';
import { UsageError } from '../../cli/run-command.js';
import { describeFailure } from '../../cli/deploy-status.js';
import { listedRunOutcome } from '../../report/outcome.js';
import type { Outcome } from '../../report/model.js';

/** The default schedule id of a cluster: its deploy's workflow id. */
export const scheduleIdFor = deployWorkflowId;

/** The workflow id prefix of scheduled runs; Temporal appends the scheduled time to it. */
export function scheduledWorkflowIdFor(cluster: string): string {
  return `${deployWorkflowId(cluster)}-scheduled`;
}

/**
 * Kept on the schedule because Temporal stores a cron string as calendars and never gives the text back; the
 * memo also marks a schedule as liftoff's.
 */
const scheduleMemo = z.object({
  cluster: z.string(),
  cron: z.string().catch(''),
  timezone: z.string().min(1).catch('UTC'),
});
export type ScheduleMemo = z.infer<typeof scheduleMemo>;

export function memoOf(description: { memo?: Record<string, unknown> }): ScheduleMemo | undefined {
  const memo = scheduleMemo.safeParse(description.memo);
  return memo.success ? memo.data : undefined;
}

/** What `schedule list` and `schedule describe` both say of a schedule. */
export interface ScheduleSummary extends ScheduleMemo {
  scheduleId: string;
  paused: boolean;
  note?: string;
}

export function scheduleSummary(description: ScheduleDescription, memo: ScheduleMemo): ScheduleSummary {
  return {
    scheduleId: description.scheduleId,
    ...memo,
    paused: description.state.paused,
    note: description.state.note || undefined,
  };
}

/** The schedule as Temporal holds it now; undefined when there is none. */
export function describeIfExists(
  client: Client,
  scheduleId: string,
): Promise<ScheduleDescription | undefined> {
  return client.schedule
    .getHandle(scheduleId)
    .describe()
    .catch((err: unknown) => {
      if (err instanceof ScheduleNotFoundError) return undefined;
      throw err;
    });
}

async function liftoffSchedule(client: Client, scheduleId: string) {
  const description = await describeIfExists(client, scheduleId);
  if (!description) return undefined;
  const memo = memoOf(description);
  if (!memo)
    throw new UsageError(`schedule ${scheduleId} was not created by liftoff (no cluster in its memo)`);
  return { handle: client.schedule.getHandle(scheduleId), description, memo };
}

/** A schedule named by its id, or by its cluster (the default id, else the one schedule of that cluster). */
export async function findSchedule(client: Client, ref: string) {
  const byId = (await liftoffSchedule(client, ref)) ?? (await liftoffSchedule(client, scheduleIdFor(ref)));
  if (byId) return byId;
  const ids: string[] = [];
  for await (const summary of client.schedule.list()) {
    if (memoOf(summary)?.cluster === ref) ids.push(summary.scheduleId);
  }
  if (ids.length > 1) {
    throw new UsageError(
      `cluster ${ref} has ${ids.length} schedules (${ids.join(', ')}); name one by its id`,
    );
  }
  const found = ids[0] !== undefined ? await liftoffSchedule(client, ids[0]) : undefined;
  if (found) return found;
  throw new UsageError(
    `no liftoff schedule ${ref} (looked for schedule ids ${ref} and ${scheduleIdFor(ref)}, and schedules of cluster ${ref}); see \`liftoff schedule list\``,
  );
}

/** One run a schedule started, and how it ended, read from its workflow. */
export interface ScheduledRun {
  workflowId: string;
  runId: string;
  /** The time the run was due (ISO). */
  scheduledAt: string;
  /** When the schedule started it (ISO). */
  startedAt: string;
  outcome: Outcome | 'unknown';
  /** Why it failed or was refused (first line of the workflow's failure). */
  message?: string;
  /** The deploy it ran as a child, under the cluster's id. */
  deployWorkflowId?: string;
}

export async function scheduledRun(client: Client, action: ScheduleExecutionResult): Promise<ScheduledRun> {
  const { workflowId, firstExecutionRunId: runId } = action.action.workflow;
  const run: ScheduledRun = {
    workflowId,
    runId,
    scheduledAt: action.scheduledAt.toISOString(),
    startedAt: action.takenAt.toISOString(),
    outcome: 'unknown',
  };
  const handle = client.workflow.getHandle(workflowId, runId, { followRuns: false });
  let status: string;
  try {
    const described = await handle.describe();
    status = described.status.name;
    const memo = described.memo ?? {};
    if (typeof memo.deployWorkflowId === 'string') run.deployWorkflowId = memo.deployWorkflowId;
    // The workflow's own verdict first: a refused run is FAILED to Temporal but not a failed deploy.
    const recorded = described.typedSearchAttributes.get(searchAttributes.outcome);
    run.outcome = (listedRunOutcome(status, recorded) as Outcome | undefined) ?? 'unknown';
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    run.message = 'the workflow is no longer kept by Temporal (past the namespace retention)';
    return run;
  }
  if (status === 'FAILED') {
    const failure = await handle.result().then(
      () => undefined,
      (err: unknown) => (err instanceof WorkflowFailedError ? describeFailure(err) : undefined),
    );
    if (failure) run.message = headline(failure.message);
  }
  return run;
}

/** The first line of a failure message, and the one after it when the first only introduces it ("…:"). */
function headline(message: string): string {
  const [first = '', second] = message.split('\n');
  return first.endsWith(':') && second ? `${first} ${second.trim()}` : first;
}

/** The spec a schedule stores (its action's first argument). */
export function storedSpec(description: ScheduleDescription): DeploySpec | undefined {
  const spec: unknown = description.action.args?.[0];
  return typeof spec === 'object' && spec !== null ? (spec as DeploySpec) : undefined;
}

type EnvMap = DeploySpec['serve']['env'];

/**
 * The spec with any literal secret value replaced and its webhook URLs shown by their origin, for showing;
 * references are kept (they hold no secret). The spec schema only accepts references ({ fromEnv } /
 * { fromFile }) for secret-looking names and refuses credential flags, but a schedule keeps the spec it was
 * created with, possibly by an older liftoff: what it stores is shown as if it might hold one.
 */
export function redactSpec(spec: DeploySpec): DeploySpec {
  const shown = redactDeep(spec, secretsOfSpec(spec));
  // A new object: its literal webhook URLs are cut to their origins (a webhook's path is often its token).
  cutWebhookUrls(shown);
  return shown;
}

function envValue(value: EnvMap[string]): string {
  if (typeof value === 'string') return value;
  return 'fromEnv' in value ? `(worker env ${value.fromEnv})` : `(worker file ${value.fromFile})`;
}

/** A few lines saying what a scheduled run deploys; env var names are shown, secret values never. */
export function specSummary(spec: DeploySpec): string[] {
  const shown = redactSpec(spec);
  const hosts = shown.hosts
    .map((h) => `${h.name} (${h.role}, ${h.address}${h.jumpHost ? ` via ${h.jumpHost}` : ''})`)
    .join(', ');
  const env = (label: string, vars: EnvMap | undefined) => {
    const entries = Object.entries(vars ?? {});
    return entries.length === 0
      ? []
      : [`${label} ${entries.map(([k, v]) => `${k}=${envValue(v)}`).join(' ')}`];
  };
  return [
    `cluster ${shown.cluster}: ${hosts}`,
    `model ${shown.serve.model}, tensor parallel ${shown.serve.tensorParallelSize}, port ${shown.serve.port}`,
    `ray image ${shown.ray.image}, container ${shown.ray.container}`,
    ...env('ray.env', shown.ray.env),
    ...env('serve.env', shown.serve.env),
    ...(shown.serve.args.length > 0 ? [`serve.args ${shown.serve.args.join(' ')}`] : []),
  ];
}

/**
 * "2026-12-04 04:00 Europe/Paris": a time as the schedule's own zone reads it, with seconds only when there are
 * some. Swedish dates are written in ISO order ("2026-12-04 04:00:00").
 */
export function formatInZone(iso: string, zone: string): string {
  const local = new Date(iso).toLocaleString('sv-SE', { timeZone: zone, hourCycle: 'h23' });
  return `${local.replace(/:00$/, '')} ${zone}`;
}
