import { chmodSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Where liftoff keeps local state (the embedded Temporal's database and logs), created 0700 (an existing one
 * is tightened): another local user must not read the histories in it.
 */
export function stateDir(): string {
  const dir = resolve(process.env.LIFTOFF_STATE_DIR ?? '.liftoff');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}
