// Simulated `ray` CLI: `start` (head GCS or worker node over real TCP), `status`, `stop`.
import type { ToolMain } from '../tool.js';
import { UsageError } from './args.js';
import { err, out } from './cli.js';
import { start } from './start.js';
import { status } from './status.js';
import { stop } from './stop.js';

const RAY_VERSION = '2.49.1';

export const main: ToolMain = async (args) => {
  const [command, ...rest] = args;
  try {
    switch (command) {
      case 'start':
        return await start(rest, args);
      case 'status':
        return await status(rest);
      case 'stop':
        return await stop(rest);
      case '--version':
      case 'version':
        out(`ray, version ${RAY_VERSION}`);
        return 0;
      default:
        err(
          `Usage: ray [OPTIONS] COMMAND [ARGS]...\nTry 'ray --help' for help.\n\nError: No such command '${command ?? ''}'.`,
        );
        return 2;
    }
  } catch (e) {
    if (e instanceof UsageError) {
      err(
        `Usage: ray ${command ?? ''} [OPTIONS]\nTry 'ray ${command ?? ''} --help' for help.\n\nError: ${e.message}`,
      );
      return 2;
    }
    throw e;
  }
};
