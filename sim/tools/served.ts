// Which calls the host's tool server runs in-process (server.ts): the short, read-only ones that make most of a
// deploy's tool calls (nvidia-smi, docker ps/inspect/logs, systemctl is-active/show, ray status). Everything else
// runs as its own process, as before: a call that lives on (vllm serve, ray start, docker run, logs -f, the
// container-shim, gpu-hog), registers its own pid, starts or signals processes (docker exec/stop/rm,
// systemctl start/stop), or whose process a test finds by its environment. Those need a process of their own, and
// a server that ran them would also stop being cheap for everyone else while they ran.
import { logsFollow } from './docker/logs.js';
import type { ToolName } from './names.js';
import { systemctlVerb } from './systemctl.js';

const dockerReadOnly = new Set([
  'ps',
  'inspect',
  'images',
  'version',
  'info',
  'container ps',
  'container ls',
  'container list',
  'container inspect',
  'image inspect',
  'image ls',
  'image list',
]);

/** Verbs that only read the units' state (daemon-reload and reset-failed change nothing in the simulation). */
const systemctlReadOnly = new Set([
  'is-active',
  'is-enabled',
  'status',
  'show',
  'list-units',
  'daemon-reload',
  'reset-failed',
]);

function dockerServed(args: readonly string[]): boolean {
  const [cmd, sub, ...rest] = args;
  if (cmd === undefined) return false;
  if (cmd === '--version' || cmd === '-v') return true;
  if (cmd === 'logs') return !logsFollow(args.slice(1));
  if (cmd === 'container' && sub === 'logs') return !logsFollow(rest);
  return dockerReadOnly.has(cmd) || (sub !== undefined && dockerReadOnly.has(`${cmd} ${sub}`));
}

/** Whether the tool server runs `tool args` in-process (true) or leaves it to the node bundle (false). */
export function servedInProcess(tool: ToolName, args: readonly string[]): boolean {
  switch (tool) {
    case 'nvidia-smi':
      // Every form answers at once: the simulation has no loop mode (-l) or dmon.
      return true;
    case 'docker':
      return dockerServed(args);
    case 'systemctl': {
      const verb = systemctlVerb([...args]);
      return verb !== undefined && systemctlReadOnly.has(verb);
    }
    case 'ray':
      return args[0] === 'status' || args[0] === '--version' || args[0] === 'version';
    case 'vllm':
    case 'gpu-hog':
    case 'container-shim':
      return false;
  }
}
