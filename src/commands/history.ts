// `liftoff history CLUSTER`: the cluster's past deploys, found by the LiftoffCluster search attribute: start
// time, trigger, outcome, total and load time, smoke-test tokens/s. Newest first.
import { Command, InvalidArgumentError } from 'commander';
import type { Client } from '@temporalio/client';
import { withClient } from '../temporal/connection.js';
import { searchAttributes } from '../shared/constants.js';
import { clusterWorkflowType } from '../shared/cluster-api.js';
import { emit, table } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';
import { historyEntries, type HistoryEntry, type ListedRun } from '../report/history-list.js';
import { formatDuration } from '../config/duration.js';
import { formatTime } from '../report/format.js';

export interface HistoryReport {
  cluster: string;
  entries: HistoryEntry[];
}

// Enough to find the newest runs among those listed; visibility does not sort by start time everywhere.
const listCap = 1000;

/** Every run of the cluster's workflows that visibility lists (up to a cap); the name is quoted as a literal. */
export async function listClusterRuns(
  client: Client,
  cluster: string,
  extraQuery = '',
): Promise<ListedRun[]> {
  // The cluster's own workflow (its record of held hosts) is not a run of it; deploys and downs are.
  const query = `${searchAttributes.cluster.name} = '${cluster.replaceAll("'", "\\'")}' AND WorkflowType != '${clusterWorkflowType}'${extraQuery ? ` AND ${extraQuery}` : ''}`;
  const runs: ListedRun[] = [];
  for await (const info of client.workflow.list({ query })) {
    const sa = info.typedSearchAttributes;
    runs.push({
      workflowId: info.workflowId,
      runId: info.runId,
      status: info.status.name,
      startTime: info.startTime,
      closeTime: info.closeTime,
      trigger: sa.get(searchAttributes.trigger),
      outcome: sa.get(searchAttributes.outcome),
      loadSeconds: sa.get(searchAttributes.loadSeconds),
      memo: info.memo,
    });
    if (runs.length >= listCap) break;
  }
  return runs;
}

export function renderHistory(r: HistoryReport): string {
  if (r.entries.length === 0) return `no deploys of cluster ${r.cluster} found`;
  const seconds = (s: number | undefined) => (s === undefined ? '-' : formatDuration(s * 1000));
  const relaunches = r.entries.filter((e) => e.relaunch);
  const causes = relaunches.map(
    (e) => `relaunch #${e.relaunch?.n ?? '?'} (${e.runId}) because: ${e.relaunch?.cause ?? 'unknown'}`,
  );
  const rollbacks = r.entries.flatMap((e) =>
    e.rollbackOf ? [`rollback ${e.runId} of ${e.rollbackOf}`] : [],
  );
  const notes = [...causes, ...rollbacks];
  const rows = table([
    ['STARTED', 'TRIGGER', 'OUTCOME', 'TOTAL', 'LOAD', 'TOKENS/S', 'WORKFLOW', 'RUN'],
    ...r.entries.map((e) => [
      formatTime(Date.parse(e.startedAt)),
      e.trigger,
      e.outcome,
      seconds(e.totalSeconds),
      seconds(e.loadSeconds),
      e.tokensPerSecond === undefined ? '-' : e.tokensPerSecond.toFixed(1),
      e.workflowId,
      e.runId,
    ]),
  ]);
  return [rows, ...(notes.length ? ['', ...notes] : [])].join('\n');
}

function positiveInt(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
  return n;
}

export const historyCommand = new Command('history')
  .description(
    "list a cluster's past deploys, newest first: start, trigger, outcome, total and load time, tokens/s",
  )
  .argument('<cluster>', 'cluster name from the spec')
  .option('--limit <n>', 'show at most this many deploys', positiveInt, 20)
  .option('--json', 'print the list as JSON')
  .action((cluster: string, opts: { limit: number; json?: boolean }) =>
    runCommand(opts, async () => {
      await withClient(async (client) => {
        const report: HistoryReport = {
          cluster,
          entries: historyEntries(await listClusterRuns(client, cluster), opts.limit),
        };
        emit(opts, report, renderHistory);
      });
    }),
  );
