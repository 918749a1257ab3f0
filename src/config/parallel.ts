// The parallel sizes a launch asks vLLM for. Pure: the schema's checks and the activities both read it.

/** `--pipeline-parallel-size N` / `-pp N` (or `=N`) in the serve args; 1 when absent or unreadable. */
export function pipelineParallelSize(args: readonly string[]): number {
  let size = 1;
  args.forEach((arg, i) => {
    const m = /^(?:--pipeline-parallel-size|-pp)(?:=(.*))?$/.exec(arg);
    if (!m) return;
    const n = Number(m[1] ?? args[i + 1]);
    if (Number.isInteger(n) && n > 0) size = n;
  });
  return size;
}
