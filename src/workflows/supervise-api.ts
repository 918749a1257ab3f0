// How the rest of liftoff talks to a supervising workflow: its input, the query that answers with its state, and
// the signal that ends it (a new deploy taking over, `liftoff supervise stop`). No workflow code here, so the
// deploy, the CLI and the supervisor all import it without importing each other.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { DeployTriggerName } from '../shared/failures.js';
import type { RollbackRequest } from '../shared/rollback.js';
import type { DeployResult } from './steps.js';
import type { LaunchInfo, SuperviseState } from './supervise-state.js';

/** The workflow type names, for starting one workflow from another without importing it. */
export const superviseWorkflowType = 'supervise';
export const deployWorkflowType = 'deploy';

export interface DeployOptions {
  trigger?: DeployTriggerName;
  /** false: do not start the supervisor after a successful deploy (`liftoff deploy --no-supervise`). */
  supervise?: boolean;
  /** Hand the hosts over from the cluster that holds them (`liftoff deploy --take-over`; spec field takeOver). */
  takeOver?: boolean;
  /** A rollback's deploy (`liftoff rollback`, or automatic after a failed upgrade): what it restores and why. */
  rollback?: RollbackRequest;
  /** A schedule may deploy a spec recorded as a bad revision (`liftoff schedule create --allow-bad`). */
  allowBadRevision?: boolean;
}

/** The deploy workflow's signature, for starting it as a child by its type name. */
export type DeployWorkflow = (input: unknown, options?: DeployOptions) => Promise<DeployResult>;

/** After a deploy's revision serves: until untilMs, a loss is that revision's failure and rolls back. */
export interface BakeWindow {
  untilMs: number;
  /** The revision on trial. */
  revision: number;
  /** What a failure within the window deploys again, and its spec (pinned to its image ID). */
  rollback: RollbackRequest;
  spec: unknown;
}

export interface SuperviseInput {
  /** The deploy spec the cluster was launched with (secrets only as references): a relaunch deploys it again. */
  spec: unknown;
  launch: LaunchInfo;
  /** The state carried over by continue-as-new. */
  carry?: SuperviseState;
  /** Set by a deploy that has a known-good to fall back on (rollout.onFailure: rollback). */
  bake?: BakeWindow;
}

export const supervisionQuery = defineQuery<SuperviseState>('supervision');

export const stopSupervisionSignal = defineSignal<[{ reason: string }]>('stopSupervision');

export type { LaunchInfo, SuperviseState };
