#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npm link` / `npx liftoff` work without a build step.
import { setFlagsFromString } from 'node:v8';
import { register } from 'tsx/esm/api';

// A worker lives for days and mostly waits on Temporal: a small young generation keeps it near 200 MB instead of
// 250+, for a little more GC work (the footprint figure of `npm run bench`). Set before anything is loaded.
if (process.argv[2] === 'worker') setFlagsFromString('--max-semi-space-size=2');

register();
await import('../src/client.ts');
