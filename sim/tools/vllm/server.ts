// The OpenAI-compatible HTTP API of the simulated vLLM server, opened only once the model is "loaded".
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { embeddings, errorBody, rerank, type ModelKind, type PoolingAnswer } from './pooling.js';

export interface ApiOptions {
  /** The model path or id given to `vllm serve`. */
  model: string;
  /** Names clients may use; the first is reported by /v1/models and in responses. */
  servedNames: string[];
  maxModelLen: number;
  /** A generative model serves chat completions; a pooling one /v1/embeddings (embed) and /rerank (both). */
  kind: ModelKind;
  /** Access log, uvicorn style. */
  log: (line: string) => void;
  /** Like vLLM's --api-key / VLLM_API_KEY: every /v1 and /v2 route then needs `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** The host's `completions` fault, read per request: a hung engine behind a healthy /health. */
  completionFault?: () => 'hang' | 'error' | undefined;
  /** With the `error` fault: a `NAME=value` of the server's environment its message ends with. */
  completionErrorSays?: () => string | undefined;
  /** The host's faults that shape a completion's answer (not whether it comes), read per request. */
  completionShape?: () => CompletionShape;
  /** Time one completion takes to generate, so a test can land a kill while a request is in flight. */
  completionMs?: number;
}

export interface CompletionShape {
  /** vLLM 0.32 with --reasoning-parser, the budget spent reasoning: content null, the text under `reasoning`. */
  reasoningParser?: boolean;
  /** The generated tokens decode to "": content "", usage still counts them. */
  emptyText?: boolean;
}

interface ChatMessage {
  role?: unknown;
  content?: unknown;
}

interface ChatRequest {
  model?: unknown;
  messages?: unknown;
  stream?: unknown;
  max_tokens?: unknown;
  max_completion_tokens?: unknown;
  stream_options?: { include_usage?: unknown };
}

const REPLY_WORDS =
  'Hello! This is a simulated vLLM server answering from a fake GPU cluster. The weights are imaginary, but the API is real.'.split(
    ' ',
  );

function countTokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) =>
        part && typeof part === 'object' && 'text' in part && typeof part.text === 'string' ? part.text : '',
      )
      .join(' ');
  }
  return '';
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** vLLM 0.32's ErrorResponse: `{"error": {"message", "type", "param", "code"}}`. */
function openAiError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, errorBody(message, type, status));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  500: 'Internal Server Error',
};

/**
 * The POST routes of a server, by the model's kind: real vLLM 0.32 registers the generation routes only for a
 * generative model, /v1/embeddings only for an embed model, and the scoring routes for both pooling kinds; any
 * other path is Starlette's 404 `{"detail": "Not Found"}` (so is chat on a pooling model).
 */
export function postRoutesOf(kind: ModelKind): string[] {
  const rerankRoutes = ['/rerank', '/v1/rerank', '/v2/rerank'];
  if (kind === 'generate') return ['/v1/chat/completions'];
  return kind === 'embed' ? ['/v1/embeddings', ...rerankRoutes] : rerankRoutes;
}

/** The paths --api-key guards (vLLM 0.32's GUARDED_PREFIX): /rerank and /health are open, /v2/rerank is not. */
const GUARDED_PREFIXES = ['/v1', '/v2', '/inference', '/cohere'];

export class VllmApi {
  private readonly created = Math.floor(Date.now() / 1000);
  private promptTokens = 0;
  private generationTokens = 0;
  private finished = { stop: 0, length: 0 };
  /** Recorded per completion, as real vLLM does (time to its first token, the gaps between its tokens). */
  private readonly timeToFirstToken = new Histogram(TIME_TO_FIRST_TOKEN_BUCKETS);
  private readonly interTokenLatency = new Histogram(INTER_TOKEN_LATENCY_BUCKETS);
  /** The routes this server has, as real vLLM registers them for the model's kind (pooling.ts). */
  private readonly postRoutes: ReadonlyMap<
    string,
    (req: IncomingMessage, res: ServerResponse) => Promise<void>
  >;
  private readonly server: Server;

  constructor(private readonly opts: ApiOptions) {
    this.postRoutes = new Map(postRoutesOf(opts.kind).map((path) => [path, this.handlerOf(path)]));
    this.server = createServer((req, res) => {
      res.on('finish', () => {
        const peer = `${req.socket.remoteAddress ?? '-'}:${req.socket.remotePort ?? 0}`;
        opts.log(
          `INFO:     ${peer} - "${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}" ${res.statusCode} ${STATUS_TEXT[res.statusCode] ?? ''}`.trimEnd(),
        );
      });
      this.route(req, res).catch((e: unknown) => {
        if (!res.headersSent) openAiError(res, 500, 'InternalServerError', String(e));
        else res.end();
      });
    });
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host, port, exclusive: true }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  close(): void {
    this.server.close();
    this.server.closeAllConnections();
  }

  private get name(): string {
    return this.opts.servedNames[0] ?? this.opts.model;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    if (
      this.opts.apiKey &&
      GUARDED_PREFIXES.some((prefix) => path.startsWith(prefix)) &&
      req.headers.authorization !== `Bearer ${this.opts.apiKey}`
    ) {
      sendJson(res, 401, { error: 'Unauthorized' });
      return;
    }
    if (path === '/health' && method === 'GET') {
      res.writeHead(200, { 'content-length': 0 });
      res.end();
    } else if (path === '/ping' && (method === 'GET' || method === 'POST')) {
      res.writeHead(200, { 'content-length': 0 });
      res.end();
    } else if (path === '/version' && method === 'GET') {
      sendJson(res, 200, { version: '0.17.1rc1' });
    } else if (path === '/v1/models' && method === 'GET') {
      sendJson(res, 200, this.models());
    } else if (path === '/metrics' && method === 'GET') {
      const text = this.metrics();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(text);
    } else if (method === 'POST' && this.postRoutes.has(path)) {
      await this.postRoutes.get(path)?.(req, res);
    } else if (
      ['/health', '/v1/models', '/metrics', '/version'].includes(path) ||
      this.postRoutes.has(path)
    ) {
      sendJson(res, 405, { detail: 'Method Not Allowed' });
    } else {
      sendJson(res, 404, { detail: 'Not Found' });
    }
  }

  private handlerOf(path: string): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
    if (path === '/v1/chat/completions') return (req, res) => this.chat(req, res);
    const answer = path === '/v1/embeddings' ? embeddings : rerank;
    return async (req, res) => {
      const pooled: PoolingAnswer = answer(
        { kind: this.opts.kind, name: this.name, servedNames: this.opts.servedNames },
        await readBody(req),
      );
      this.promptTokens += pooled.promptTokens;
      this.finished.stop += pooled.engineRequests;
      sendJson(res, pooled.status, pooled.body);
    };
  }

  private models(): unknown {
    return {
      object: 'list',
      data: this.opts.servedNames.map((id) => ({
        id,
        object: 'model',
        created: this.created,
        owned_by: 'vllm',
        root: this.opts.model,
        parent: null,
        max_model_len: this.opts.maxModelLen,
        permission: [
          {
            id: `modelperm-${createHash('sha256').update(id).digest('hex').slice(0, 32)}`,
            object: 'model_permission',
            created: this.created,
            allow_create_engine: false,
            allow_sampling: true,
            allow_logprobs: true,
            allow_search_indices: false,
            allow_view: true,
            allow_fine_tuning: false,
            organization: '*',
            group: null,
            is_blocking: false,
          },
        ],
      })),
    };
  }

  private async chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedMs = performance.now();
    const fault = this.opts.completionFault?.();
    if (fault === 'hang') return; // the request is read and never answered, as by a stuck engine
    if (fault === 'error') {
      const says = this.opts.completionErrorSays?.();
      openAiError(
        res,
        500,
        'InternalServerError',
        `EngineCore encountered an issue. See stack trace (above) for the root cause.${says ? ` Engine settings: ${says}` : ''}`,
      );
      return;
    }
    let body: ChatRequest;
    try {
      body = JSON.parse(await readBody(req)) as ChatRequest;
    } catch {
      openAiError(res, 400, 'BadRequestError', 'Expecting value: line 1 column 1 (char 0)');
      return;
    }
    if (
      body.model !== undefined &&
      (typeof body.model !== 'string' || !this.opts.servedNames.includes(body.model))
    ) {
      const shown = typeof body.model === 'string' ? body.model : JSON.stringify(body.model);
      openAiError(res, 404, 'NotFoundError', `The model \`${shown}\` does not exist.`);
      return;
    }
    if (this.opts.completionMs) await new Promise((r) => setTimeout(r, this.opts.completionMs));
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      openAiError(
        res,
        400,
        'BadRequestError',
        "[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]",
      );
      return;
    }
    const messages = body.messages as ChatMessage[];
    // Chat template overhead: a few tokens per message on top of its words.
    const promptTokens = messages.reduce((s, m) => s + countTokens(messageText(m.content)) + 4, 0);
    const limitRaw = body.max_completion_tokens ?? body.max_tokens;
    const limit = typeof limitRaw === 'number' && limitRaw > 0 ? Math.floor(limitRaw) : REPLY_WORDS.length;
    const words = REPLY_WORDS.slice(0, limit);
    const finishReason = words.length < REPLY_WORDS.length ? 'length' : 'stop';
    const usage = {
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + words.length,
      completion_tokens: words.length,
    };
    const requestId = `chatcmpl-${createHash('sha256').update(JSON.stringify(messages)).digest('hex').slice(0, 32)}`;
    const created = Math.floor(Date.now() / 1000);
    this.promptTokens += promptTokens;
    this.generationTokens += words.length;
    this.finished[finishReason] += 1;
    // The sim makes every token at once: its first token comes when the answer does, the rest with no gap.
    if (words.length > 0) this.timeToFirstToken.observe((performance.now() - arrivedMs) / 1000);
    for (let i = 1; i < words.length; i++) this.interTokenLatency.observe(0);

    const shape = this.opts.completionShape?.() ?? {};
    const text = shape.emptyText ? '' : words.join(' ');
    // Where the text goes: vLLM 0.32's ChatMessage has `reasoning` (null without a reasoning parser), no
    // `reasoning_content`.
    const textField = shape.reasoningParser ? 'reasoning' : 'content';

    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      const chunk = (delta: object, finish: string | null, extra: object = {}) =>
        `data: ${JSON.stringify({
          id: requestId,
          object: 'chat.completion.chunk',
          created,
          model: this.name,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...extra }],
        })}\n\n`;
      res.write(chunk({ role: 'assistant', content: '' }, null));
      words.forEach((word, i) =>
        res.write(chunk({ [textField]: shape.emptyText ? '' : i === 0 ? word : ` ${word}` }, null)),
      );
      res.write(chunk({}, finishReason, { stop_reason: null }));
      if (body.stream_options?.include_usage === true) {
        res.write(
          `data: ${JSON.stringify({ id: requestId, object: 'chat.completion.chunk', created, model: this.name, choices: [], usage })}\n\n`,
        );
      }
      res.end('data: [DONE]\n\n');
      return;
    }
    sendJson(res, 200, {
      id: requestId,
      object: 'chat.completion',
      created,
      model: this.name,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: shape.reasoningParser ? null : text,
            reasoning: shape.reasoningParser ? text : null,
          },
          logprobs: null,
          finish_reason: finishReason,
          stop_reason: null,
        },
      ],
      usage: { ...usage, prompt_tokens_details: null },
      prompt_logprobs: null,
    });
  }

  private metrics(): string {
    const labels = `engine="0",model_name="${this.name}"`;
    // A sample is [labels, value] under the metric's name, or [name, labels, value] (a histogram's _bucket, …).
    const metric = (name: string, type: string, help: string, samples: Sample[]) => [
      `# HELP ${name} ${help}`,
      `# TYPE ${name} ${type}`,
      ...samples.map((sample) => {
        const [n, l, v] = sample.length === 2 ? [name, ...sample] : sample;
        return `${n}{${l}} ${Number.isInteger(v) ? v.toFixed(1) : String(v)}`;
      }),
    ];
    return `${[
      ...metric('vllm:num_requests_running', 'gauge', 'Number of requests in model execution batches.', [
        [labels, 0],
      ]),
      ...metric('vllm:num_requests_waiting', 'gauge', 'Number of requests waiting to be processed.', [
        [labels, 0],
      ]),
      ...metric('vllm:kv_cache_usage_perc', 'gauge', 'KV-cache usage. 1 means 100 percent usage.', [
        [labels, 0],
      ]),
      ...metric('vllm:prompt_tokens_total', 'counter', 'Number of prefill tokens processed.', [
        [labels, this.promptTokens],
      ]),
      ...metric('vllm:generation_tokens_total', 'counter', 'Number of generation tokens processed.', [
        [labels, this.generationTokens],
      ]),
      ...metric('vllm:request_success_total', 'counter', 'Count of successfully processed requests.', [
        [`${labels},finished_reason="stop"`, this.finished.stop],
        [`${labels},finished_reason="length"`, this.finished.length],
      ]),
      ...metric(
        'vllm:time_to_first_token_seconds',
        'histogram',
        'Histogram of time to first token in seconds.',
        this.timeToFirstToken.samples('vllm:time_to_first_token_seconds', labels),
      ),
      ...metric(
        'vllm:inter_token_latency_seconds',
        'histogram',
        'Histogram of inter-token latency in seconds.',
        this.interTokenLatency.samples('vllm:inter_token_latency_seconds', labels),
      ),
    ].join('\n')}\n`;
  }
}

type Sample = [labels: string, value: number] | [name: string, labels: string, value: number];

// vLLM 0.32's bucket boundaries (vllm/v1/metrics/buckets.py), so that a dashboard's histogram_quantile over the sim
// reads as over the real server.
const TIME_TO_FIRST_TOKEN_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
  80.0, 160.0, 640.0, 2560.0,
];
const INTER_TOKEN_LATENCY_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
];

/** A Prometheus histogram as prometheus_client writes it: cumulative buckets up to +Inf, then _count and _sum. */
class Histogram {
  private readonly counts: number[];
  private count = 0;
  private sum = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    this.bounds.forEach((le, i) => {
      if (value <= le) this.counts[i] = (this.counts[i] ?? 0) + 1;
    });
    this.count += 1;
    this.sum += value;
  }

  samples(name: string, labels: string): Sample[] {
    return [
      ...this.bounds.map((le, i): Sample => [
        `${name}_bucket`,
        `${labels},le="${Number.isInteger(le) ? le.toFixed(1) : String(le)}"`,
        this.counts[i] ?? 0,
      ]),
      [`${name}_bucket`, `${labels},le="+Inf"`, this.count],
      [`${name}_count`, labels, this.count],
      [`${name}_sum`, labels, this.sum],
    ];
  }
}
