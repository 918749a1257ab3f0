// Bundles sim/tools into one fast-starting .mjs and writes a shim per tool name into binDir.
// Hosts put binDir first on PATH, so `docker`, `ray`, `vllm`… resolve to the simulation.
import { build } from 'esbuild';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toolNames } from './tools/names.js';
import { writeShellShims } from './shell-shims.js';

export async function buildSimTools(binDir: string): Promise<string> {
  mkdirSync(binDir, { recursive: true });
  const bundle = join(binDir, 'simtool.mjs');
  await build({
    entryPoints: [join(dirname(fileURLToPath(import.meta.url)), 'tools', 'main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: bundle,
    logLevel: 'warning',
    splitting: false,
  });
  for (const name of toolNames) {
    const shim = join(binDir, name);
    writeFileSync(shim, `#!/bin/sh\nexec ${process.execPath} ${bundle} ${name} "$@"\n`);
    chmodSync(shim, 0o755);
  }
  writeShellShims(binDir);
  return binDir;
}
