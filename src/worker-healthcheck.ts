// The worker image's HEALTHCHECK: healthy when the Temporal server itself reports that this host's `liftoff worker`
// polled the task queue recently. A live process is not enough: a worker that lost its server, its namespace or its
// TLS credentials keeps running and retrying, and only the server's view of its pollers shows that.
// Reads the same connection settings as the worker (TEMPORAL_* variables, temporal.toml profiles).
// Exit 0 healthy, 1 not (Docker's convention), with one line saying why.
import { hostname } from 'node:os';
import proto from '@temporalio/proto';
import { optionalTsToMs } from '@temporalio/common/lib/time.js';
import { connectClient, loadTemporalSettings } from './temporal/connection.js';
import { TASK_QUEUE } from './shared/constants.js';

// A polling worker renews its long poll at least once a minute; twice that tolerates one slow renewal.
const freshWithinMs = 120_000;

const taskQueue = process.argv[2] ?? TASK_QUEUE;
// The SDK's default worker identity is `<pid>@<hostname>`; in a container the hostname is the container's own.
const identitySuffix = `@${hostname()}`;

async function main(): Promise<number> {
  const settings = loadTemporalSettings();
  const client = await connectClient(settings);
  try {
    const { pollers } = await client.workflowService.describeTaskQueue({
      namespace: settings.namespace,
      taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    const now = Date.now();
    const ours = (pollers ?? []).filter((p) => p.identity?.endsWith(identitySuffix));
    const fresh = ours.find((p) => now - (optionalTsToMs(p.lastAccessTime) ?? 0) <= freshWithinMs);
    const where = `task queue ${taskQueue} on ${settings.address} (namespace ${settings.namespace})`;
    if (fresh) {
      console.log(`healthy: ${fresh.identity ?? ''} polls ${where}`);
      return 0;
    }
    console.log(
      ours.length > 0
        ? `unhealthy: no poll of ${where} by a worker on this host for over ${freshWithinMs / 1000} s`
        : `unhealthy: no worker on this host (${identitySuffix}) polls ${where}`,
    );
    return 1;
  } finally {
    await client.connection.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.log(`unhealthy: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
