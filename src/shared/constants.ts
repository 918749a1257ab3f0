import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TASK_QUEUE = 'liftoff';

/**
 * The one workflow id a cluster's deploy runs under. Temporal allows one running workflow per id, which is what
 * makes "one deploy per cluster" hold for every trigger (CLI, UI, schedule).
 */
export function deployWorkflowId(cluster: string): string {
  return `liftoff-${cluster}`;
}

/** The one supervising workflow of a cluster; at most one runs per cluster, like the deploy. */
export function superviseWorkflowId(cluster: string): string {
  return `${deployWorkflowId(cluster)}-supervise`;
}

/**
 * The `down` of a cluster (src/workflows/down.ts): one at a time, like the deploy. The colon is not allowed in a
 * cluster name, so no cluster's deploy can take this id (a cluster `x-supervise` can take x's supervisor's).
 */
export function downWorkflowId(cluster: string): string {
  return `liftoff-down:${cluster}`;
}

/** Search attributes liftoff sets on its workflows; the dev server registers them at start. */
export const searchAttributes = {
  cluster: defineSearchAttributeKey('LiftoffCluster', SearchAttributeType.KEYWORD),
  trigger: defineSearchAttributeKey('LiftoffTrigger', SearchAttributeType.KEYWORD),
  outcome: defineSearchAttributeKey('LiftoffOutcome', SearchAttributeType.KEYWORD),
  loadSeconds: defineSearchAttributeKey('LiftoffLoadSeconds', SearchAttributeType.DOUBLE),
  /** The machine ids of the hosts a cluster holds, on its cluster workflow (workflows/cluster.ts). */
  hostIds: defineSearchAttributeKey('LiftoffHostIds', SearchAttributeType.KEYWORD_LIST),
} as const;

/** The search attributes every start of a deploy carries (CLI, UI child, schedule): its cluster and trigger. */
export function deployStartAttributes(cluster: string, trigger: string) {
  return [
    { key: searchAttributes.cluster, value: cluster },
    { key: searchAttributes.trigger, value: trigger },
  ];
}

export const allSearchAttributeKeys = Object.values(searchAttributes);
