// Runs the whole suite with node's built-in test runner (through tsx), two files at a time: each file that
// brings up a simulated cluster has its own netIndex (namespaces, subnets) and state folder, and its own ports,
// and most of a deploy test is waiting on simulated loads. LIFTOFF_TEST_CONCURRENCY=1 runs them one by one.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

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
const reporter = 'spec';
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${process.env.LIFTOFF_TEST_CONCURRENCY ?? '2'}`,
    `--test-reporter=${reporter}`,
    ...files.map((f) => relative('.', f)),
  ],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
