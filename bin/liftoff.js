#!/usr/bin/env node
// The `liftoff` command: runs the compiled CLI in dist/ (`npm run build`, scripts/build.sh). In a checkout whose
// dist/ is missing or was built from other sources than src/ holds now, it runs src/ through tsx instead, and says
// so: never a stale build, and `npx liftoff` works before the first build.
import { setFlagsFromString } from 'node:v8';
import { fileURLToPath } from 'node:url';
import { builtHash, sourceHash } from './source-hash.js';

// A worker lives for days and mostly waits on Temporal: a small young generation and V8's size-over-speed mode
// take 15 MB off its peak at 32 hosts (224 → 209 MiB in `npm run bench`), for a little more GC work; glibc's
// MALLOC_ARENA_MAX=2 (which the Dockerfile and scripts/lib/worker-process.ts set) takes 30 more. Set before
// anything is loaded.
if (process.argv[2] === 'worker') {
  setFlagsFromString('--max-semi-space-size=1');
  setFlagsFromString('--optimize-for-size');
}

const root = fileURLToPath(new URL('..', import.meta.url));
const built = builtHash(root);
if (built !== undefined && built === sourceHash(root)) {
  await import('../dist/client.js');
} else {
  const why = built === undefined ? 'there is no dist/' : 'dist/ was built from older sources';
  /** @type {typeof import('tsx/esm/api') | undefined} */
  let tsx;
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    console.error(`liftoff: ${why}, and tsx is not installed to run src/: run \`npm run build\` in ${root}`);
    // Not one of the CLI's own exit codes (0-3): no command ran, the installation is broken (sysexits' EX_SOFTWARE).
    process.exit(70);
  }
  console.error(`liftoff: ${why}; running src/ through tsx (slower). \`npm run build\` compiles it.`);
  tsx.register();
  await import('../src/client.ts');
}
