// `liftoff revisions CLUSTER [--diff R1 R2]`: the cluster's recorded revisions (what each successful deploy ran,
// kept in the cluster's workflow: the last 20), and what changed between two of them, including what changed
// outside the spec. Reads Temporal only: no SSH, no worker needed for an ended cluster.
import { Command } from 'commander';
import { withClient } from '../temporal/connection.js';
import { emit, table } from '../cli/render.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { ExitCode } from '../cli/exit-codes.js';
import { readFile } from 'node:fs/promises';
import { readClusterRevisions, withCurrent, type ClusterRevisions } from '../activities/revisions.js';
import { HistoryFormatError, readHistoryEvents } from '../report/events.js';
import { NotAClusterHistoryError, revisionsFromHistory } from '../report/revisions.js';
import { diffRevisions, type FieldChange } from '../shared/revision-diff.js';
import { shortImageId } from '../shared/revisions.js';
import type { Revision } from '../shared/revisions.js';

export interface RevisionLine {
  number: number;
  atMs: number;
  trigger: string;
  image: string;
  /** Short image ID when every host recorded the same one. */
  imageId?: string;
  model: string;
  status: Revision['status'];
  restores?: number;
  badReason?: string;
  loadSeconds?: number;
  tokensPerSecond?: number;
}

export interface RevisionsReport {
  cluster: string;
  current?: number;
  revisions: RevisionLine[];
}

export function revisionsReport(cluster: string, read: ClusterRevisions): RevisionsReport {
  return {
    cluster,
    ...(read.current !== undefined ? { current: read.current } : {}),
    revisions: read.revisions.map((r) => {
      const ids = [...new Set(r.hosts.map((h) => h.imageId))];
      const only = ids.length === 1 ? ids[0] : undefined;
      return {
        number: r.number,
        atMs: r.atMs,
        trigger: r.trigger,
        image: r.image,
        ...(only ? { imageId: shortImageId(only) } : {}),
        model: r.model,
        status: r.status,
        ...(r.restores !== undefined ? { restores: r.restores } : {}),
        ...(r.badReason !== undefined ? { badReason: r.badReason } : {}),
        ...(r.evidence ? r.evidence : {}),
      };
    }),
  };
}

export function renderRevisions(r: RevisionsReport): string {
  if (r.revisions.length === 0)
    return `${r.cluster} has no recorded revision yet (one is recorded per successful deploy)`;
  const rows = [
    ['REV', 'WHEN (UTC)', 'TRIGGER', 'IMAGE', 'ID', 'MODEL', 'STATUS'],
    ...r.revisions.map((v) => [
      `${v.number === r.current ? '*' : ' '}${v.number}`,
      new Date(v.atMs).toISOString().slice(0, 19).replace('T', ' '),
      v.trigger,
      v.image.length > 40 ? `${v.image.slice(0, 39)}…` : v.image,
      v.imageId ?? '(differs)',
      v.model,
      `${v.status}${v.restores !== undefined ? ` (restores ${v.restores})` : ''}`,
    ]),
  ];
  const bad = r.revisions
    .filter((v) => v.badReason)
    .map((v) => `  ${v.number}: ${firstLine(v.badReason ?? '')}`);
  return [table(rows), ...(bad.length ? ['bad:', ...bad] : [])].join('\n');
}

export interface RevisionDiff {
  cluster: string;
  from: number;
  to: number;
  changes: FieldChange[];
}

export function renderDiff(d: RevisionDiff): string {
  if (d.changes.length === 0) return `revisions ${d.from} and ${d.to} of ${d.cluster} are the same`;
  const line = (c: FieldChange) => `  ${c.field}: ${c.from} → ${c.to}`;
  const inSpec = d.changes.filter((c) => !c.outsideSpec);
  const outside = d.changes.filter((c) => c.outsideSpec);
  return [
    `revision ${d.from} → ${d.to} of ${d.cluster}:`,
    ...(inSpec.length ? ['in the spec:', ...inSpec.map(line)] : []),
    ...(outside.length ? ['outside the spec (what the hosts reported):', ...outside.map(line)] : []),
  ].join('\n');
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}

export function revisionNumber(text: string, what: string): number {
  if (!/^\d{1,9}$/.test(text))
    throw new UsageError(`${what}: expected a revision number such as 3, got ${JSON.stringify(text)}`);
  return Number(text);
}

export const revisionsCommand = new Command('revisions')
  .description("list a cluster's recorded revisions, or what changed between two of them (--diff R1 R2)")
  .argument('<cluster>', 'cluster name from the spec')
  .option('--diff <revisions...>', 'two revision numbers: what changed from the first to the second')
  .option(
    '--history <file>',
    "read them offline from an export of the cluster's workflow (temporal workflow show --workflow-id liftoff-cluster:NAME --output json)",
  )
  .option('--json', 'print one JSON document')
  .action((cluster: string, opts: { diff?: string[]; history?: string; json?: boolean }) =>
    runCommand(opts, async () => {
      if (opts.history !== undefined)
        return show(cluster, await revisionsFromFile(opts.history, cluster), opts);
      return withClient(async (client) => show(cluster, await readClusterRevisions(client, cluster), opts));
    }),
  );

async function revisionsFromFile(file: string, cluster: string): Promise<ClusterRevisions> {
  const text = await readFile(file, 'utf8').catch((err: unknown) => {
    throw new UsageError(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  });
  try {
    const read = revisionsFromHistory(readHistoryEvents(JSON.parse(text)));
    if (read.cluster !== cluster)
      throw new UsageError(`${file} is the history of cluster ${read.cluster}, not ${cluster}`);
    return withCurrent(read.revisions);
  } catch (err) {
    if (
      err instanceof SyntaxError ||
      err instanceof HistoryFormatError ||
      err instanceof NotAClusterHistoryError
    )
      throw new UsageError(`${file}: ${err.message}`);
    throw err;
  }
}

function show(cluster: string, read: ClusterRevisions, opts: { diff?: string[]; json?: boolean }): number {
  if (!opts.diff) {
    emit(opts, revisionsReport(cluster, read), renderRevisions);
    return ExitCode.ok;
  }
  const [first, second, ...more] = opts.diff;
  if (first === undefined || second === undefined || more.length > 0)
    throw new UsageError('--diff: expected two revision numbers, e.g. --diff 2 3');
  const pick = (n: number): Revision => {
    const r = read.revisions.find((v) => v.number === n);
    if (!r)
      throw new UsageError(
        `--diff: ${cluster} keeps no revision ${n} (kept: ${read.revisions.map((v) => v.number).join(', ') || 'none'})`,
      );
    return r;
  };
  const from = pick(revisionNumber(first, '--diff'));
  const to = pick(revisionNumber(second, '--diff'));
  emit(opts, { cluster, from: from.number, to: to.number, changes: diffRevisions(from, to) }, renderDiff);
  return ExitCode.ok;
}
