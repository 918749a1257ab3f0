#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npm link` / `npx liftoff` work without a build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/client.ts');
