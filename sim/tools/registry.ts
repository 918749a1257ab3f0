// Every simulated tool by name, and the host's command log of their calls: shared by the node bundle, which runs
// one call as its own process (main.ts), and the host's tool server, which runs calls in-process (server.ts).
import { appendFileSync } from 'node:fs';
import { paths } from '../host-state.js';
import type { ToolName } from './names.js';
import type { ToolMain } from './tool.js';

export const tools: Record<ToolName, () => Promise<{ main: ToolMain }>> = {
  systemctl: () => import('./systemctl.js'),
  docker: () => import('./docker/index.js'),
  'nvidia-smi': () => import('./nvidia-smi.js'),
  ray: () => import('./ray/index.js'),
  vllm: () => import('./vllm/index.js'),
  'gpu-hog': () => import('./gpu-hog.js'),
  'container-shim': () => import('./container-shim.js'),
};

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(tools, name);
}

/**
 * The host's command log: what tests read to prove what ran, e.g. that a refused preflight changed nothing.
 * The container-shim and gpu-hog are started by other tools, not by a session, so they are left out.
 * `hostDir` is the caller's LIFTOFF_SIM_HOST_DIR.
 */
export function recordCommand(hostDir: string | undefined, tool: string, args: readonly string[]): void {
  if (!hostDir || tool === 'container-shim' || tool === 'gpu-hog') return;
  try {
    appendFileSync(
      paths.commands(hostDir),
      `${JSON.stringify({ time: Date.now(), argv: [tool, ...args] })}\n`,
    );
  } catch {
    // A host folder being removed (cluster down) must not fail the tool.
  }
}
