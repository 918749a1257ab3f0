// `liftoff metrics targets -o FILE`: the Prometheus file_sd file of every serving cluster's vLLM endpoint (and its
// companions'), from what `liftoff status` reads of Temporal. Run it every few seconds beside Prometheus (a timer, a
// loop): the file is replaced in one rename, so Prometheus never reads half of it, and follows relaunches.
import { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { clusterQuery, clusterWorkflowId, type ClusterRecord } from '../shared/cluster-api.js';
import { withClient } from '../temporal/connection.js';
import { emit, print, type OutputOptions } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';
import { writeOutputFile } from '../cli/output-file.js';
import { fleetRecords, isUp } from './fleet-status.js';
import {
  scrapeTargets,
  targetSpecSchema,
  targetsFileText,
  type TargetGroup,
  type TargetSource,
  type TargetSpec,
} from './metrics-targets.js';

/** How long a cluster's workflow may take to answer for its spec (a query needs a worker). */
const specQueryMs = 5000;

export interface TargetsReport {
  /** Where the file went; `-` for stdout. */
  output: string;
  groups: TargetGroup[];
  /** Clusters whose spec no worker gave in time: their companions (if any) are left out. */
  withoutSpec: string[];
}

/** The spec the cluster's workflow holds, through its query; undefined when no worker answers in time. */
async function specOf(client: Client, cluster: string): Promise<TargetSpec | undefined> {
  try {
    const held = await client.withDeadline(Date.now() + specQueryMs, () =>
      client.workflow.getHandle(clusterWorkflowId(cluster)).query(clusterQuery),
    );
    const parsed = targetSpecSchema.safeParse(held.spec);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The specs a long-lived caller (the worker's targets file) already has, by cluster: asked again only when the
 * cluster's record says another deploy or revision serves (`key`), and kept when its workflow does not answer.
 */
export type SpecCache = Map<string, { key: string; spec: TargetSpec }>;

/** What changes a cluster's spec: its workflow run, its last deploy, its revision. A relaunch changes none. */
function specKey(record: ClusterRecord, workflowId: string): string {
  return JSON.stringify([workflowId, record.lastDeploy?.workflowId ?? '', record.revision ?? null]);
}

export interface FleetTargets {
  groups: TargetGroup[];
  /** Clusters whose spec no worker gave in time (nor the cache held): their companions (if any) are left out. */
  withoutSpec: string[];
}

/** The scrape targets of every cluster whose launch serves (or should), from the fleet's records and specs. */
export async function fleetTargets(client: Client, cache?: SpecCache): Promise<FleetTargets> {
  const records = (await fleetRecords(client)).filter((r) => isUp(r.record.state) && r.record.endpoint);
  const sources: TargetSource[] = await Promise.all(
    records.map(async ({ record, workflowId }) => {
      const key = specKey(record, workflowId);
      const cached = cache?.get(record.cluster);
      let spec = cached?.key === key ? cached.spec : await specOf(client, record.cluster);
      if (spec) cache?.set(record.cluster, { key, spec });
      // No answer: the spec it had (companions rarely change), asked again next time since its key is old.
      else spec = cached?.spec;
      return spec ? { record, spec } : { record };
    }),
  );
  if (cache)
    for (const cluster of cache.keys())
      if (!records.some((r) => r.record.cluster === cluster)) cache.delete(cluster);
  return {
    groups: scrapeTargets(sources),
    withoutSpec: sources.filter((s) => !s.spec).map((s) => s.record.cluster),
  };
}

export async function metricsTargets(client: Client, output: string): Promise<TargetsReport> {
  const { groups, withoutSpec } = await fleetTargets(client);
  if (output === '-') process.stdout.write(targetsFileText(groups));
  else writeOutputFile(output, targetsFileText(groups), { replace: true });
  return { output, groups, withoutSpec };
}

export function renderTargets(r: TargetsReport): string {
  const lines = [`${r.output}: ${r.groups.length} target${r.groups.length === 1 ? '' : 's'}`];
  for (const g of r.groups)
    lines.push(`  ${g.labels.cluster} ${g.labels.companion ?? 'vllm'}@${g.labels.host} ${g.targets[0]}`);
  if (r.withoutSpec.length > 0)
    lines.push(
      `no worker gave the spec of ${r.withoutSpec.join(', ')}: their companions (if any) are left out`,
    );
  return lines.join('\n');
}

const targetsCommand = new Command('targets')
  .description(
    "write a Prometheus file_sd file of every serving cluster's vLLM endpoint (and its companions'), replaced atomically",
  )
  .option('-o, --output <file>', 'where to write the file; - prints it', '-')
  .option('--json', 'print the report as JSON (with -o FILE)')
  .action((opts: OutputOptions & { output: string }) =>
    runCommand(opts, async () => {
      const report = await withClient((client) => metricsTargets(client, opts.output));
      // With -o -, stdout is the file itself; the report would break it.
      if (opts.output !== '-') emit(opts, report, renderTargets);
      else if (report.withoutSpec.length > 0 && !opts.json)
        print(
          `no worker gave the spec of ${report.withoutSpec.join(', ')}: their companions (if any) are left out\n`,
          process.stderr,
        );
    }),
  );

export const metricsCommand = new Command('metrics')
  .description('Prometheus helpers: the scrape targets of the fleet')
  .addCommand(targetsCommand);
