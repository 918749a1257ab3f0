import { resolve } from 'node:path';

/** Where liftoff keeps local state (the embedded Temporal's database and logs). */
export function stateDir(): string {
  return resolve(process.env.LIFTOFF_STATE_DIR ?? '.liftoff');
}
