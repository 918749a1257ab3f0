// The simulated vLLM as a pooling server (an embeddings model such as BAAI/bge-m3, or a cross-encoder reranker such
// as BAAI/bge-reranker-v2-m3): which kind of model `vllm serve` runs, and the answers of /v1/embeddings and
// /rerank (also /v1/rerank, /v2/rerank). Pure functions of the request; server.ts routes and counts.
//
// Facts from real vLLM 0.32.0 (the CPU build in .venv-real, serving liftoff-test/tiny-qwen2 with
// `--runner pooling --convert embed`, and its source):
// - `--task` is gone: `vllm serve x --task embed` exits 2 with `vllm: error: unrecognized arguments: --task embed`
//   and a hint to use `--runner pooling` / `--convert embed|classify` (utils/argparse_utils.py). The model kind
//   comes from `--runner {auto,generate,pooling,draft}` and `--convert {auto,none,embed,classify}`; with `auto`
//   vLLM reads the architecture from the model's config.json (config/model.py: `*Model` and `EmbeddingModel` →
//   pooling/embed, `ForSequenceClassification` → pooling/classify, `ForCausalLM` → generate) and logs
//   "Resolved `--runner auto` to `--runner pooling`". The sim has no config.json, so `auto` reads the model's name.
// - A pooling model's server registers no generation routes (entrypoints/launchers/api_server/routers.py adds
//   them only `if "generate" in supported_tasks`): POST /v1/chat/completions and /v1/completions answer
//   Starlette's own 404 `{"detail":"Not Found"}`, not an OpenAI error.
// - An embed model serves /v1/embeddings and the scoring routes too (pooling/utils.py enable_scoring_api: true for
//   "embed"; relevance is the cosine of the two embeddings); a classify model with one label (a reranker) serves
//   the scoring routes and no /v1/embeddings.
// - Errors are `{"error": {"message", "type", "param", "code"}}`: `dimensions` on a model without Matryoshka
//   embeddings, "" and [] as input, and [] as documents are 400 BadRequestError with param null; a missing field
//   is pydantic's 400 "Bad Request" with param "body.<field>"; an unknown model is 404 NotFoundError.
// - The rerank answer's id starts `score-` (ServingScores' request_id_prefix), each document is
//   `{text, multi_modal: null}`, usage is `{prompt_tokens, total_tokens}`; results sort by score, descending and
//   stable, then top_n (0 or unset: all) applies.
import { createHash } from 'node:crypto';

/** What the served model does: generates text, embeds it, or scores a (query, document) pair (a reranker). */
export type ModelKind = 'generate' | 'embed' | 'classify';

export const RUNNER_CHOICES = ['auto', 'generate', 'pooling', 'draft'] as const;
export const CONVERT_CHOICES = ['auto', 'none', 'embed', 'classify'] as const;

/** bge-m3's dimension; every embedding model of the sim has it (the sim's vectors are not Matryoshka ones). */
export const EMBEDDING_DIMENSION = 1024;
/** The context of bge-m3 and bge-reranker-v2-m3, a pooling server's max_model_len without --max-model-len. */
export const POOLING_MAX_MODEL_LEN = 8192;

// Names of rerankers (bge-reranker-*, jina-reranker-*, mxbai-rerank-*) and of embedding models (bge-*, e5, gte,
// MiniLM, sentence-transformers/*, anything "embed"), standing in for the architecture real vLLM reads.
const rerankerName = /rerank/i;
const embeddingName = /embed|(?:^|[/_-])(?:bge|e5|gte)(?:[-_]|$)|minilm|sentence-transformers\//i;

export interface ResolvedModelKind {
  kind: ModelKind;
  /** The lines real vLLM logs when it resolves an `auto`, for serve.ts to print. */
  resolutions: string[];
}

/** The kind of model `vllm serve` runs, from --runner and --convert as vLLM 0.32 resolves them, the name for `auto`. */
export function resolveModelKind(model: string, runner = 'auto', convert = 'auto'): ResolvedModelKind {
  const pooledByName: ModelKind | undefined = rerankerName.test(model)
    ? 'classify'
    : embeddingName.test(model)
      ? 'embed'
      : undefined;
  const resolutions: string[] = [];
  const resolved = (what: string, value: string) =>
    `Resolved \`--${what} auto\` to \`--${what} ${value}\`. Pass the value explicitly to silence this message.`;
  let pooling: boolean;
  if (runner === 'auto') {
    pooling = convert === 'embed' || convert === 'classify' || pooledByName !== undefined;
    if (pooling) resolutions.push(resolved('runner', 'pooling'));
  } else pooling = runner === 'pooling';
  if (!pooling) return { kind: 'generate', resolutions };
  if (convert === 'embed' || convert === 'classify') return { kind: convert, resolutions };
  // A model built for pooling needs no adapter (vLLM resolves `--convert none`, silently); a generative one under
  // `--runner pooling` is adapted to embed, which vLLM logs.
  if (pooledByName) return { kind: pooledByName, resolutions };
  if (convert === 'auto') resolutions.push(resolved('convert', 'embed'));
  return { kind: 'embed', resolutions };
}

/** The answer of one pooling request: the HTTP status and the JSON body, and what the engine counted. */
export interface PoolingAnswer {
  status: number;
  body: unknown;
  /** Prompt tokens and engine requests (one per text embedded or pair scored), for /metrics. */
  promptTokens: number;
  engineRequests: number;
}

export interface PoolingContext {
  kind: ModelKind;
  /** The name responses report (the first --served-model-name, else the model). */
  name: string;
  servedNames: string[];
}

/** vLLM 0.32's ErrorResponse. */
export function errorBody(message: string, type: string, code: number, param: string | null = null): unknown {
  return { error: { message, type, param, code } };
}

function refuse(status: number, message: string, type = 'BadRequestError', param: string | null = null) {
  return { status, body: errorBody(message, type, status, param), promptTokens: 0, engineRequests: 0 };
}

/**
 * pydantic's missing field, as vLLM 0.32's validation handler words it (a 400 "Bad Request", not BadRequestError,
 * param `body.<field>`). For /v1/embeddings real vLLM lists 7 errors, one per branch of its request union; the sim
 * gives the first.
 */
function missingField(field: string, body: object): PoolingAnswer {
  const items = Object.keys(body).length;
  return refuse(
    400,
    `1 validation error:\n  {'type': 'missing', 'loc': 'body.${field}', 'msg': 'Field required', 'input': '<dict of ${items} items>'}`,
    'Bad Request',
    `body.${field}`,
  );
}

/** A body that is not JSON, as vLLM 0.32 answers it. */
export function invalidJson(): PoolingAnswer {
  return refuse(
    400,
    "1 validation error:\n  {'type': 'json_invalid', 'loc': 'body.0', 'msg': 'JSON decode error', 'input': '<dict of 0 items>', 'ctx': {'error': 'Expecting value'}}",
    'Bad Request',
    'body.0',
  );
}

function unknownModel(ctx: PoolingContext, model: unknown): PoolingAnswer | undefined {
  if (model === undefined || model === null) return undefined;
  if (typeof model === 'string' && ctx.servedNames.includes(model)) return undefined;
  const shown = typeof model === 'string' ? model : JSON.stringify(model);
  return refuse(404, `The model \`${shown}\` does not exist.`, 'NotFoundError');
}

/** Lower-case words: letters and digits, split at anything else (a linear scan, no backtracking). */
function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** bge-m3's tokenizer (XLM-R) puts <s> and </s> around a text; the sim counts a token a word. */
function textTokens(text: string): number {
  return words(text).length + 2;
}

const POSITIONS_PER_WORD = 8;

/**
 * A text's embedding: each word lights POSITIONS_PER_WORD positions picked by its SHA-256, with weights in
 * [0.5, 1]; the sum is scaled to length 1. Deterministic, non-negative (so cosines lie in [0, 1]), and texts that
 * share words are close, as a real model's would be for near-duplicates. A text without words is hashed whole.
 */
export function embed(text: string): number[] {
  const vector = new Float64Array(EMBEDDING_DIMENSION);
  const units = words(text);
  for (const unit of units.length > 0 ? units : [`\u0000${text}`]) {
    const digest = createHash('sha256').update(unit).digest();
    for (let i = 0; i < POSITIONS_PER_WORD; i++) {
      const position = digest.readUInt16BE(2 * i) % EMBEDDING_DIMENSION;
      vector[position] = (vector[position] ?? 0) + 0.5 + (digest[16 + i] ?? 0) / 510;
    }
  }
  const norm = Math.sqrt(vector.reduce((s, v) => s + v * v, 0));
  // float32 values, as vLLM's float32 embeddings reach the JSON.
  return Array.from(vector, (v) => Math.fround(v / norm));
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += (a[i] ?? 0) * (b[i] ?? 0);
  return dot;
}

/**
 * A reranker's relevance: the share of the query's distinct words the document contains, in [0, 1], so a test can
 * predict the order. (A cross-encoder's sigmoid is in [0, 1] too.)
 */
function overlapScore(query: string, document: string): number {
  const queryWords = new Set(words(query));
  if (queryWords.size === 0) return 0;
  const documentWords = new Set(words(document));
  let shared = 0;
  for (const w of queryWords) if (documentWords.has(w)) shared += 1;
  return shared / queryWords.size;
}

/** Real ids are random; the sim's come from the request, so the same request gets the same answer. */
function requestId(prefix: string, raw: string): string {
  return `${prefix}-${createHash('sha256').update(raw).digest('hex').slice(0, 16)}`;
}

function float32Base64(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

/** A request body that is a JSON object, or undefined (not JSON, or another JSON value). */
function jsonObjectOf(raw: string): Record<string, unknown> | undefined {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return undefined;
  }
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : undefined;
}

/** POST /v1/embeddings of an embed model: `{model?, input: string | string[], encoding_format?, dimensions?}`. */
export function embeddings(ctx: PoolingContext, raw: string): PoolingAnswer {
  const request = jsonObjectOf(raw);
  if (!request) return invalidJson();
  if (!('input' in request)) return missingField('input', request);
  const { input } = request;
  const texts = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(texts) || !texts.every((t): t is string => typeof t === 'string')) {
    return refuse(400, 'input must be a string or a list of strings', 'Bad Request', 'body.input');
  }
  const refusedModel = unknownModel(ctx, request.model);
  if (refusedModel) return refusedModel;
  if (request.dimensions !== undefined && request.dimensions !== null) {
    return refuse(
      400,
      `Model '${ctx.name}' does not support Matryoshka embeddings; dimensions must be unset (received dimensions=${JSON.stringify(request.dimensions)}).`,
    );
  }
  const format = request.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    return refuse(400, `encoding_format must be 'float' or 'base64'`, 'Bad Request', 'body.encoding_format');
  }
  if (texts.length === 0) return refuse(400, 'You must pass at least one prompt');
  // vLLM 0.32 refuses a text that tokenizes to nothing (bge-m3's <s></s> alone would not, a decoder's "" does).
  if (texts.some((t) => t === '')) return refuse(400, 'The decoder prompt cannot be empty');
  const promptTokens = texts.reduce((s, t) => s + textTokens(t), 0);
  return {
    status: 200,
    body: {
      id: requestId('embd', raw),
      object: 'list',
      created: Math.floor(Date.now() / 1000),
      model: ctx.name,
      data: texts.map((text, index) => {
        const vector = embed(text);
        return {
          index,
          object: 'embedding',
          embedding: format === 'base64' ? float32Base64(vector) : vector,
        };
      }),
      usage: {
        prompt_tokens: promptTokens,
        total_tokens: promptTokens,
        completion_tokens: 0,
        prompt_tokens_details: null,
        completion_tokens_details: null,
      },
    },
    promptTokens,
    engineRequests: texts.length,
  };
}

/** POST /rerank, /v1/rerank, /v2/rerank: `{model?, query: string, documents: string[], top_n?}`. */
export function rerank(ctx: PoolingContext, raw: string): PoolingAnswer {
  const request = jsonObjectOf(raw);
  if (!request) return invalidJson();
  if (!('query' in request)) return missingField('query', request);
  if (!('documents' in request)) return missingField('documents', request);
  const { query, documents, top_n: topNRaw } = request;
  if (typeof query !== 'string') return refuse(400, 'query must be a string', 'Bad Request', 'body.query');
  const docs = typeof documents === 'string' ? [documents] : documents;
  if (!Array.isArray(docs) || !docs.every((d): d is string => typeof d === 'string')) {
    return refuse(400, 'documents must be a string or a list of strings', 'Bad Request', 'body.documents');
  }
  const topN = topNRaw ?? 0;
  if (typeof topN !== 'number' || !Number.isInteger(topN) || topN < 0) {
    return refuse(400, 'top_n must be an integer >= 0', 'Bad Request', 'body.top_n');
  }
  const refusedModel = unknownModel(ctx, request.model);
  if (refusedModel) return refusedModel;
  if (docs.length === 0) return refuse(400, 'At least one text_pair element must be given');
  // An embed model scores by the cosine of the two embeddings, encoding the query once and each document; a
  // cross-encoder reads each (query, document) pair: <s> query </s></s> document </s>.
  const queryVector = ctx.kind === 'embed' ? embed(query) : undefined;
  const results = docs.map((text, index) => ({
    index,
    document: { text, multi_modal: null },
    relevance_score: queryVector ? cosine(queryVector, embed(text)) : overlapScore(query, text),
  }));
  results.sort((a, b) => b.relevance_score - a.relevance_score);
  const promptTokens =
    ctx.kind === 'embed'
      ? textTokens(query) + docs.reduce((s, d) => s + textTokens(d), 0)
      : docs.reduce((s, d) => s + words(query).length + words(d).length + 4, 0);
  return {
    status: 200,
    body: {
      id: requestId('score', raw),
      model: ctx.name,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      results: topN > 0 && topN < results.length ? results.slice(0, topN) : results,
    },
    promptTokens,
    engineRequests: ctx.kind === 'embed' ? docs.length + 1 : docs.length,
  };
}
