// Bundles sim/tools into one fast-starting .mjs and puts each tool name into binDir. Hosts put binDir first on
// PATH, so `docker`, `ray`, `vllm`… resolve to the simulation. With a C compiler (and the tool server on, see
// sim/tool-server.ts), each name is a link to the thin client of the host's tool server (tools/client.c), which
// runs a read-only call in the server for about 2 ms of CPU and execs the bundle for every other call;
// without one, or with LIFTOFF_SIM_TOOL_SERVER=0, each name is a shell shim that execs the bundle.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { toolNames } from './tools/names.js';
import { writeShellShims } from './shell-shims.js';
import { simToolFiles, toolServerEnabled } from './tool-server.js';

const toolsDir = join(dirname(fileURLToPath(import.meta.url)), 'tools');

function bundle(entry: string, outfile: string): Promise<unknown> {
  return build({
    entryPoints: [join(toolsDir, entry)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    splitting: false,
  });
}

/**
 * Compiles the thin client with the node binary and bundle it falls back to built in; false (and nothing written)
 * when there is no compiler or it fails. Static where the C library allows it: no dynamic loader at each call,
 * and the same binary runs in a real-Docker host's containers (which mount binDir).
 */
function buildClient(out: string, bundlePath: string): boolean {
  const literal = (s: string): string | undefined => (/^[^"\\\n]+$/.test(s) ? `"${s}"` : undefined);
  const node = literal(process.execPath);
  const bundled = literal(bundlePath);
  if (!node || !bundled) return false;
  const compilers = process.env.CC ? [process.env.CC] : ['cc', 'gcc'];
  const args = ['-O2', '-std=c11', '-D_GNU_SOURCE', `-DSIMTOOL_NODE=${node}`, `-DSIMTOOL_BUNDLE=${bundled}`];
  for (const compiler of compilers) {
    for (const linking of [['-static'], []]) {
      const r = spawnSync(compiler, [...args, ...linking, '-o', out, join(toolsDir, 'client.c')], {
        stdio: 'ignore',
        timeout: 60_000,
      });
      if (r.status === 0) return true;
    }
  }
  rmSync(out, { force: true });
  return false;
}

export async function buildSimTools(binDir: string): Promise<string> {
  mkdirSync(binDir, { recursive: true });
  const bundlePath = join(binDir, simToolFiles.bundle);
  const useServer = toolServerEnabled();
  await Promise.all([
    bundle('main.ts', bundlePath),
    useServer ? bundle('server.ts', join(binDir, simToolFiles.serverBundle)) : undefined,
  ]);
  const client = join(binDir, simToolFiles.client);
  const linked = useServer && buildClient(client, bundlePath);
  for (const name of toolNames) {
    const tool = join(binDir, name);
    rmSync(tool, { force: true });
    if (linked) {
      symlinkSync(simToolFiles.client, tool);
    } else {
      writeFileSync(tool, `#!/bin/sh\nexec ${process.execPath} ${bundlePath} ${name} "$@"\n`);
      chmodSync(tool, 0o755);
    }
  }
  writeShellShims(binDir);
  return binDir;
}
