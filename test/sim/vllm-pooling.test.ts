// The simulated vLLM's pooling answers as pure functions (sim/tools/vllm/pooling.ts): the model kind from
// --runner/--convert/the name, deterministic unit-length embeddings, rerank order, and vLLM 0.32's error bodies.
// The served endpoints are in vllm.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  embed,
  EMBEDDING_DIMENSION,
  embeddings,
  rerank,
  resolveModelKind,
  type PoolingContext,
} from '../../sim/tools/vllm/pooling.js';

const embedModel: PoolingContext = { kind: 'embed', name: 'bge', servedNames: ['bge'] };
const reranker: PoolingContext = { kind: 'classify', name: 'rr', servedNames: ['rr'] };

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0);

interface RerankBody {
  id: string;
  results: { index: number; document: { text: string }; relevance_score: number }[];
  usage: { prompt_tokens: number; total_tokens: number };
}

describe('simulated vllm pooling answers', () => {
  it('resolves the model kind as vLLM 0.32 does, from the name where vLLM reads the architecture', () => {
    const kinds = (
      [
        ['BAAI/bge-m3'],
        ['BAAI/bge-reranker-v2-m3'],
        ['intfloat/multilingual-e5-large'],
        ['Qwen/Qwen3-Embedding-0.6B'],
        ['Qwen/Qwen3.5-122B-A10B-FP8'],
        ['some/model', 'pooling'],
        ['some/model', 'auto', 'classify'],
        ['BAAI/bge-m3', 'generate'],
        ['BAAI/bge-m3', 'pooling', 'classify'],
      ] as const
    ).map(([model, runner, convert]) => resolveModelKind(model, runner, convert).kind);
    assert.deepEqual(kinds, [
      'embed',
      'classify',
      'embed',
      'embed',
      'generate',
      'embed',
      'classify',
      'generate',
      'classify',
    ]);
    assert.deepEqual(resolveModelKind('BAAI/bge-m3').resolutions, [
      'Resolved `--runner auto` to `--runner pooling`. Pass the value explicitly to silence this message.',
    ]);
    assert.deepEqual(resolveModelKind('some/model', 'pooling').resolutions, [
      'Resolved `--convert auto` to `--convert embed`. Pass the value explicitly to silence this message.',
    ]);
    assert.deepEqual(resolveModelKind('Qwen/Qwen3.5-122B-A10B-FP8').resolutions, []);
  });

  it('embeds deterministically: 1024 float32 values of length 1, closer for texts that share words', () => {
    const cat = embed('The cat sat on the mat');
    assert.equal(cat.length, EMBEDDING_DIMENSION);
    assert.ok(Math.abs(norm(cat) - 1) < 1e-6, String(norm(cat)));
    assert.deepEqual(embed('The cat sat on the mat'), cat);
    assert.ok(cat.every((x) => x >= 0 && Math.fround(x) === x));
    assert.ok(Math.abs(norm(embed('!!!')) - 1) < 1e-6, 'a text without words is embedded too');
    assert.ok(dot(cat, embed('a cat on a mat')) > dot(cat, embed('stock prices fell sharply')));
  });

  it('answers /v1/embeddings in the OpenAI shape, one item per input, base64 as float32 bytes', () => {
    const answer = embeddings(embedModel, JSON.stringify({ model: 'bge', input: ['one two', 'three'] }));
    assert.equal(answer.status, 200);
    const body = answer.body as {
      id: string;
      object: string;
      model: string;
      data: { index: number; object: string; embedding: number[] }[];
      usage: { prompt_tokens: number; total_tokens: number };
    };
    assert.match(body.id, /^embd-[0-9a-f]{16}$/);
    assert.deepEqual([body.object, body.model], ['list', 'bge']);
    assert.deepEqual(
      body.data.map((d) => [d.index, d.object, d.embedding]),
      [
        [0, 'embedding', embed('one two')],
        [1, 'embedding', embed('three')],
      ],
    );
    // A token a word, plus <s> and </s> per text.
    assert.deepEqual([body.usage.prompt_tokens, body.usage.total_tokens], [7, 7]);
    assert.deepEqual([answer.promptTokens, answer.engineRequests], [7, 2]);

    const encoded = embeddings(embedModel, JSON.stringify({ input: 'three', encoding_format: 'base64' }));
    const b64 = (encoded.body as { data: { embedding: string }[] }).data[0]?.embedding ?? '';
    const bytes = Buffer.from(b64, 'base64');
    assert.deepEqual(
      Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)),
      embed('three'),
    );
  });

  it('refuses what vLLM 0.32 refuses, in its error shape', () => {
    const answer = (ctx: PoolingContext, f: typeof embeddings, body: unknown) => {
      const a = f(ctx, typeof body === 'string' ? body : JSON.stringify(body));
      return [a.status, a.body];
    };
    const error = (code: number, type: string, message: string, param: string | null = null) => [
      code,
      { error: { message, type, param, code } },
    ];
    assert.deepEqual(
      answer(embedModel, embeddings, { model: 'bge' }),
      error(
        400,
        'Bad Request',
        "1 validation error:\n  {'type': 'missing', 'loc': 'body.input', 'msg': 'Field required', 'input': '<dict of 1 items>'}",
        'body.input',
      ),
    );
    assert.deepEqual(
      answer(embedModel, embeddings, { input: [] }),
      error(400, 'BadRequestError', 'You must pass at least one prompt'),
    );
    assert.deepEqual(
      answer(embedModel, embeddings, { input: '' }),
      error(400, 'BadRequestError', 'The decoder prompt cannot be empty'),
    );
    assert.deepEqual(
      answer(embedModel, embeddings, { input: 'x', dimensions: 8 }),
      error(
        400,
        'BadRequestError',
        "Model 'bge' does not support Matryoshka embeddings; dimensions must be unset (received dimensions=8).",
      ),
    );
    assert.deepEqual(
      answer(embedModel, embeddings, { model: 'nope', input: 'x' }),
      error(404, 'NotFoundError', 'The model `nope` does not exist.'),
    );
    assert.equal(answer(embedModel, embeddings, 'xx')[0], 400);
    assert.deepEqual(
      answer(reranker, rerank, { query: 'q', documents: [] }),
      error(400, 'BadRequestError', 'At least one text_pair element must be given'),
    );
    assert.deepEqual(
      answer(reranker, rerank, { documents: ['a'] }),
      error(
        400,
        'Bad Request',
        "1 validation error:\n  {'type': 'missing', 'loc': 'body.query', 'msg': 'Field required', 'input': '<dict of 1 items>'}",
        'body.query',
      ),
    );
  });

  it("reranks by the query's words a document holds (a reranker) or by cosine (an embed model), top_n applied", () => {
    const documents = ['a dog barks', 'the cat sat down', 'cat food', 'the cat sat'];
    const request = JSON.stringify({ model: 'rr', query: 'the cat sat', documents, top_n: 3 });
    const scored = rerank(reranker, request);
    const body = scored.body as RerankBody;
    assert.match(body.id, /^score-[0-9a-f]{16}$/);
    // Ties keep the documents' order (a stable sort, as Python's).
    assert.deepEqual(
      body.results.map((r) => [r.index, r.document.text, Number(r.relevance_score.toFixed(3))]),
      [
        [1, 'the cat sat down', 1],
        [3, 'the cat sat', 1],
        [2, 'cat food', 0.333],
      ],
    );
    assert.deepEqual(body.usage, { prompt_tokens: 4 * 3 + 3 + 4 + 2 + 3 + 4 * 4, total_tokens: 40 });
    assert.deepEqual(rerank(reranker, request).body, body, 'the same request, the same answer');

    const cosine = rerank(embedModel, JSON.stringify({ query: 'the cat sat', documents })).body as RerankBody;
    assert.deepEqual(
      cosine.results.map((r) => r.index),
      [3, 1, 2, 0],
    );
    assert.ok(cosine.results.every((r) => r.relevance_score >= 0 && r.relevance_score <= 1.000001));
    assert.ok(Math.abs((cosine.results[0]?.relevance_score ?? 0) - 1) < 1e-6, 'the same text: cosine 1');
  });
});
