// Runs the liftoff CLI as a separate process, as a user would, and keeps its exit code and output.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Wall time of the whole process. */
  ms: number;
}

export async function runLiftoff(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 120_000,
): Promise<CliRun> {
  const started = Date.now();
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, ['bin/liftoff.js', ...args], {
      env,
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr, ms: Date.now() - started };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '', ms: Date.now() - started };
  }
}
