// The webhook activity against local HTTP receivers on 127.0.0.1, allowed by listing their origins in the test's
// worker policy, as an operator would: one JSON POST with Slack's `text`, a URL from a secret reference, and what
// the worker refuses to reach (an origin it does not list, a name that resolves inside, a redirect): refused
// before any connection, the receiver hearing nothing. Failures show the origin only: never the path, an errno,
// or the address a name resolved to.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { postWebhook } from '../../src/activities/webhook.js';
import { bindWorkerPolicy } from '../../src/activities/worker-policy.js';
import { workerPolicyFrom, type WorkerPolicy } from '../../src/config/worker-policy.js';
import type { WebhookInput } from '../../src/activities/types.js';
import { rejectionOf } from '../helpers/rejection.js';

/** A receiver on loopback that keeps what it hears, including connections that never made a request. */
interface Receiver {
  server: Server;
  base: string;
  port: number;
  connections: number;
  received: { path: string; type: string; body: unknown }[];
  /** The status it answers with, and the Location it sends with it. */
  answer: { status: number; location?: string };
}

async function startReceiver(): Promise<Receiver> {
  const r: Partial<Receiver> & Pick<Receiver, 'received' | 'answer'> = {
    connections: 0,
    received: [],
    answer: { status: 200 },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      r.received.push({
        path: req.url ?? '',
        type: req.headers['content-type'] ?? '',
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown,
      });
      const { status, location } = r.answer;
      res.writeHead(status, location !== undefined ? { location } : {}).end();
    });
  });
  server.on('connection', () => (r.connections = (r.connections ?? 0) + 1));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(r, { server, port, base: `http://127.0.0.1:${port}` }) as Receiver;
}

const input = (url: WebhookInput['url'], slack = true): WebhookInput => ({
  url,
  event: 'degraded',
  cluster: 'c1',
  text: '✖ c1 is degraded',
  slack,
  details: { relaunches: 3 },
});

const failureOf = (p: Promise<unknown>) => rejectionOf(p, ApplicationFailure);

describe('postWebhook', () => {
  let hook: Receiver;
  let elsewhere: Receiver;
  let policy: WorkerPolicy;
  const post = (i: WebhookInput, p: WorkerPolicy = policy) => bindWorkerPolicy(p, postWebhook)(i);
  const withEnv = async <T>(value: string, fn: () => Promise<T>): Promise<T> => {
    process.env.UNIT_WEBHOOK_URL = value;
    try {
      return await fn();
    } finally {
      delete process.env.UNIT_WEBHOOK_URL;
    }
  };

  before(async () => {
    [hook, elsewhere] = await Promise.all([startReceiver(), startReceiver()]);
    // The worker's policy, not the spec, lists the receivers and allows the variable.
    policy = workerPolicyFrom(
      { webhooks: [hook.base, elsewhere.base], fromEnv: ['UNIT_WEBHOOK_URL'] },
      'the test',
    );
  });
  after(() => {
    hook.server.close();
    elsewhere.server.close();
  });

  it('POSTs the event as JSON, with a Slack-compatible text', async () => {
    assert.deepEqual(await post(input(`${hook.base}/hook`)), { status: 200 });
    assert.deepEqual(hook.received.at(-1), {
      path: '/hook',
      type: 'application/json',
      body: { event: 'degraded', cluster: 'c1', text: '✖ c1 is degraded', details: { relaunches: 3 } },
    });
    await post(input(`${hook.base}/plain`, false));
    assert.equal((hook.received.at(-1)?.body as { text?: string }).text, undefined);
  });

  it('reads the URL from a secret reference', async () => {
    await withEnv(`${hook.base}/T000/B000/secret-token`, () => post(input({ fromEnv: 'UNIT_WEBHOOK_URL' })));
    assert.equal(hook.received.at(-1)?.path, '/T000/B000/secret-token');
  });

  it('an HTTP error names only the origin; 400 is final, 503 is retried', async () => {
    for (const [code, final] of [
      [400, true],
      [503, false],
    ] as const) {
      hook.answer = { status: code };
      const err = await failureOf(post(input(`${hook.base}/T1/secret-token`)));
      assert.equal(err.message, `the webhook at ${hook.base} answered HTTP ${code}`);
      assert.equal(err.nonRetryable, final);
    }
    hook.answer = { status: 200 };
  });

  it('a redirect is a final failure, never followed: its target hears nothing', async () => {
    hook.answer = { status: 307, location: `${elsewhere.base}/caught` };
    try {
      const err = await failureOf(post(input(`${hook.base}/moved`)));
      assert.equal(
        err.message,
        `the webhook at ${hook.base} redirected (HTTP 307); redirects are not followed`,
      );
      assert.equal(err.nonRetryable, true);
      assert.equal(hook.received.at(-1)?.path, '/moved');
      assert.equal(elsewhere.connections, 0, 'the redirect target was never contacted');
    } finally {
      hook.answer = { status: 200 };
    }
  });

  it('an http:// origin the policy does not list is refused before any connection, from a reference too', async () => {
    const unlisted = workerPolicyFrom(
      { webhooks: [elsewhere.base], fromEnv: ['UNIT_WEBHOOK_URL'] },
      'the test',
    );
    const before = hook.connections;
    for (const url of [`${hook.base}/T2/secret-token`, { fromEnv: 'UNIT_WEBHOOK_URL' }]) {
      const err = await withEnv(`${hook.base}/T2/secret-token`, () => failureOf(post(input(url), unlisted)));
      assert.equal(err.type, 'WebhookRefused');
      assert.equal(err.nonRetryable, true);
      assert.match(err.message, new RegExp(`^the webhook at ${hook.base} is refused: plain http://`));
      assert.match(err.message, new RegExp(`list ${hook.base} under webhooks in a worker policy file`));
      assert.doesNotMatch(err.message, /secret-token/);
    }
    assert.equal(hook.connections, before, 'the receiver was never contacted');
  });

  it('a name that resolves to a loopback address is refused as it is resolved; the message holds no address', async () => {
    // https to a name: what the URL alone allows. `localhost` resolves to 127.0.0.1 (or ::1) when connecting.
    const url = `https://localhost:${hook.port}/T3/secret-token`;
    const before = hook.connections;
    const err = await withEnv(url, () => failureOf(post(input({ fromEnv: 'UNIT_WEBHOOK_URL' }))));
    assert.equal(err.type, 'WebhookRefused');
    assert.equal(err.nonRetryable, true);
    assert.match(
      err.message,
      new RegExp(
        `^the webhook at https://localhost:${hook.port} is refused: https://localhost:${hook.port} resolves to a loopback address \\((127\\.0\\.0\\.0/8|::1/128) is not allowed\\); list https://localhost:${hook.port} under webhooks in `,
      ),
    );
    assert.doesNotMatch(err.message.replace(/\(127\.0\.0\.0\/8 /, ''), /127\.0\.0\.1|::1\b/);
    assert.equal(hook.connections, before, 'the receiver was never contacted');
  });

  it('a receiver that is down fails the attempt (retryable), without errno, address or path', async () => {
    const down = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const origin = `http://127.0.0.1:${down}`;
    const err = await failureOf(
      post(input(`${origin}/T9/secret-token`), workerPolicyFrom({ webhooks: [origin] }, 'the test')),
    );
    assert.equal(err.message, `the webhook at ${origin} could not be reached`);
    assert.equal(err.type, 'WebhookFailed');
    assert.equal(err.nonRetryable, false);
  });
});
