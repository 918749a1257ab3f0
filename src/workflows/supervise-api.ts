// How the rest of liftoff talks to a supervising workflow: its input, the query that answers with its state, and
// the signal that ends it (a new deploy taking over, `liftoff supervise stop`). No workflow code here, so the
// deploy, the CLI and the supervisor all import it without importing each other.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { DeployTriggerName } from '../shared/failures.js';
import type { DeployResult } from './steps.js';
import type { LaunchInfo, SuperviseState } from './supervise-state.js';

/** The workflow type names, for starting one workflow from another without importing it. */
export const superviseWorkflowType = 'supervise';
export const deployWorkflowType = 'deploy';

/** The deploy workflow's signature, for starting it as a child by its type name. */
export type DeployWorkflow = (
  input: unknown,
  options?: { trigger?: DeployTriggerName },
) => Promise<DeployResult>;

export interface SuperviseInput {
  /** The deploy spec the cluster was launched with (secrets only as references): a relaunch deploys it again. */
  spec: unknown;
  launch: LaunchInfo;
  /** The state carried over by continue-as-new. */
  carry?: SuperviseState;
}

export const supervisionQuery = defineQuery<SuperviseState>('supervision');

export const stopSupervisionSignal = defineSignal<[{ reason: string }]>('stopSupervision');

export type { LaunchInfo, SuperviseState };
