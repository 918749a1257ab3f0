// One bundle serves every simulated tool; the shims in the host's bin/ pass the tool name first.
import { appendFileSync } from 'node:fs';
import { paths } from '../host-state.js';
import type { ToolName } from './names.js';
import type { ToolMain } from './tool.js';

const tools: Record<ToolName, () => Promise<{ main: ToolMain }>> = {
  systemctl: () => import('./systemctl.js'),
  docker: () => import('./docker/index.js'),
  'nvidia-smi': () => import('./nvidia-smi.js'),
  ray: () => import('./ray/index.js'),
  vllm: () => import('./vllm/index.js'),
  'gpu-hog': () => import('./gpu-hog.js'),
  'container-shim': () => import('./container-shim.js'),
};

async function run(): Promise<void> {
  const [name, ...args] = process.argv.slice(2);
  const load = name && Object.hasOwn(tools, name) ? tools[name as ToolName] : undefined;
  if (!load || name === undefined) {
    process.stderr.write(`simtool: unknown tool ${name ?? '(none)'}\n`);
    process.exit(127);
  }
  recordCommand(name, args);
  const { main } = await load();
  const code = await main(args);
  process.exitCode = code;
}

/**
 * The host's command log: what tests read to prove what ran, e.g. that a refused preflight changed nothing.
 * The container-shim and gpu-hog are started by other tools, not by a session, so they are left out.
 */
function recordCommand(tool: string, args: string[]): void {
  const dir = process.env.LIFTOFF_SIM_HOST_DIR;
  if (!dir || tool === 'container-shim' || tool === 'gpu-hog') return;
  try {
    appendFileSync(paths.commands(dir), `${JSON.stringify({ time: Date.now(), argv: [tool, ...args] })}\n`);
  } catch {
    // A host folder being removed (cluster down) must not fail the tool.
  }
}

void run().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
