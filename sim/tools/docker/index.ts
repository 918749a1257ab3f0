// Simulated docker CLI. A container is the process group of a container-shim (see ../container-shim.ts) plus
// every process tagged with the container id; state lives in the host's containers/ folder. Output and
// error messages follow the real CLI (Debian's docker.io 20.10), because product code parses them.
// One module per subcommand, as docker's own CLI is split; this file maps every spelling to its handler.
import type { ToolMain } from '../tool.js';
import { dockerVersion, err, out } from './cli.js';
import { cmdExec } from './exec.js';
import { cmdImages, cmdInfo, cmdVersion } from './info.js';
import { cmdInspect } from './inspect.js';
import { cmdKill, cmdRm, cmdStop, cmdWait } from './lifecycle.js';
import { cmdLogs } from './logs.js';
import { cmdPs } from './ps.js';
import { cmdRun } from './run.js';

type Handler = (args: string[]) => number | Promise<number>;

/** Every spelling docker accepts, top-level (`ps`) or under a management command (`container ls`). */
const spellings: [string[], Handler][] = [
  [['run', 'container run'], cmdRun],
  [['exec', 'container exec'], cmdExec],
  [['ps', 'container ps', 'container ls', 'container list'], cmdPs],
  [['rm', 'container rm', 'container remove'], cmdRm],
  [['stop', 'container stop'], cmdStop],
  [['kill', 'container kill'], cmdKill],
  [['wait', 'container wait'], cmdWait],
  [['logs', 'container logs'], cmdLogs],
  [['inspect'], (args) => cmdInspect(args)],
  [['container inspect'], (args) => cmdInspect(args, 'container')],
  [['image inspect'], (args) => cmdInspect(args, 'image')],
  [['images'], (args) => cmdImages(args, 'images')],
  [['image ls', 'image list'], (args) => cmdImages(args, 'image ls')],
  [['version'], cmdVersion],
  [['info'], cmdInfo],
];

const handlers = new Map(spellings.flatMap(([names, handler]) => names.map((n) => [n, handler] as const)));

const managementCommands = new Set(['container', 'image']);

export const main: ToolMain = async (args) => {
  const [cmd, ...rest] = args;
  if (cmd === undefined || cmd === '--help') {
    out('Usage:  docker [OPTIONS] COMMAND\n\nA self-sufficient runtime for containers\n');
    return cmd === undefined ? 1 : 0;
  }
  if (cmd === '--version' || cmd === '-v') {
    out(`Docker version ${dockerVersion}, build 297e128\n`);
    return 0;
  }
  if (managementCommands.has(cmd)) {
    const [sub, ...subArgs] = rest;
    const handler = handlers.get(`${cmd} ${sub ?? ''}`);
    if (handler) return handler(subArgs);
    err(`docker: '${sub ?? ''}' is not a docker ${cmd} command.\nSee 'docker ${cmd} --help'`);
    return 1;
  }
  const handler = cmd.includes(' ') ? undefined : handlers.get(cmd);
  if (handler) return handler(rest);
  err(`docker: '${cmd}' is not a docker command.\nSee 'docker --help'`);
  return 1;
};
