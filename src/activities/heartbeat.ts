// Heartbeats let Temporal notice a dead worker within the activity's heartbeatTimeout instead of its
// startToCloseTimeout, and carry cancellation to a running activity. Every activity heartbeats while it
// waits on a host (ssh-context.ts); the last details an activity reported are repeated, not erased.
import { Context } from '@temporalio/activity';

/** How often an activity heartbeats while it waits on a host. */
export const keepAliveMs = 2_000;
const lastDetails = new WeakMap<Context, unknown>();

/** The running activity's context; undefined outside an activity (CLI, plain tests). */
export function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** Heartbeats when running as an activity; a no-op when called directly (CLI, plain tests). */
export function heartbeat(details?: unknown): void {
  const ctx = currentContext();
  // A local activity has no heartbeat: it lives and dies with the workflow task of the worker running it.
  if (!ctx || ctx.info.isLocal) return;
  if (details !== undefined) lastDetails.set(ctx, details);
  ctx.heartbeat(lastDetails.get(ctx));
}

/** Runs `fn`, heartbeating every keepAliveMs until it settles: an activity that waits on Temporal, not a host. */
export async function keepHeartbeating<T>(fn: () => Promise<T>): Promise<T> {
  if (!currentContext()) return fn();
  heartbeat();
  const timer = setInterval(() => heartbeat(), keepAliveMs);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}
