import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TASK_QUEUE = 'liftoff';

/** Search attributes liftoff sets on its workflows; the dev server registers them at start. */
export const searchAttributes = {
  cluster: defineSearchAttributeKey('LiftoffCluster', SearchAttributeType.KEYWORD),
  trigger: defineSearchAttributeKey('LiftoffTrigger', SearchAttributeType.KEYWORD),
  outcome: defineSearchAttributeKey('LiftoffOutcome', SearchAttributeType.KEYWORD),
  loadSeconds: defineSearchAttributeKey('LiftoffLoadSeconds', SearchAttributeType.DOUBLE),
} as const;

export const allSearchAttributeKeys = Object.values(searchAttributes);
