// Runs the whole suite with node's built-in test runner (through tsx), several files at a time: each file that
// brings up a simulated cluster has its own netIndex (namespaces, subnets) and state folder, and its own ports.
// LIFTOFF_TEST_CONCURRENCY (default 3) is how many cluster files run at once; 1 runs every file alone.
//
// run() rather than `node --test`: the command line sorts its files by name, and the order matters here (below).
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { type Readable } from 'node:stream';
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
// The files that take minutes start first (longest first), so the batch does not end on one of them running
// alone while the other slot is idle. The order of the last CI run's durations.
const slowest = [
  'test/e2e/durability.test.ts',
  'test/e2e/rollback-durability.test.ts',
  'test/e2e/supervise-faults.test.ts',
  'test/e2e/supervise.test.ts',
  'test/e2e/rollback.test.ts',
  'test/e2e/network-faults.test.ts',
  'test/e2e/docker-faults.test.ts',
  'test/e2e/plan-init.test.ts',
  'test/browser/ui-trigger.test.ts',
  'test/e2e/multiproc.test.ts',
  'test/e2e/multiproc-durability.test.ts',
  'test/e2e/lifecycle.test.ts',
  'test/e2e/companions-supervise.test.ts',
  'test/e2e/companions.test.ts',
  'test/e2e/failures.test.ts',
  'test/e2e/load-faults.test.ts',
  'test/e2e/schedule.test.ts',
  'test/e2e/history-postmortem.test.ts',
  'test/e2e/one-deploy.test.ts',
  'test/e2e/rollback-history.test.ts',
  'test/e2e/package.test.ts',
];
const rank = (f: string): number => {
  const i = slowest.indexOf(relative('.', f).split(sep).join('/'));
  return i < 0 ? slowest.length : i;
};
// Three groups, one after another. The short CPU-bound files (unit, sim, replay) first, two at a time. Then the
// files that bring up simulated clusters or browsers (test/e2e, test/browser), three at a time: most of their time
// is spent waiting on simulated loads and timeouts. Then test/real, one file at a time and beside nothing else: a
// real vLLM load takes most of both cores, and its figures are only worth reading on an otherwise idle machine.
const group = (f: string): 'cluster' | 'real' | 'light' => {
  const top = relative('.', f).split(sep).slice(0, 2).join('/');
  if (top === 'test/real') return 'real';
  return top === 'test/e2e' || top === 'test/browser' ? 'cluster' : 'light';
};
const inGroup = (g: ReturnType<typeof group>) =>
  files.filter((f) => group(f) === g).sort((a, b) => rank(a) - rank(b));
const concurrency = Number(process.env.LIFTOFF_TEST_CONCURRENCY ?? '3');

// Every Node process the tests start (test files, CLI runs, workers) would parse this machine's whole CA bundle
// at start-up (about 40 ms of CPU each, on a suite bound by CPU); nothing in the tests speaks TLS to the outside.
delete process.env.NODE_EXTRA_CA_CERTS;

let failed = false;

/** Runs `batch`, printing node's spec report; resolves once every file has ended. */
async function runBatch(batch: string[], filesAtOnce: number): Promise<void> {
  if (batch.length === 0) return;
  const stream = run({
    files: batch.map((f) => resolve(f)),
    concurrency: filesAtOnce,
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

await runBatch(inGroup('light'), Math.min(concurrency, 2));
await runBatch(inGroup('cluster'), concurrency);
await runBatch(inGroup('real'), 1);
process.exit(failed ? 1 : 0);
