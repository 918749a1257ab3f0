// Run by replay-metrics.test.ts as a process of its own: the Runtime exporting Prometheus metrics as
// `liftoff worker --metrics` installs it, every recorded history replayed, then what /metrics serves. Prints one
// JSON line: the series names served and how many histories replayed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Runtime, Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { installMetricsRuntime, parseMetricsAddress } from '../../src/temporal/metrics.js';
import { workflowBundle } from '../../src/temporal/workflow-bundle.js';
import { projectRoot } from '../../src/temporal/cli-path.js';

const historiesDir = join(projectRoot, 'test', 'histories');
const address = parseMetricsAddress(process.argv[2] ?? '');
await installMetricsRuntime(address);
const manifest = JSON.parse(readFileSync(join(historiesDir, 'manifest.json'), 'utf8')) as {
  histories: { file: string; workflowId: string }[];
};
const bundle = await workflowBundle();
let replayed = 0;
for (const entry of manifest.histories) {
  const history = historyFromJSON(JSON.parse(readFileSync(join(historiesDir, entry.file), 'utf8')));
  await Worker.runReplayHistory(
    { workflowBundle: bundle, replayName: entry.file },
    history,
    entry.workflowId,
  );
  replayed++;
}
// The control: a series recorded outside any workflow reaches the same endpoint, so its absence elsewhere means
// nothing was recorded, not that nothing could be.
Runtime.instance().metricMeter.createGauge('liftoff_replay_control').set(1);
await new Promise((r) => setTimeout(r, 500));
const text = await (await fetch(address.url)).text();
const names = [
  ...new Set(text.split('\n').flatMap((l) => /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(l)?.[1] ?? [])),
];
process.stdout.write(`${JSON.stringify({ replayed, names })}\n`);
process.exit(0);
