// The worker's policy where activities run. createLiftoffWorker loads it once and binds it to every activity it
// registers (bindWorkerPolicy), so each activity sees its own worker's policy even when one process runs two
// workers. Code that runs an activity outside a worker (a test calling it directly) gets the policy of this
// process's environment, so no path through the activities goes unchecked.
import { AsyncLocalStorage } from 'node:async_hooks';
import { activityFailure } from './activity-failure.js';
import type { DeploySpec } from '../config/schema.js';
import { loadWorkerPolicy, workerPolicyEnv, type WorkerPolicy } from '../config/worker-policy.js';
import { policyRefusals, refusalText, sshAuthRefusals } from '../config/policy-check.js';
import type { SshAuthRef } from '../config/targets.js';
import { FailureType } from '../shared/failures.js';

const bound = new AsyncLocalStorage<WorkerPolicy>();
let fromEnvironment: { file: string | undefined; policy: WorkerPolicy } | undefined;

/** `fn`, running under `policy` wherever it is called from. */
export function bindWorkerPolicy<A extends unknown[], R>(
  policy: WorkerPolicy,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return (...args) => bound.run(policy, () => fn(...args));
}

/** The policy of the worker running this activity; outside a worker, the one this process's environment gives. */
export function activeWorkerPolicy(): WorkerPolicy {
  const policy = bound.getStore();
  if (policy) return policy;
  const file = process.env[workerPolicyEnv];
  if (fromEnvironment === undefined || fromEnvironment.file !== file) {
    fromEnvironment = { file, policy: loadWorkerPolicy(process.env) };
  }
  return fromEnvironment.policy;
}

const refused = (text: string) => activityFailure(FailureType.invalidSpec, text, true);

/** Throws the refusal, before any connection, when the policy does not allow these SSH settings. */
export function assertSshAuthAllowed(auth: SshAuthRef): void {
  const policy = activeWorkerPolicy();
  const refusals = sshAuthRefusals(auth, policy);
  if (refusals.length > 0) throw refused(refusalText(refusals, policy));
}

/**
 * The validate step's check on the worker: the spec's known_hosts, key, agent and secret references against
 * this worker's policy, before any SSH. A refusal names each field and the worker setting that would allow it;
 * it holds paths and variable names, never a value. Passed, it names the policy (a file, or the defaults).
 */
export function checkWorkerPolicy(input: { spec: DeploySpec }): Promise<{ policy: string }> {
  const policy = activeWorkerPolicy();
  const refusals = policyRefusals(input.spec, policy);
  if (refusals.length > 0) return Promise.reject(refused(refusalText(refusals, policy)));
  return Promise.resolve({ policy: policy.source });
}
