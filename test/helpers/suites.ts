// The end-to-end suites that bring up their own simulated cluster, in one table: each suite's network index (its
// namespaces' and addresses' block, sim/cluster-up.ts) and its state directory. Two suites on one index tear
// down each other's namespaces; test/unit/suites.test.ts refuses a table where two share one.
import { useE2eCluster, type E2eClusterHandle, type E2eClusterOptions } from './e2e-cluster.js';

export const e2eSuites = {
  deploy: { netIndex: 5 },
  failures: { netIndex: 7 },
  'supervise-defaults': { netIndex: 33 },
  agreement: { netIndex: 40 },
  'plan-init': { netIndex: 41 },
  multiproc: { netIndex: 43 },
  'ssh-handshakes': { netIndex: 50 },
  'docker-deploy': { netIndex: 61 },
  'docker-nonroot': { netIndex: 71 },
  'docker-faults': { netIndex: 73 },
  lifecycle: { netIndex: 77 },
  rollback: { netIndex: 81 },
  companions: { netIndex: 87 },
  'companions-preflight': { netIndex: 93 },
  'companions-down': { netIndex: 95 },
  'companions-supervise': { netIndex: 91 },
  metrics: { netIndex: 97 },
} as const satisfies Record<string, { netIndex: number }>;

export type E2eSuite = keyof typeof e2eSuites;

/** Where the suite's simulated cluster keeps its hosts' directories and state. */
export function suiteStateDir(suite: E2eSuite): string {
  return `/tmp/liftoff-test-${suite}`;
}

/** useE2eCluster on the suite's own network index and state directory. */
export function useSuiteCluster(
  suite: E2eSuite,
  opts: Omit<E2eClusterOptions, 'stateDir' | 'netIndex'> = {},
): E2eClusterHandle {
  return useE2eCluster({ ...opts, stateDir: suiteStateDir(suite), netIndex: e2eSuites[suite].netIndex });
}
