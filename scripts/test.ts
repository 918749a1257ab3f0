// Runs the whole suite with node's built-in test runner (through tsx), two files at a time: each file that
// brings up a simulated cluster has its own netIndex (namespaces, subnets) and state folder, and its own ports,
// and most of a deploy test is waiting on simulated loads. LIFTOFF_TEST_CONCURRENCY=1 runs them one by one.
// The files under test/real run after the rest, one at a time: a real vLLM load takes both cores.
//
// run() rather than `node --test`: the command line sorts its files by name, and the order matters here (below).
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

function findTests(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return findTests(path);
      return name.endsWith('.test.ts') ? [path] : [];
    });
}

const roots = process.argv.slice(2);
const files = (roots.length ? roots : ['test']).flatMap((root) =>
  statSync(root).isDirectory() ? findTests(root) : [root],
);
const isReal = (f: string): boolean => relative('.', f).split(sep).slice(0, 2).join('/') === 'test/real';
// The files that take minutes start first (longest first), so the batch does not end on one of them running
// alone while the other slot is idle. The order of the last CI run's durations.
const slowest = [
  'test/e2e/durability.test.ts',
  'test/e2e/supervise-faults.test.ts',
  'test/e2e/supervise.test.ts',
  'test/e2e/network-faults.test.ts',
  'test/browser/ui-trigger.test.ts',
  'test/e2e/multiproc.test.ts',
  'test/e2e/multiproc-durability.test.ts',
  'test/e2e/history-postmortem.test.ts',
  'test/e2e/plan-init.test.ts',
  'test/e2e/one-deploy-and-cancel.test.ts',
  'test/e2e/failures.test.ts',
  'test/e2e/package.test.ts',
  'test/e2e/load-faults.test.ts',
  'test/e2e/schedule.test.ts',
];
const rank = (f: string): number => {
  const i = slowest.indexOf(relative('.', f).split(sep).join('/'));
  return i < 0 ? slowest.length : i;
};
const batches: [string[], number][] = [
  [
    files.filter((f) => !isReal(f)).sort((a, b) => rank(a) - rank(b)),
    Number(process.env.LIFTOFF_TEST_CONCURRENCY ?? '2'),
  ],
  [files.filter(isReal), 1],
];

// Every Node process the tests start (test files, CLI runs, workers) would parse this machine's whole CA bundle
// at start-up (about 40 ms of CPU each, on a suite bound by CPU); nothing in the tests speaks TLS to the outside.
delete process.env.NODE_EXTRA_CA_CERTS;

let failed = false;
for (const [batch, concurrency] of batches) {
  if (batch.length === 0) continue;
  const stream = run({
    files: batch.map((f) => resolve(f)),
    concurrency,
    // A file ends once its tests and hooks are done, even if something it started still holds its event loop;
    // a teardown that hangs fails its hook at the hook's timeout instead of holding the suite for ever.
    forceExit: true,
  });
  stream.on('test:fail', (event: { todo?: string | boolean }) => {
    if (!event.todo) failed = true;
  });
  // compose() is typed `any`; it returns the reporter's text stream.
  const report = stream.compose(new spec()) as Readable;
  report.pipe(process.stdout, { end: false });
  await finished(report);
}
process.exit(failed ? 1 : 0);
