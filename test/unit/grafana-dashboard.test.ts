// deploy/grafana/liftoff.json (issue 32): it parses, has the rows and panels the issue names, every panel queries
// the dashboard's Prometheus datasource, and every query names a series the worker, vLLM or the Temporal SDK
// exports: vLLM's names as the real vLLM (.venv-real) declares them, Temporal's as its sdk-core does.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { vllmMetrics } from '../../src/shared/metric-names.js';
import { knownSeries, seriesNames, temporalWorkerMetrics } from '../helpers/promql-names.js';

const execFileAsync = promisify(execFile);

interface Target {
  refId?: string;
  expr?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  type: string;
  name: string;
  query: unknown;
}
interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  templating: { list: Variable[] };
  panels: Panel[];
}

const dashboard = JSON.parse(
  readFileSync(join(projectRoot, 'deploy', 'grafana', 'liftoff.json'), 'utf8'),
) as Dashboard;

/** The panels under each row, by the row's title (rows are flat, not collapsed, as Grafana saves them). */
function rows(): Map<string, Panel[]> {
  const byRow = new Map<string, Panel[]>();
  let current: Panel[] | undefined;
  for (const p of dashboard.panels) {
    if (p.type === 'row') byRow.set(p.title, (current = [...(p.panels ?? [])]));
    else current?.push(p);
  }
  return byRow;
}

const queryPanels = (): Panel[] => dashboard.panels.filter((p) => p.type !== 'row');

describe('deploy/grafana/liftoff.json', () => {
  it('is a schemaVersion 39 dashboard with a Prometheus datasource variable and a cluster variable', () => {
    assert.equal(dashboard.schemaVersion, 39);
    assert.equal(dashboard.uid, 'liftoff');
    const [datasource, cluster] = dashboard.templating.list;
    assert.deepEqual(
      [datasource?.type, datasource?.name, datasource?.query],
      ['datasource', 'datasource', 'prometheus'],
    );
    assert.deepEqual([cluster?.type, cluster?.name], ['query', 'cluster']);
    assert.deepEqual(
      (cluster?.query as { query?: string }).query,
      'label_values(liftoff_cluster_state, cluster)',
    );
  });

  it('has the fleet, deploy, supervisor, vLLM and Temporal worker rows with their panels', () => {
    const titles = new Map([...rows()].map(([row, panels]) => [row, panels.map((p) => p.title)]));
    assert.deepEqual([...titles.keys()], ['Fleet', 'Deploy', 'Supervisor', 'vLLM', 'Temporal worker']);
    const has = (row: string, ...patterns: RegExp[]): void => {
      for (const pattern of patterns)
        assert.ok(
          titles.get(row)?.some((t) => pattern.test(t)),
          `${row} has a panel ${pattern}: ${titles.get(row)?.join(', ')}`,
        );
    };
    has('Fleet', /^Cluster state$/, /^Endpoint$/, /^Uptime$/, /^Relaunches$/, /^Revision$/);
    has('Deploy', /^Step durations/, /^Load phase$/, /^ETA error$/);
    has('Supervisor', /^Probe latency$/, /^Failed probe rounds$/);
    has(
      'vLLM',
      /running and waiting/,
      /^KV-cache use$/,
      /^Time to first token/,
      /^Inter-token latency/,
      /tokens\/s$/,
    );
    has('Temporal worker', /^Task slots$/, /^Schedule-to-start latency/);
  });

  it('every panel has the datasource variable, targets with unique refIds and a query, on the 24-column grid', () => {
    const ids = new Set<number>();
    for (const p of dashboard.panels) {
      assert.ok(!ids.has(p.id), `panel id ${p.id} is unique`);
      ids.add(p.id);
      assert.ok(
        p.gridPos.x >= 0 && p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24,
        `${p.title} fits the grid`,
      );
    }
    for (const p of queryPanels()) {
      assert.deepEqual(p.datasource, { type: 'prometheus', uid: '${datasource}' }, `${p.title}: datasource`);
      assert.ok(p.targets && p.targets.length > 0, `${p.title}: has targets`);
      const refIds = p.targets.map((t) => t.refId);
      assert.equal(new Set(refIds).size, refIds.length, `${p.title}: refIds are unique`);
      for (const t of p.targets) {
        assert.ok(typeof t.expr === 'string' && t.expr.trim() !== '', `${p.title} ${t.refId}: has a query`);
        assert.deepEqual(t.datasource, p.datasource, `${p.title} ${t.refId}: datasource`);
      }
    }
  });

  it('queries only series the worker, vLLM or the Temporal SDK export, the percentiles from _bucket', () => {
    const known = knownSeries();
    const used = new Set<string>();
    for (const p of queryPanels())
      for (const t of p.targets ?? []) {
        const names = seriesNames(t.expr ?? '');
        assert.ok(names.length > 0, `${p.title} ${t.refId}: names a series`);
        for (const name of names) {
          assert.ok(known.has(name), `${p.title} ${t.refId}: ${name} is exported (${t.expr})`);
          used.add(name);
        }
        if (/histogram_quantile/.test(t.expr ?? ''))
          assert.ok(
            names.every((n) => n.endsWith('_bucket')),
            `${p.title}: quantiles over _bucket series`,
          );
      }
    // The cluster variable's series too; and the vLLM row shows every vLLM series liftoff lists.
    for (const name of Object.values(vllmMetrics))
      assert.ok(used.has(name) || used.has(`${name}_bucket`), `the dashboard shows ${name}`);
  });

  it("every query parses as PromQL (promtool, with Grafana's variables given values)", async () => {
    const exprs = queryPanels().flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? ''));
    const concrete = exprs.map((e) =>
      e.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '6h').replaceAll('$cluster', '.*'),
    );
    const dir = mkdtempSync(join(tmpdir(), 'liftoff-dashboard-'));
    try {
      const file = join(dir, 'queries.yml');
      writeFileSync(
        file,
        stringify({
          groups: [{ name: 'dashboard', rules: concrete.map((expr, i) => ({ record: `q${i}`, expr })) }],
        }),
      );
      const out = await execFileAsync('promtool', ['check', 'rules', file], { timeout: 30_000 }).catch(
        (err: { code?: string; stdout?: string; stderr?: string }) =>
          assert.fail(
            err.code === 'ENOENT'
              ? 'promtool is installed (bash scripts/setup.sh)'
              : `promtool: ${err.stdout ?? ''}${err.stderr ?? ''}`,
          ),
      );
      assert.match(out.stdout, new RegExp(`SUCCESS: ${concrete.length} rules found`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads series names with a bounded tokenizer that skips labels, strings, ranges and functions', () => {
    assert.deepEqual(
      seriesNames(
        'histogram_quantile(0.95, sum by (cluster, le) (rate(vllm:time_to_first_token_seconds_bucket{cluster=~"$cluster",x="a{b}"}[$__rate_interval])))',
      ),
      ['vllm:time_to_first_token_seconds_bucket'],
    );
    assert.deepEqual(seriesNames('time() - max by (cluster) (liftoff_cluster_revision)'), [
      'liftoff_cluster_revision',
    ]);
    assert.deepEqual(seriesNames('a > 0 and on (cluster) sum without (le) (b offset 5m) == 1e3 unless c'), [
      'a',
      'b',
      'c',
    ]);
    assert.throws(() => seriesNames('x'.repeat(5000)), /over 4000 characters/);
  });
});

describe("the series names against their exporters' sources", () => {
  const vllmLoggers = join(
    projectRoot,
    '.venv-real',
    'lib',
    'python3.11',
    'site-packages',
    'vllm',
    'v1',
    'metrics',
    'loggers.py',
  );
  it(
    "vLLM's are declared by the real vLLM (counters without _total, which prometheus_client adds)",
    { skip: !existsSync(vllmLoggers) && 'real vLLM is not installed (scripts/setup-real.sh)' },
    () => {
      const source = readFileSync(vllmLoggers, 'utf8');
      const declared = (name: string): string | undefined =>
        new RegExp(
          `self\\._(counter|gauge|histogram)_cls\\(\\s*name="${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`,
        ).exec(source)?.[1];
      for (const name of Object.values(vllmMetrics)) {
        const kind = name.endsWith('_total') ? declared(name.slice(0, -'_total'.length)) : declared(name);
        assert.ok(kind, `real vLLM declares ${name}`);
        if (name.endsWith('_total')) assert.equal(kind, 'counter', name);
      }
      assert.equal(declared(vllmMetrics.timeToFirstToken), 'histogram');
      assert.equal(declared(vllmMetrics.interTokenLatency), 'histogram');
    },
  );

  // sdk-core names most metrics in its core crate, the latency histograms in its common crate.
  const crates = join(projectRoot, 'node_modules', '@temporalio', 'core-bridge', 'sdk-core', 'crates');
  const coreMetrics = ['sdk-core', 'common'].map((crate) =>
    join(crates, crate, 'src', 'telemetry', 'metrics.rs'),
  );
  it(
    "Temporal's are sdk-core's names under the default temporal_ prefix",
    { skip: !coreMetrics.every((f) => existsSync(f)) && "the core-bridge's sources are not in node_modules" },
    () => {
      const source = coreMetrics.map((f) => readFileSync(f, 'utf8')).join('\n');
      for (const name of [
        ...temporalWorkerMetrics.gauges,
        ...temporalWorkerMetrics.counters,
        ...temporalWorkerMetrics.histograms,
      ])
        assert.ok(source.includes(`"${name.slice('temporal_'.length)}"`), `sdk-core names ${name}`);
    },
  );
});
