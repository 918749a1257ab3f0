// One bundle serves every simulated tool; the shims in the host's bin/ pass the tool name first.
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
  if (!load) {
    process.stderr.write(`simtool: unknown tool ${name ?? '(none)'}\n`);
    process.exit(127);
  }
  const { main } = await load();
  const code = await main(args);
  process.exitCode = code;
}

void run().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
