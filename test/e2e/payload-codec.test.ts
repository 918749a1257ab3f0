// Issue 14, the payload codec against a real Temporal server and real workers: with LIFTOFF_PAYLOAD_KEY, a failed
// deploy's failure message and stack trace are not in the history in clear text (the workflow sandbox encodes
// them), the client and the postmortem's history reader still read them, every ciphertext names its workflow;
// a worker with LIFTOFF_REQUIRE_ENCRYPTED=1 refuses the plain input a UI form sends, naming the variable, while
// a default worker accepts it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, WorkflowFailedError } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import proto from '@temporalio/proto';
import { createLiftoffWorker } from '../../src/worker.js';
import {
  ENCRYPTED_ENCODING,
  liftoffDataConverter,
  payloadKeyFromEnv,
  WORKFLOW_ID_METADATA,
} from '../../src/temporal/codec.js';
import { readHistoryEvents } from '../../src/report/events.js';
import { deploy } from '../../src/workflows/index.js';
import { createDevServerEnv } from '../helpers/temporal.js';

const keyText = randomBytes(32).toString('base64');
const key = payloadKeyFromEnv({ LIFTOFF_PAYLOAD_KEY: keyText });
const keyedQueue = 'liftoff-codec-keyed';
const strictQueue = 'liftoff-codec-strict';
// Refused by the workflow's validate step: its message names the field and the bad value.
// (The cluster name becomes a search attribute, which stays readable: the marker goes elsewhere.)
const marker = `codec-marker-${randomBytes(4).toString('hex')}`;
const badSpec = { cluster: 'codec', hosts: marker };

type Json = Record<string, unknown>;

function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    out.push(value);
    if (/^[A-Za-z0-9+/]{8,}={0,2}$/.test(value)) out.push(Buffer.from(value, 'base64').toString('latin1'));
  } else if (Array.isArray(value)) value.forEach((v) => strings(v, out));
  else if (typeof value === 'object' && value !== null) Object.values(value).forEach((v) => strings(v, out));
  return out;
}

function failures(value: unknown, out: Json[] = []): Json[] {
  if (Array.isArray(value)) value.forEach((v) => failures(v, out));
  else if (typeof value === 'object' && value !== null) {
    const o = value as Json;
    if (typeof o.message === 'string' && ('stackTrace' in o || 'encodedAttributes' in o)) out.push(o);
    Object.values(o).forEach((v) => failures(v, out));
  }
  return out;
}

function encryptedPayloads(value: unknown, out: Json[] = []): Json[] {
  if (Array.isArray(value)) value.forEach((v) => encryptedPayloads(v, out));
  else if (typeof value === 'object' && value !== null) {
    const o = value as Json;
    const meta = o.metadata as Record<string, string> | undefined;
    if (
      meta &&
      typeof meta.encoding === 'string' &&
      Buffer.from(meta.encoding, 'base64').toString() === ENCRYPTED_ENCODING
    )
      out.push(o);
    else Object.values(o).forEach((v) => encryptedPayloads(v, out));
  }
  return out;
}

describe('payload codec with real workers', () => {
  let env: TestWorkflowEnvironment | undefined;
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  let keyed: Client;

  before(async () => {
    env = await createDevServerEnv();
    const namespace = env.namespace ?? 'default';
    for (const [taskQueue, vars] of [
      [keyedQueue, { LIFTOFF_PAYLOAD_KEY: keyText }],
      [strictQueue, { LIFTOFF_PAYLOAD_KEY: keyText, LIFTOFF_REQUIRE_ENCRYPTED: '1' }],
    ] as const) {
      const worker = await createLiftoffWorker({
        connection: env.nativeConnection,
        namespace,
        taskQueue,
        dataConverter: liftoffDataConverter(vars, { role: 'worker' }),
      });
      workers.push({ worker, running: worker.run() });
    }
    keyed = new Client({
      connection: env.connection,
      namespace,
      dataConverter: liftoffDataConverter({ LIFTOFF_PAYLOAD_KEY: keyText }),
    });
  });

  after(async () => {
    for (const w of workers) w.worker.shutdown();
    await Promise.allSettled(workers.map((w) => w.running));
    await env?.teardown();
  });

  it('a failed deploy: no failure message in clear text, read back by the client and the history reader', async () => {
    const workflowId = `codec-failed-${randomBytes(4).toString('hex')}`;
    const handle = await keyed.workflow.start(deploy, {
      taskQueue: keyedQueue,
      workflowId,
      args: [badSpec, {}],
    });
    const err = await handle.result().then(
      () => assert.fail('the deploy should fail'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowFailedError);
    const said = `${err.cause?.message ?? ''}`;
    console.log(`the deploy failed with: ${said}`);
    assert.match(said, /hosts/, 'the client reads the real message');

    const history = await handle.fetchHistory();
    const plain = proto.temporal.api.history.v1.History.toObject(
      proto.temporal.api.history.v1.History.fromObject(history),
      { longs: String, enums: String, bytes: String },
    );
    const found = failures(plain);
    assert.ok(found.length > 0, 'the history has failures');
    for (const f of found) {
      assert.equal(f.message, 'Encoded failure');
      assert.ok(!f.stackTrace, 'no stack trace in clear text');
    }
    const leaks = strings(plain).filter((s) => s.includes(marker) || s.includes('invalid spec'));
    assert.deepEqual(leaks, [], 'the spec text and the message are nowhere in clear text');
    const sealed = encryptedPayloads(plain);
    assert.ok(sealed.length > 0);
    for (const p of sealed) {
      const meta = p.metadata as Record<string, string>;
      assert.equal(Buffer.from(meta[WORKFLOW_ID_METADATA] ?? '', 'base64').toString(), workflowId);
    }

    const events = readHistoryEvents(history, {
      payloadKey: payloadKeyFromEnv({ LIFTOFF_PAYLOAD_KEY: keyText }),
    });
    const failed = events.find((e) => e.kind === 'workflowExecutionFailed');
    const failure = failed?.attrs.failure as Json | undefined;
    assert.equal(failure?.message, err.cause?.message, 'the postmortem reader gets the real message');
    console.log(
      `FIGURE: failed encrypted deploy: ${found.length} failures in the history, all "Encoded failure"; ${sealed.length} ciphertexts, all bound to ${workflowId}`,
    );
  });

  it('LIFTOFF_REQUIRE_ENCRYPTED=1 refuses a plain (UI-style) input naming the variable; the default worker takes it', async () => {
    assert.ok(env);
    const plainClient = env.client;
    const strict = await plainClient.workflow.start(deploy, {
      taskQueue: strictQueue,
      workflowId: `codec-strict-${randomBytes(4).toString('hex')}`,
      args: [badSpec, {}],
    });
    let refusal: string | undefined;
    for (let i = 0; i < 100 && refusal === undefined; i++) {
      const history = await strict.fetchHistory();
      // The refusal is a failure like any other: encoded, so read through the history reader with the key.
      const taskFailed = readHistoryEvents(history, { payloadKey: key }).find(
        (e) => e.kind === 'workflowTaskFailed',
      );
      const failure = taskFailed?.attrs.failure as Json | undefined;
      refusal = typeof failure?.message === 'string' ? failure.message : undefined;
      if (refusal === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(refusal, 'the workflow task failed');
    assert.match(refusal, /LIFTOFF_REQUIRE_ENCRYPTED=1/);
    await strict.terminate('test done');

    const lenient = await plainClient.workflow.start(deploy, {
      taskQueue: keyedQueue,
      workflowId: `codec-lenient-${randomBytes(4).toString('hex')}`,
      args: [badSpec, {}],
    });
    // Its failure is encrypted by the worker: read it with the key, as the CLI would.
    const err = await keyed.workflow
      .getHandle(lenient.workflowId)
      .result()
      .then(
        () => assert.fail('the bad spec should fail validation'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof WorkflowFailedError);
    assert.match(`${err.cause?.message ?? ''}`, /hosts/, 'accepted and validated, not refused as plaintext');
    console.log(`FIGURE: plain input refused by the strict worker: ${refusal.split('\n')[0]}`);
  });
});
