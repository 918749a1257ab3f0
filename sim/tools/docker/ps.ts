// `docker ps`: the containers, filtered (--filter), in a table or a Go template (--format).
import { hostDir } from '../../host-state.js';
import { err, out, parseOrFail, withTemplate } from './cli.js';
import { goTimeString, humanDuration, renderList } from './format.js';
import {
  listContainers,
  mainCommand,
  normaliseImage,
  observedContainer,
  type ContainerRecord,
} from './state.js';

function commandString(rec: ContainerRecord): string {
  return mainCommand(rec).join(' ');
}

function ellipsis(s: string, max: number): string {
  const runes = [...s];
  return runes.length <= max ? s : `${runes.slice(0, max - 1).join('')}…`;
}

function statusText(rec: ContainerRecord, now: number): string {
  if (rec.status === 'running') return `Up ${humanDuration(now - Date.parse(rec.startedAt ?? rec.created))}`;
  if (rec.status === 'exited')
    return `Exited (${rec.exitCode}) ${humanDuration(now - Date.parse(rec.finishedAt ?? rec.created))} ago`;
  return 'Created';
}

function psRow(rec: ContainerRecord, noTrunc: boolean, now: number): Record<string, unknown> {
  const cmd = commandString(rec);
  const labels = Object.keys(rec.labels)
    .sort()
    .map((k) => `${k}=${rec.labels[k]}`)
    .join(',');
  return {
    Command: JSON.stringify(noTrunc ? cmd : ellipsis(cmd, 20)),
    CreatedAt: goTimeString(rec.created),
    ID: noTrunc ? rec.id : rec.id.slice(0, 12),
    Image: rec.image,
    Labels: labels,
    LocalVolumes: String(rec.mounts.filter((m) => m.type === 'volume').length),
    Mounts: rec.mounts.map((m) => (noTrunc ? m.source : ellipsis(m.source, 15))).join(','),
    Names: rec.name,
    Networks: rec.hostConfig.networkMode === 'bridge' ? 'bridge' : rec.hostConfig.networkMode,
    Ports: '',
    RunningFor: `${humanDuration(now - Date.parse(rec.created))} ago`,
    Size: '0B',
    State: rec.status,
    Status: statusText(rec, now),
  };
}

const psHeaders: Record<string, string> = {
  Command: 'COMMAND',
  CreatedAt: 'CREATED AT',
  ID: 'CONTAINER ID',
  Image: 'IMAGE',
  Labels: 'LABELS',
  LocalVolumes: 'LOCAL VOLUMES',
  Mounts: 'MOUNTS',
  Names: 'NAMES',
  Networks: 'NETWORKS',
  Ports: 'PORTS',
  RunningFor: 'CREATED',
  Size: 'SIZE',
  State: 'STATE',
  Status: 'STATUS',
  Label: 'LABEL',
};

const containerStates = ['created', 'restarting', 'running', 'removing', 'paused', 'exited', 'dead'];

type Filter = (rec: ContainerRecord) => boolean;

function parseFilters(specs: string[]): Filter | string {
  const groups = new Map<string, string[]>();
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    if (eq < 0) return `bad format of filter (expected name=value)`;
    const key = spec.slice(0, eq).toLowerCase();
    groups.set(key, [...(groups.get(key) ?? []), spec.slice(eq + 1)]);
  }
  const checks: Filter[] = [];
  for (const [key, values] of groups) {
    switch (key) {
      case 'name':
        checks.push((r) =>
          values.some((v) => {
            try {
              return new RegExp(v).test(`/${r.name}`);
            } catch {
              return `/${r.name}`.includes(v);
            }
          }),
        );
        break;
      case 'id':
        checks.push((r) => values.some((v) => r.id.startsWith(v)));
        break;
      case 'label':
        checks.push((r) =>
          values.every((v) => {
            const eq = v.indexOf('=');
            return eq < 0 ? v in r.labels : r.labels[v.slice(0, eq)] === v.slice(eq + 1);
          }),
        );
        break;
      case 'status':
        for (const v of values) if (!containerStates.includes(v)) return `Invalid filter 'status=${v}'`;
        checks.push((r) => values.includes(r.status));
        break;
      case 'ancestor':
        checks.push((r) => values.some((v) => normaliseImage(v) === normaliseImage(r.image)));
        break;
      default:
        return `invalid filter '${key}'`;
    }
  }
  return (r) => checks.every((c) => c(r));
}

export function cmdPs(args: string[]): number {
  const f = parseOrFail('ps', args, {
    all: { short: 'a' },
    quiet: { short: 'q' },
    filter: { short: 'f', value: true },
    format: { value: true },
    'no-trunc': {},
    last: { short: 'n', value: true },
    latest: { short: 'l' },
    size: { short: 's' },
  });
  if (typeof f === 'number') return f;
  const filter = parseFilters(f.all('filter'));
  if (typeof filter === 'string') {
    err(`Error response from daemon: ${filter}`);
    return filter.startsWith('bad format') ? 125 : 1;
  }
  const dir = hostDir();
  const now = Date.now();
  // A status filter lists stopped containers too, as the daemon does.
  const showAll = f.has('all') || f.all('filter').some((s) => s.startsWith('status='));
  let recs = listContainers(dir)
    .map((r) => observedContainer(dir, r))
    .filter((r): r is ContainerRecord => r !== undefined)
    .filter((r) => showAll || r.status === 'running')
    .filter(filter)
    .sort((a, b) => Date.parse(b.created) - Date.parse(a.created));
  const last = f.has('latest') ? 1 : Number(f.get('last') ?? -1);
  if (last >= 0) recs = recs.slice(0, last);
  const noTrunc = f.has('no-trunc');
  const rows = recs.map((r) => psRow(r, noTrunc, now));
  for (const [row, rec] of rows.map((row, i) => [row, recs[i]] as const)) {
    const labels = rec?.labels ?? {};
    row.Label = (key: unknown) => labels[String(key)] ?? '';
  }
  const format = f.has('quiet')
    ? '{{.ID}}'
    : (f.get('format') ??
      'table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}');
  if (format.trim() === '{{json .}}') {
    out(
      rows
        .map(
          (r) => `${JSON.stringify(Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'Label')))}\n`,
        )
        .join(''),
    );
    return 0;
  }
  return withTemplate(() => renderList(format, rows, psHeaders));
}
