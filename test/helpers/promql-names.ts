// The series a PromQL expression names, for checking the dashboard and the alert rules against what the worker,
// vLLM and the Temporal SDK export. A bounded tokenizer, not a parser: string literals, label matchers, ranges and
// label lists are blanked first (each by a linear regex), then every identifier followed by `{`, `[`, `)`, a space
// or the end is a series, unless it is a PromQL keyword or aggregation (functions are followed by `(`).
import { clusterMetrics, deployMetrics, vllmMetrics } from '../../src/shared/metric-names.js';

const maxExpressionChars = 4000;

const keywords = new Set([
  // Aggregations (`sum by (x) (...)`: followed by a space).
  'sum',
  'min',
  'max',
  'avg',
  'count',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'count_values',
  'group',
  'limitk',
  'limit_ratio',
  // Operators and modifiers.
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

/** The series names in `expr`, sorted, each once. Grafana's `$variables` are ignored. */
export function seriesNames(expr: string): string[] {
  if (expr.length > maxExpressionChars) throw new Error(`expression over ${maxExpressionChars} characters`);
  const blanked = expr
    .replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^{}]*\}/g, '{}')
    .replace(/\[[^[\]]*\]/g, '[]')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)/g, '$1 ()')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const m of blanked.matchAll(/(?<![\w.:])[A-Za-z_:][\w:]*(?=\s|[{[)]|$)/g)) {
    if (!keywords.has(m[0].toLowerCase())) names.add(m[0]);
  }
  return [...names].sort();
}

const histogramSuffixes = ['_bucket', '_sum', '_count'];
const withHistogramParts = (name: string): string[] => [name, ...histogramSuffixes.map((s) => name + s)];

/**
 * The Temporal TS SDK 1.24's worker metrics (sdk-core's telemetry/metrics.rs, with its default prefix `temporal_`,
 * no `_total` on counters and histograms in milliseconds): the ones the dashboard shows.
 */
export const temporalWorkerMetrics = {
  gauges: ['temporal_worker_task_slots_available', 'temporal_worker_task_slots_used', 'temporal_num_pollers'],
  counters: ['temporal_activity_execution_failed', 'temporal_workflow_task_execution_failed'],
  histograms: [
    'temporal_workflow_task_schedule_to_start_latency',
    'temporal_activity_schedule_to_start_latency',
    'temporal_activity_execution_latency',
    'temporal_workflow_task_execution_latency',
  ],
} as const;

/** Every series a query may name: liftoff's, vLLM's and the Temporal worker's, histograms with their parts. */
export function knownSeries(): Set<string> {
  const histograms = new Set<string>([
    deployMetrics.stepDuration,
    vllmMetrics.timeToFirstToken,
    vllmMetrics.interTokenLatency,
  ]);
  const names = [
    ...Object.values(clusterMetrics),
    ...Object.values(deployMetrics),
    ...Object.values(vllmMetrics),
  ];
  return new Set([
    ...names.flatMap((n) => (histograms.has(n) ? withHistogramParts(n) : [n])),
    ...temporalWorkerMetrics.gauges,
    ...temporalWorkerMetrics.counters,
    ...temporalWorkerMetrics.histograms.flatMap(withHistogramParts),
  ]);
}
