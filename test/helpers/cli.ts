// Runs the liftoff CLI as a separate process, as a user would, and keeps its exit code and output. Every test
// that spawns the CLI runs the same bin/liftoff.js users run, so the compiled dist/ (a third of tsx's start cost),
// built here from the current src/ first: a test never runs an old build, nor falls back to tsx.
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));

/** bin/liftoff.js, by absolute path so any cwd works. */
export const liftoffBin = fileURLToPath(new URL('../../bin/liftoff.js', import.meta.url));

let built = false;

/** Compiles src/ into dist/ unless dist/ is current (scripts/build.sh --if-stale); once per test process. */
export function ensureBuilt(): void {
  if (built) return;
  const r = spawnSync('bash', ['scripts/build.sh', '--if-stale'], { cwd: repo, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm run build failed (exit ${r.status}): ${r.stderr}`);
  built = true;
}

/** node's arguments to run `liftoff ARGS`, with dist/ current. */
export function liftoffArgv(args: readonly string[]): string[] {
  ensureBuilt();
  return [liftoffBin, ...args];
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Wall time of the whole process. */
  ms: number;
}

/**
 * Runs `file` with `args` to its end and keeps its exit code (-1 when it was killed or never started), its output
 * and its wall time: a failing run is a result to assert on, not a throw.
 */
export async function runProcess(
  file: string,
  args: readonly string[],
  opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number },
): Promise<CliRun> {
  const started = Date.now();
  try {
    const { stdout, stderr } = await execFileAsync(file, args, {
      env: opts.env,
      cwd: opts.cwd,
      timeout: opts.timeoutMs ?? 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr, ms: Date.now() - started };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    const code = typeof e.code === 'number' ? e.code : -1;
    return { code, stdout: e.stdout ?? '', stderr: e.stderr ?? '', ms: Date.now() - started };
  }
}

export function runLiftoff(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<CliRun> {
  return runProcess(process.execPath, liftoffArgv(args), { env, timeoutMs });
}
