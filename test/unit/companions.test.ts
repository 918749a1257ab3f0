// The companions' spec rules and the judges of their start and probe (src/config/companions.ts,
// src/steps/companion.ts), on answers shaped as real vLLM 0.32 and docker 20.10 give them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { companionModel, startOrder } from '../../src/config/companions.js';
import { formatIssues } from '../../src/config/errors.js';
import { deploySpecSchema, type DeploySpec } from '../../src/config/schema.js';
import { companionInput } from '../../src/host-commands/step-inputs.js';
import { smokeTimingMarker } from '../../src/host-commands/launch.js';
import type { ExecResult } from '../../src/ssh/executor.js';
import { judgeProbe, judgeStart, probeCommands, startCommands } from '../../src/steps/companion.js';
import { envTransport } from '../../src/host-commands/env-transport.js';
import type { HostRef } from '../../src/config/targets.js';
import { embeddingsCompanion } from '../helpers/companions.js';

const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;

function refusal(spec: unknown): string {
  const r = deploySpecSchema.safeParse(spec);
  assert.equal(r.success, false, 'refused');
  return r.success ? '' : formatIssues(r.error);
}

const embeddings = embeddingsCompanion('spark1', { memoryMiB: 4096 });

describe('spec.companions', () => {
  it("takes the issue's example as written, with the defaults filled in", () => {
    const spec = deploySpecSchema.parse({ ...example, companions: [embeddings] });
    const [c] = spec.companions;
    assert.deepEqual(
      [c?.name, c?.probe, c?.gpus, c?.readyTimeout, c?.volumes, c?.image],
      ['embeddings', 'embeddings', true, '10m', [], undefined],
    );
  });

  it('names the field and the fix: an unknown host, a name or port used twice, serve.port on the head', () => {
    const text = refusal({
      ...example,
      companions: [
        { ...embeddings, host: 'spark9' },
        { ...embeddings, port: 30000 },
        { ...embeddings, name: 'proxy', probe: 'health' },
        { ...embeddings, name: 'proxy2', probe: 'health' },
      ],
    });
    assert.match(text, /companions\[0\]\.host: "spark9" is not one of hosts\[\]\.name \(spark1, spark2\)/);
    assert.match(text, /companions\[1\]\.name: "embeddings" is already companions\[0\]'s name/);
    assert.match(text, /companions\[1\]\.port: 30000 is serve\.port on the head \(spark1\)/);
    assert.match(text, /companions\[3\]\.port: 8001 is already companions\[2\]'s port on spark1/);
  });

  it('a probe that needs a model refuses a command that names none; a credential flag is refused', () => {
    const text = refusal({
      ...example,
      companions: [
        { ...embeddings, command: ['/opt/embed-server', '--listen', '8001'] },
        { ...embeddings, name: 'other', port: 8003, command: ['vllm', 'serve', 'x/y', '--api-key', 'k'] },
      ],
    });
    assert.match(text, /companions\[0\]\.model: the embeddings probe needs a model id/);
    assert.match(text, /companions\[1\]\.command\[3\]: "--api-key" takes a credential/);
  });

  it('reads the model from the command: vllm serve MODEL, or --served-model-name', () => {
    assert.equal(companionModel({ command: embeddings.command }), 'BAAI/bge-m3');
    assert.equal(
      companionModel({ command: ['/usr/bin/vllm', 'serve', 'm', '--served-model-name', 'n'] }),
      'n',
    );
    assert.equal(companionModel({ command: ['vllm', 'serve', 'm', '--served-model-name=n2'] }), 'n2');
    assert.equal(companionModel({ command: ['vllm', 'serve', '--port', '1'] }), undefined);
    assert.equal(companionModel({ command: ['litellm'], model: 'gpt' }), 'gpt');
  });

  it('starts the largest memory budget first, and keeps the spec order among equals', () => {
    const order = startOrder([
      { name: 'a', memoryMiB: 1 },
      { name: 'b', memoryMiB: 9 },
      { name: 'c', memoryMiB: 1 },
    ]);
    assert.deepEqual(
      order.map((c) => c.name),
      ['b', 'a', 'c'],
    );
  });
});

describe('the companion steps’ judges', () => {
  const spec: DeploySpec = deploySpecSchema.parse({ ...example, companions: [embeddings] });
  const ref = { target: { name: 'spark1' } } as unknown as HostRef;
  const input = companionInput(spec, 'wf:run', { ref, clusterIp: '192.168.200.12' }, spec.companions[0]!);
  const ok = (stdout: string): ExecResult => ({ exitCode: 0, stdout, stderr: '', durationMs: 1 });
  const running = ok(JSON.stringify([{ State: { Running: true, Status: 'running', ExitCode: 0 } }]));
  const reply = (body: unknown, status = 200, seconds = 0.042): ExecResult =>
    ok(`${JSON.stringify(body)}${smokeTimingMarker}${seconds}\n${status}`);
  const answers = (entries: Record<string, ExecResult>) => new Map(Object.entries(entries));

  it('the start removes the old container, runs the new one only when nothing listens, and labels it', () => {
    const commands = startCommands(input, envTransport({ A: 'b' }));
    assert.deepEqual(
      commands.map((c) => [c.name, c.unlessOk]),
      [
        ['remove', undefined],
        ['listening', undefined],
        ['run', 'listening'],
      ],
    );
    const run = commands[2]?.command.text ?? '';
    assert.match(run, /docker run -d --name liftoff-embeddings --gpus all --network host --ipc host/);
    assert.match(run, /--label 'liftoff\.role=companion' --label 'liftoff\.companion=embeddings'/);
    assert.match(run, /--entrypoint vllm hellohal2064\/vllm-qwen3\.5-gb10 serve BAAI\/bge-m3 --port 8001/);
  });

  it('a held port and a refused docker run are failures naming the companion and the fix', () => {
    assert.throws(
      () =>
        judgeStart(
          answers({ remove: ok(''), listening: ok('LISTEN 0 4096 0.0.0.0:8001 0.0.0.0:*') }),
          input,
          [],
        ),
      /companion embeddings: port 8001 is in use on spark1 .*pick another companions\[\]\.port/,
    );
    const refused: ExecResult = {
      exitCode: 125,
      stdout: '',
      stderr: "docker: Error response from daemon: No such image: x.\nSee 'docker run --help'.",
      durationMs: 1,
    };
    assert.throws(
      () =>
        judgeStart(
          answers({ remove: ok(''), listening: { ...ok(''), exitCode: 1 }, run: refused }),
          input,
          [],
        ),
      (err: Error & { nonRetryable?: boolean }) =>
        /docker run of liftoff-embeddings on spark1 failed \(exit 125\)/.test(err.message) &&
        err.nonRetryable === true,
    );
    assert.equal(
      judgeStart(
        answers({ remove: ok(''), listening: { ...ok(''), exitCode: 1 }, run: ok('abc123\n') }),
        input,
        [],
      ),
      'abc123',
    );
  });

  it('an embeddings probe passes on a vector, and says why otherwise', () => {
    assert.deepEqual(
      probeCommands(input).map((c) => c.name),
      ['state', 'request'],
    );
    const vector = { object: 'list', data: [{ index: 0, object: 'embedding', embedding: [0.1, 0.2, 0.3] }] };
    assert.deepEqual(judgeProbe(answers({ state: running, request: reply(vector) }), input, []), {
      ok: true,
      latencyMs: 42,
      detail: 'an embedding of 3 dimensions',
    });
    const notFound = {
      error: { message: 'The model `x` does not exist.', type: 'NotFoundError', code: 404 },
    };
    const v404 = judgeProbe(answers({ state: running, request: reply(notFound, 404) }), input, []);
    assert.deepEqual([v404.ok, !v404.ok && v404.running], [false, true]);
    assert.match(!v404.ok ? v404.error : '', /^HTTP 404: .*does not exist/);
    const chatOnly = judgeProbe(answers({ state: running, request: reply({ data: [] }) }), input, []);
    assert.match(!chatOnly.ok ? chatOnly.error : '', /no embedding/);
  });

  it('a rerank probe needs both documents scored; a chat probe one token; a health probe a model list', () => {
    const rerank = { ...input, companion: { ...input.companion, probe: 'rerank' as const } };
    const scored = {
      id: 'score-1',
      results: [
        { index: 0, relevance_score: 0.9 },
        { index: 1, relevance_score: 0.1 },
      ],
    };
    assert.equal(judgeProbe(answers({ state: running, request: reply(scored) }), rerank, []).ok, true);
    const one = { results: [{ index: 0, relevance_score: 0.9 }] };
    assert.equal(judgeProbe(answers({ state: running, request: reply(one) }), rerank, []).ok, false);
    const chat = { ...input, companion: { ...input.companion, probe: 'chat' as const } };
    const completion = {
      choices: [{ message: { role: 'assistant', content: 'ok' } }],
      usage: { completion_tokens: 1 },
    };
    assert.equal(judgeProbe(answers({ state: running, request: reply(completion) }), chat, []).ok, true);
    const health = { ...input, companion: { ...input.companion, probe: 'health' as const } };
    assert.deepEqual(
      probeCommands(health).map((c) => c.name),
      ['state', 'health', 'models'],
    );
    const models = { object: 'list', data: [{ id: 'BAAI/bge-m3', object: 'model' }] };
    const passed = judgeProbe(
      answers({ state: running, health: ok('200'), models: reply(models) }),
      health,
      [],
    );
    assert.deepEqual(passed.ok && passed.detail, 'serves BAAI/bge-m3');
    const down = judgeProbe(
      answers({ state: running, health: ok('503'), models: reply(models) }),
      health,
      [],
    );
    assert.match(!down.ok ? down.error : '', /\/health answered 503/);
  });

  it('a container that stopped is not running, whatever the request says; secrets are redacted', () => {
    const exited = ok(JSON.stringify([{ State: { Running: false, Status: 'exited', ExitCode: 137 } }]));
    const v = judgeProbe(answers({ state: exited, request: reply({}) }), input, []);
    assert.deepEqual(v, {
      ok: false,
      running: false,
      error: 'its container liftoff-embeddings is exited (exit code 137)',
    });
    const gone = {
      exitCode: 1,
      stdout: '',
      stderr: 'Error: No such object: liftoff-embeddings',
      durationMs: 1,
    };
    const g = judgeProbe(answers({ state: gone, request: reply({}) }), input, []);
    assert.match(!g.ok ? g.error : '', /liftoff-embeddings is gone/);
    const leaked = judgeProbe(
      answers({ state: running, request: reply({ error: { message: 'bad key sk-canary-123' } }, 401) }),
      input,
      ['sk-canary-123'],
    );
    assert.doesNotMatch(!leaked.ok ? leaked.error : '', /sk-canary-123/);
  });
});
