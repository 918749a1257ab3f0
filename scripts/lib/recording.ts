// What scripts/record-histories.ts and its recordings apart (scripts/lib/record-companions.ts) share: a run's history
// exported as a user exports it, checked for how it closed, and described for manifest.json. Tooling, not part of
// the product.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { temporalCliPath } from '../../src/temporal/cli-path.js';
import type { DevServer } from '../../src/temporal/dev-server.js';
import type { DeploySpecInput } from '../../src/config/schema.js';
import type { SimCluster } from '../../sim/cluster.js';
import { paths } from '../../sim/host-state.js';
import { supervisionQuery } from '../../src/workflows/supervise-api.js';
import type { SuperviseState } from '../../src/workflows/supervise-state.js';
import { historyExportArgs } from './history-export.js';

/** The fields of an exported (proto JSON) history event that the recordings check. */
export interface HistoryEvent {
  eventType?: string;
  workflowTaskCompletedEventAttributes?: { identity?: string };
  activityTaskStartedEventAttributes?: { identity?: string };
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  workflowExecutionCompletedEventAttributes?: object;
  activityTaskCancelRequestedEventAttributes?: object;
  workflowExecutionFailedEventAttributes?: {
    failure?: { applicationFailureInfo?: { details?: { payloads?: unknown[] } } };
  };
  workflowExecutionContinuedAsNewEventAttributes?: { newExecutionRunId?: string };
  workflowExecutionStartedEventAttributes?: { continuedExecutionRunId?: string };
}

/** A line of the script's progress, on stdout. */
export const say = (line: string): void => void process.stdout.write(`record-histories: ${line}\n`);

export const deployTimeoutMs = 6 * 60_000;

/** A deploy that neither ends nor fails (a stuck workflow task) must not hang the script forever. */
export async function within<T>(result: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Error(`the deploy did not end within ${deployTimeoutMs / 1000} s; see the Temporal UI`)),
      deployTimeoutMs,
    );
  });
  try {
    return await Promise.race([result, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The user's export: `temporal workflow show --output json`, byte for byte. */
export async function exportHistory(server: DevServer, runId: string, workflowId: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    temporalCliPath(),
    historyExportArgs({ address: server.address, namespace: server.namespace, workflowId, runId }),
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return stdout;
}

export function eventsOf(json: string): HistoryEvent[] {
  const parsed = JSON.parse(json) as { events?: HistoryEvent[] };
  if (!Array.isArray(parsed.events)) throw new Error('`temporal workflow show` printed no events array');
  return parsed.events;
}

/** Worker identities in the order they first ran a workflow task or picked up an activity. */
export function workerIdentities(events: HistoryEvent[]): string[] {
  const seen: string[] = [];
  for (const e of events) {
    const identity =
      e.workflowTaskCompletedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
    if (identity && !seen.includes(identity)) seen.push(identity);
  }
  return seen;
}

/** The activities the run scheduled, in order (a retried activity once per schedule). */
export function scheduledActivities(events: HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

type Closing =
  | 'workflowExecutionCompletedEventAttributes'
  | 'workflowExecutionFailedEventAttributes'
  | 'workflowExecutionContinuedAsNewEventAttributes';

export function expectClosedAs(events: HistoryEvent[], closing: Closing, what: string): HistoryEvent {
  const last = events[events.length - 1];
  if (!last?.[closing]) {
    throw new Error(`${what}: the history does not end with ${closing.replace(/Attributes$/, '')}`);
  }
  return last;
}

/** Polls the supervisor's state until `pred` holds. */
export async function superviseUntil(
  client: Client,
  supervisorId: string,
  what: string,
  pred: (s: SuperviseState) => boolean,
): Promise<SuperviseState> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const s = await client.workflow
      .getHandle(supervisorId)
      .query(supervisionQuery)
      .catch(() => undefined);
    if (s && pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`the supervisor did not reach "${what}" within 180 s`);
    await sleep(200);
  }
}

export interface Recording {
  file: string;
  workflowType: 'deploy' | 'supervise' | 'cluster';
  workflowId: string;
  description: string;
  runId: string;
  /** `running`: exported while it still ran (the cluster's workflow runs for as long as it holds the hosts). */
  outcome: 'succeeded' | 'failed' | 'continued-as-new' | 'running';
  json: string;
  events: number;
  workerIdentities: string[];
  /** The cluster's revisions this recording shows, for the tests that read them back. */
  revisions?: RolledBackRevisions;
}

/** The revision numbers of the rolled-back upgrade: what it restored, the one that failed, the rollback's own. */
export interface RolledBackRevisions {
  knownGood: number;
  bad: number;
  rollback: number;
}

/** Which workflow a recording is a run of. */
export type RecordedWorkflow = Pick<Recording, 'workflowType' | 'workflowId'>;

export function recording(
  file: string,
  description: string,
  runId: string,
  outcome: Recording['outcome'],
  json: string,
  workflow: RecordedWorkflow,
  revisions?: RolledBackRevisions,
): Recording {
  const events = eventsOf(json);
  return {
    file,
    ...workflow,
    ...(revisions ? { revisions } : {}),
    description,
    runId,
    outcome,
    json,
    events: events.length,
    workerIdentities: workerIdentities(events),
  };
}

/** What a recording of a supervised deploy on the script's cluster is given (scripts/lib/record-*.ts). */
export interface SupervisedRecordingContext {
  client: Client;
  server: DevServer;
  sim: SimCluster;
  cluster: string;
  /** The supervisor's settings: a short interval and threshold, so a fault is seen within seconds. */
  supervise: NonNullable<DeploySpecInput['supervise']> & { interval: string; failureThreshold: number };
  /** Where this recording is among the script's, e.g. `6/7`. */
  step: string;
}

/** SIGKILLs the head's last launched vLLM and waits until the supervisor has relaunched it and serves again. */
export async function killHeadVllmUntilRelaunched(
  client: Client,
  sim: SimCluster,
  supervisorId: string,
): Promise<SuperviseState> {
  const head = sim.hosts[0];
  if (!head) throw new Error('the cluster has no head');
  const launched = readFileSync(paths.launches(head.hostDir), 'utf8').trim().split('\n').at(-1);
  const { pid } = JSON.parse(launched ?? '{}') as { pid?: number };
  if (!pid) throw new Error(`no launch in ${paths.launches(head.hostDir)}`);
  process.kill(pid, 'SIGKILL');
  say(`  vLLM (pid ${pid}) SIGKILLed`);
  return superviseUntil(
    client,
    supervisorId,
    'serving again after a relaunch',
    (s) => s.status === 'serving' && s.relaunches.at(-1)?.outcome === 'serving',
  );
}
