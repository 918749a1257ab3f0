// The postmortem follows a UI or schedule run to the deploy it started as its child, and only to a deploy: a
// deploy starts its own children (its supervisor, its notifications), and `liftoff postmortem CLUSTER` of a
// supervised deploy showed the supervisor instead of the deploy.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { foldHistory } from '../../src/report/fold.js';
import { triggerReport } from '../../src/report/trigger.js';
import type { HistoryEventView } from '../../src/report/events.js';

const started: HistoryEventView = {
  eventId: 1,
  timeMs: 1000,
  kind: 'workflowExecutionStarted',
  attrs: { workflowType: { name: 'deploy' } },
};

function childEvents(type: string, workflowId: string, firstId: number): HistoryEventView[] {
  return [
    {
      eventId: firstId,
      timeMs: 2000,
      kind: 'startChildWorkflowExecutionInitiated',
      attrs: { workflowType: { name: type }, workflowId },
    },
    {
      eventId: firstId + 1,
      timeMs: 2100,
      kind: 'childWorkflowExecutionStarted',
      attrs: { workflowType: { name: type }, workflowExecution: { workflowId, runId: `${workflowId}-run` } },
    },
  ];
}

describe('the child a postmortem follows', () => {
  it('a UI run that started a deploy: the deploy is the child', () => {
    const record = foldHistory([started, ...childEvents('deploy', 'liftoff-lab', 5)]);
    assert.deepEqual(triggerReport(record).child, { workflowId: 'liftoff-lab', runId: 'liftoff-lab-run' });
  });

  it('a deploy that started its supervisor and a notification has no child to follow', () => {
    const record = foldHistory([
      started,
      ...childEvents('supervise', 'liftoff-lab-supervise', 5),
      ...childEvents('notify', 'liftoff-lab-notify-1', 7),
    ]);
    assert.equal(triggerReport(record).child, undefined);
  });

  it('a later notification does not take over the deploy child', () => {
    const record = foldHistory([
      started,
      ...childEvents('deploy', 'liftoff-lab', 5),
      ...childEvents('notify', 'liftoff-lab-notify-1', 7),
    ]);
    assert.deepEqual(triggerReport(record).child, { workflowId: 'liftoff-lab', runId: 'liftoff-lab-run' });
  });
});
