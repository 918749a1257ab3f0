// Maps errors to exit codes in one place, so every command reports failures the same way.
import { SpecError } from '../config/load.js';
import { PayloadKeyError, TemporalUnreachableError } from '../temporal/errors.js';
import { WorkerPolicyError } from '../config/worker-policy.js';
import { MetricsAddressError } from '../temporal/metrics.js';
import { ExitCode } from './exit-codes.js';
import { emitError, type OutputOptions } from './render.js';

export class UsageError extends Error {
  override name = 'UsageError';
}

export function exitCodeFor(err: unknown): number {
  if (
    err instanceof SpecError ||
    err instanceof UsageError ||
    err instanceof PayloadKeyError ||
    err instanceof WorkerPolicyError ||
    err instanceof MetricsAddressError
  )
    return ExitCode.invalidInput;
  if (err instanceof TemporalUnreachableError) return ExitCode.temporalUnreachable;
  return ExitCode.deployFailed;
}

export async function runCommand(opts: OutputOptions, body: () => Promise<number | void>): Promise<void> {
  try {
    const code = await body();
    process.exitCode = code ?? ExitCode.ok;
  } catch (err) {
    const code = exitCodeFor(err);
    emitError(opts, err, code);
    process.exitCode = code;
  }
}
