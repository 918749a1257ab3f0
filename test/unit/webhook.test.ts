// The webhook activity against a local HTTP receiver: one JSON POST with Slack's `text`, a URL from a secret
// reference, failures that never show more of the URL than its origin, and which failures are final.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { postWebhook } from '../../src/activities/webhook.js';
import { bindWorkerPolicy } from '../../src/activities/worker-policy.js';
import { workerPolicyFrom } from '../../src/config/worker-policy.js';

describe('postWebhook', () => {
  let server: Server;
  let base: string;
  let status = 200;
  const received: { path: string; type: string; body: unknown }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          path: req.url ?? '',
          type: req.headers['content-type'] ?? '',
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown,
        });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const input = (url: string | { fromEnv: string }, slack = true) => ({
    url,
    event: 'degraded',
    cluster: 'c1',
    text: '✖ c1 is degraded',
    slack,
    details: { relaunches: 3 },
  });

  it('POSTs the event as JSON, with a Slack-compatible text', async () => {
    assert.deepEqual(await postWebhook(input(`${base}/hook`)), { status: 200 });
    assert.deepEqual(received.at(-1), {
      path: '/hook',
      type: 'application/json',
      body: { event: 'degraded', cluster: 'c1', text: '✖ c1 is degraded', details: { relaunches: 3 } },
    });
    await postWebhook(input(`${base}/plain`, false));
    assert.equal((received.at(-1)?.body as { text?: string }).text, undefined);
  });

  it('reads the URL from a secret reference', async () => {
    process.env.UNIT_WEBHOOK_URL = `${base}/T000/B000/secret-token`;
    // The worker's policy, not the spec, allows the variable (what it refuses: worker-policy.test.ts).
    const policy = workerPolicyFrom({ fromEnv: ['UNIT_WEBHOOK_URL'] }, 'the test');
    try {
      await bindWorkerPolicy(policy, postWebhook)(input({ fromEnv: 'UNIT_WEBHOOK_URL' }));
      assert.equal(received.at(-1)?.path, '/T000/B000/secret-token');
    } finally {
      delete process.env.UNIT_WEBHOOK_URL;
    }
  });

  it('an HTTP error names only the origin; 400 is final, 503 is retried', async () => {
    for (const [code, final] of [
      [400, true],
      [503, false],
    ] as const) {
      status = code;
      const err = await postWebhook(input(`${base}/T1/secret-token`)).catch((e: unknown) => e);
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.message, `the webhook at ${base} answered HTTP ${code}`);
      assert.equal(err.nonRetryable, final);
    }
    status = 200;
  });

  it('a receiver that is down fails the attempt (retryable), without the secret path', async () => {
    const down = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const err = await postWebhook(input(`http://127.0.0.1:${down}/T9/secret-token`)).catch((e: unknown) => e);
    assert.ok(err instanceof ApplicationFailure);
    assert.match(
      err.message,
      new RegExp(`POST to the webhook at http://127\\.0\\.0\\.1:${down} failed: .*ECONNREFUSED`),
    );
    assert.doesNotMatch(err.message, /secret-token/);
    assert.equal(err.nonRetryable, false);
  });
});
