// What activities that talk to Temporal itself share: the worker's client, and reading a workflow by its id.
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import type { Payload } from '@temporalio/common';

export function client(): Client {
  return Context.current().client;
}

/** The workflow's latest run, or undefined when none ever ran under the id. */
export async function describe(workflowId: string): Promise<WorkflowExecutionDescription | undefined> {
  try {
    return await client().workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

export async function isRunning(workflowId: string): Promise<boolean> {
  return (await describe(workflowId))?.status.name === 'RUNNING';
}

/** How long a handover or `down` waits for a cluster's supervisor and deploy to end (a cancelled deploy tears down). */
const endWaitMs = 5 * 60_000;

/** Waits until the workflow's latest run has closed, however it ends; a workflow that never ran is closed. */
export async function waitClosed(workflowId: string, withinMs = endWaitMs): Promise<void> {
  const deadline = Date.now() + withinMs;
  const handle = client().workflow.getHandle(workflowId);
  while (Date.now() < deadline) {
    if (!(await isRunning(workflowId))) return;
    await Promise.race([handle.result().catch(() => undefined), delay(2_000)]);
  }
  throw new Error(`${workflowId} still runs ${Math.round(withinMs / 1000)} s after it was told to end`);
}

/**
 * The first argument the workflow's latest run was started with, decoded as the worker decodes it (through the
 * payload codec, bound to the workflow's id); undefined when no run exists.
 */
export async function startInput(workflowId: string): Promise<unknown> {
  const c = client();
  let page;
  try {
    page = await c.workflowService.getWorkflowExecutionHistory({
      namespace: c.options.namespace,
      execution: { workflowId },
      maximumPageSize: 1,
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const payload = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload) return undefined;
  const { payloadCodecs, payloadConverter } = c.options.loadedDataConverter;
  let decoded: Payload[] = [payload];
  const context = { type: 'workflow' as const, namespace: c.options.namespace, workflowId };
  for (const codec of [...payloadCodecs].reverse()) decoded = await codec.decode(decoded, context);
  const [first] = decoded;
  return first ? payloadConverter.fromPayload(first) : undefined;
}

function isNotFound(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === 5;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
