// Reading a flag's value out of a `vllm serve` argv as vLLM's own parser would: `--port 8001` and `--port=8001`,
// `--gpu_memory_utilization` for `--gpu-memory-utilization` (vLLM accepts either spelling), and the last one wins.
// Pure: the schema, preflight and `liftoff init` read companions' and serve.args' flags through it.
import { flagName } from '../shared/secrets.js';

/** The value `argv` gives `--FLAG` (FLAG spelled with dashes), or undefined when it gives none. */
export function flagValue(argv: readonly string[], flag: string): string | undefined {
  let value: string | undefined;
  argv.forEach((arg, i) => {
    if (!arg.startsWith('--') || flagName(arg) !== flag) return;
    const eq = arg.indexOf('=');
    value = eq >= 0 ? arg.slice(eq + 1) : argv[i + 1];
  });
  return value;
}
