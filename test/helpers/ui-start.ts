// Starting a deploy as the Temporal UI does (a workflow start with the spec as its argument, no CLI validation in
// front) and expecting the workflow's own validation to refuse it.
import assert from 'node:assert/strict';
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { deploy } from '../../src/workflows/index.js';

/** The prefix of every InvalidSpec failure the deploy workflow's validation raises; the issues follow it. */
export const invalidSpecPrefix = 'validate failed: invalid spec:\n';

/**
 * Starts `deploy` with `spec` under `workflowId` and returns its InvalidSpec failure (non-retryable, the message
 * starting with invalidSpecPrefix), with the handle for reading its history. `label` names the case in assertions.
 */
export async function startAsUiExpectInvalidSpec(
  client: Client,
  opts: { taskQueue: string; workflowId: string; spec: Parameters<typeof deploy>[0]; label: string },
): Promise<{ failure: ApplicationFailure; handle: WorkflowHandle<typeof deploy> }> {
  const handle = await client.workflow.start(deploy, {
    taskQueue: opts.taskQueue,
    workflowId: opts.workflowId,
    args: [opts.spec],
  });
  const err = await handle.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowFailedError, `${opts.label}: the workflow failed`);
  const failure = err.cause;
  assert.ok(failure instanceof ApplicationFailure, `${opts.label}: ${String(failure)}`);
  assert.equal(failure.type, 'InvalidSpec', opts.label);
  assert.equal(failure.nonRetryable, true, opts.label);
  assert.ok(failure.message.startsWith(invalidSpecPrefix), `${opts.label}: ${failure.message}`);
  return { failure, handle };
}
