// The notifications part of `liftoff status`: counts, then the newest failures with their events and errors.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renderNotifications } from '../../src/commands/notifications.js';

describe('renderNotifications', () => {
  it('counts each kind and lists the failures, newest first as given, at most five', () => {
    const failed = Array.from({ length: 7 }, (_, i) => ({
      workflowId: `liftoff-c-notify-lost-${i}`,
      event: 'lost' as const,
      at: new Date(Date.UTC(2026, 11, 4, 3, i)).toISOString(),
      errors: [`webhook 1: POST to the webhook at http://127.0.0.1:9 failed: refused ${i}`],
    }));
    const text = renderNotifications({ listed: 10, pending: 1, delivered: 2, failed });
    const lines = text.split('\n');
    assert.equal(lines[0], 'notifications: 7 failed, 2 delivered, 1 retrying (of the last 10)');
    assert.equal(lines.length, 6, 'the count line and five failures');
    assert.match(
      lines[1] ?? '',
      /^ {2}✗ lost .*: webhook 1: POST to the webhook at http:\/\/127\.0\.0\.1:9 failed: refused 0$/,
    );
  });

  it('says none failed when every one was delivered', () => {
    assert.equal(
      renderNotifications({ listed: 3, pending: 0, delivered: 3, failed: [] }),
      'notifications: 0 failed, 3 delivered, 0 retrying (of the last 3)',
    );
  });
});
