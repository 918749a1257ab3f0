// `liftoff postmortem CLUSTER|WORKFLOW_ID`: a deploy run's postmortem, built from its event history alone
// (src/report). Online it fetches the history from Temporal and compares the load time with the cluster's
// earlier successful runs; with --history FILE it reads an export and needs no Temporal at all.
import { readFile, writeFile } from 'node:fs/promises';
import { Command, InvalidArgumentError } from 'commander';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { withClient } from '../temporal/connection.js';
import { deployWorkflowId } from '../shared/constants.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { print } from '../cli/render.js';
import {
  buildPostmortem,
  HistoryFormatError,
  renderPostmortem,
  reportFormats,
  type BaselineReport,
  type Postmortem,
  type ReportFormat,
} from '../report/index.js';
import { median } from '../report/history-list.js';
import { readHistoryEvents } from '../report/events.js';
import { foldHistory } from '../report/fold.js';
import type { RollbackEvidence } from '../report/rollback.js';
import { nameOf } from '../report/values.js';
import { readClusterRevisions } from '../activities/revisions.js';
import { deployWorkflowType } from '../workflows/supervise-api.js';
import { listClusterRuns } from './history.js';

interface PostmortemOptions {
  run?: string;
  format: ReportFormat;
  output?: string;
  history?: string;
  json?: boolean;
}

function reportFormat(text: string): ReportFormat {
  const format = reportFormats.find((f) => f === text);
  if (!format) throw new InvalidArgumentError(`expected one of ${reportFormats.join(', ')}`);
  return format;
}

/** Offline: a history file as `temporal workflow show --output json` (or the UI's download) writes it. */
async function postmortemFromFile(
  file: string,
  target: string | undefined,
  runId: string | undefined,
): Promise<Postmortem> {
  const text = await readFile(file, 'utf8').catch((err: unknown) => {
    throw new UsageError(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  });
  let pm: Postmortem;
  try {
    pm = buildPostmortem(JSON.parse(text));
  } catch (err) {
    if (err instanceof SyntaxError || err instanceof HistoryFormatError)
      throw new UsageError(`${file} is not a workflow history export: ${err.message}`);
    throw err;
  }
  if (target !== undefined && target !== pm.workflowId && target !== pm.cluster) {
    throw new UsageError(
      `${file} holds workflow ${pm.workflowId} (cluster ${pm.cluster ?? 'unknown'}), not ${target}`,
    );
  }
  if (runId !== undefined && pm.runId !== undefined && runId !== pm.runId) {
    throw new UsageError(`${file} holds run ${pm.runId}, not ${runId}`);
  }
  return pm;
}

/**
 * Online: TARGET is a workflow id or a cluster (whose deploys run as `liftoff-<cluster>`); the latest run
 * unless --run names one. A UI or schedule run that only started the deploy as a child is followed to it.
 */
async function postmortemOnline(client: Client, target: string, runId?: string): Promise<Postmortem> {
  const candidates = [...new Set([target, deployWorkflowId(target)])];
  for (const workflowId of candidates) {
    const handle = client.workflow.getHandle(workflowId, runId);
    const described = await handle.describe().catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
    if (!described) continue;
    let run: { workflowId: string; runId?: string } = { workflowId, runId: described.runId };
    let history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
    const { child } = buildPostmortem(history, run).trigger;
    if (child?.runId) {
      run = child;
      history = await client.workflow.getHandle(child.workflowId, child.runId).fetchHistory();
    }
    const first = buildPostmortem(history, run);
    const baseline = await loadBaseline(client, first);
    const rollbackEvidence = await loadRollbackEvidence(client, first);
    return buildPostmortem(history, { ...run, baseline, rollbackEvidence });
  }
  throw new UsageError(
    `no workflow ${target}${runId ? ` run ${runId}` : ''} and no deploy of a cluster ${target} (workflow ${deployWorkflowId(target)}) found`,
  );
}

/**
 * A rollback's run: the bad revision's data is not in its history. The cluster's recorded revisions have both
 * (spec, host identities, argv); failing that, the failed deploy's own history has its spec. Either is extra: when
 * neither can be read the report says the diff is unavailable, and the rest of it stands.
 */
async function loadRollbackEvidence(client: Client, pm: Postmortem): Promise<RollbackEvidence> {
  const of = pm.rollback?.of;
  if (of?.from === undefined) return {};
  if (pm.cluster) {
    const read = await readClusterRevisions(client, pm.cluster).catch(() => undefined);
    const bad = read?.revisions.find((r) => r.number === of.from);
    const restored = read?.revisions.find((r) => r.number === of.to);
    if (bad && restored) return { revisions: { bad, restored } };
  }
  const failed = of.failedRun !== undefined ? runRef(of.failedRun) : undefined;
  if (!failed) return {};
  try {
    const history = await client.workflow.getHandle(failed.workflowId, failed.runId).fetchHistory();
    const record = foldHistory(readHistoryEvents(history));
    // A bake-window rollback names its supervisor's run, whose input is not a deploy spec.
    return nameOf(record.start.attrs.workflowType) === deployWorkflowType ? { failedSpec: record.input } : {};
  } catch {
    return {};
  }
}

/** `workflowId:runId` (a launch id) split at its last colon. */
function runRef(text: string): { workflowId: string; runId: string } | undefined {
  const at = text.lastIndexOf(':');
  if (at <= 0 || at === text.length - 1) return undefined;
  return { workflowId: text.slice(0, at), runId: text.slice(at + 1) };
}

/** The median load time of the cluster's successful runs that started before this one. */
async function loadBaseline(client: Client, pm: Postmortem): Promise<BaselineReport> {
  if (!pm.cluster) return { available: false, reason: 'the run names no cluster' };
  const before = new Date(pm.startedAtMs).toISOString();
  const runs = await listClusterRuns(
    client,
    pm.cluster,
    `LiftoffOutcome = 'succeeded' AND StartTime < '${before}'`,
  );
  const loads = runs
    .filter((r) => r.runId !== pm.runId && r.startTime.getTime() < pm.startedAtMs)
    .map((r) => r.loadSeconds)
    .filter((s): s is number => s !== undefined);
  const value = median(loads);
  if (value === undefined) {
    return { available: false, reason: `no earlier successful deploy of ${pm.cluster} recorded a load time` };
  }
  return { available: true, medianSeconds: value, runs: loads.length };
}

export const postmortemCommand = new Command('postmortem')
  .description(
    "a deploy run's postmortem from its event history: step timeline with retries, errors, load progress, failure and diagnostics, spec (secrets redacted), trigger, load time vs earlier runs",
  )
  .argument('[target]', 'cluster name or workflow id (optional with --history)')
  .option('--run <runId>', 'a specific run (default: the latest)')
  .option(
    '--format <format>',
    `output format: ${reportFormats.join(', ')}`,
    reportFormat,
    'md' as ReportFormat,
  )
  .option('-o, --output <file>', 'write the report to FILE instead of stdout')
  .option('--history <file>', 'offline: read a history exported with `temporal workflow show --output json`')
  .option('--json', 'same as --format json')
  .action((target: string | undefined, opts: PostmortemOptions) =>
    runCommand(opts, async () => {
      const format: ReportFormat = opts.json ? 'json' : opts.format;
      let pm: Postmortem;
      if (opts.history !== undefined) {
        pm = await postmortemFromFile(opts.history, target, opts.run);
      } else {
        if (target === undefined)
          throw new UsageError('name a cluster or workflow id, or give --history FILE');
        pm = await withClient((client) => postmortemOnline(client, target, opts.run));
      }
      const text = renderPostmortem(pm, format);
      if (opts.output === undefined) {
        print(text.endsWith('\n') ? text : `${text}\n`);
        return;
      }
      await writeFile(opts.output, text);
      process.stdout.write(
        `wrote ${format} postmortem of ${pm.workflowId}${pm.runId ? ` run ${pm.runId}` : ''} (${pm.outcome}) to ${opts.output}\n`,
      );
    }),
  );
