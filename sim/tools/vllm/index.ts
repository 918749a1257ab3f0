// Simulated `vllm`: `vllm serve` (serve.ts) and `vllm --version`.
import { UsageError } from '../ray/args.js';
import type { ToolMain } from '../tool.js';
import { print, VLLM_VERSION } from './log.js';
import { UnrecognizedArguments, VllmServe } from './serve.js';

/** The top-level parser's usage, which argparse prints with the errors it raises itself. */
const vllmUsage = 'usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...';

/**
 * vLLM 0.32 dropped --task and says what to use instead when it refuses one (utils/argparse_utils.py,
 * FlexibleArgumentParser.error); the model kind now comes from --runner and --convert (pooling.ts).
 */
function taskHint(unrecognized: readonly string[]): string {
  if (!unrecognized.some((arg) => arg === '--task' || arg.startsWith('--task='))) return '';
  return '\n\nHint: --task is not a vllm serve option. For embedding, reranking, or reward models, use --runner pooling. To adapt a generative model for pooling, also use --convert embed, --convert classify, or --convert reward.';
}

export const main: ToolMain = async (args) => {
  const [command, ...rest] = args;
  if (command === '--version' || command === '-v' || command === 'version') {
    print(VLLM_VERSION);
    return 0;
  }
  if (command !== 'serve') {
    process.stderr.write(
      `${vllmUsage}\nvllm: error: argument subparser: invalid choice: '${command ?? ''}'\n`,
    );
    return 2;
  }
  try {
    return await new VllmServe(rest).run();
  } catch (e) {
    // Exit status 2, argparse's; nothing was started (the arguments are read before the launch is recorded).
    if (e instanceof UnrecognizedArguments) {
      process.stderr.write(`${vllmUsage}\nvllm: error: ${e.message}${taskHint(e.unrecognized)}\n`);
      return 2;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`usage: vllm serve [model_tag] [options]\nvllm serve: error: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
};
