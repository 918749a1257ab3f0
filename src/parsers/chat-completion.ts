// What one chat completion's answer says about serving: the one reading of it, shared by the smoke test and the
// supervisor's probe. A server serves when it answers 200 with a well-formed chat completion that generated at
// least one token (usage.completion_tokens >= 1). The text is reported, never judged: a healthy server's one-token
// answer can decode to "" (real vLLM: about 40% of a tiny model's), and a reasoning model's text may sit under
// `message.reasoning` (vLLM 0.32 with --reasoning-parser; content is then null) or `reasoning_content` (older).
import { isObject } from '../shared/secrets.js';

/** Answers that say "not now" rather than "no": timeout, too many requests, a gateway's or a busy server's. */
const transientHttpStatus = new Set([408, 429, 502, 503, 504]);

export type ChatCompletionReading =
  | { ok: true; text: string; completionTokens: number }
  /** `quote` is the server's own words, for the caller to redact and cut before showing them. */
  | { ok: false; problem: string; quote: string; retryable: boolean };

export function readChatCompletion(payload: string, httpStatus: number): ChatCompletionReading {
  const body = payload.trim();
  const refused = (problem: string, quote = body, retryable = true) =>
    ({ ok: false, problem, quote, retryable }) as const;
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return refused(`HTTP ${httpStatus}, the answer is not JSON`);
  }
  if (httpStatus !== 200) {
    const why =
      [field(parsed, 'error', 'message'), field(parsed, 'message')].find((w) => typeof w === 'string') ??
      body;
    // The server answered, and said no: asking again gets the same answer, or none (vLLM's engine that fails a
    // request with 500 has died, and the server shuts down after it). Only the statuses of a passing condition
    // are worth another attempt.
    return refused(`HTTP ${httpStatus}`, why, transientHttpStatus.has(httpStatus));
  }
  const choices = field(parsed, 'choices');
  const message = Array.isArray(choices) ? field(choices[0], 'message') : undefined;
  if (!isObject(message)) {
    return refused('the answer is not a chat completion (no choices[0].message)');
  }
  const tokens = field(parsed, 'usage', 'completion_tokens');
  if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 1) {
    return refused(
      `the completion generated no tokens (usage.completion_tokens is ${JSON.stringify(tokens) ?? 'missing'})`,
    );
  }
  // The answer if there is one, else the reasoning (a short budget may be spent on reasoning alone).
  const text = [message.content, message.reasoning, message.reasoning_content].find(
    (t): t is string => typeof t === 'string' && t.trim() !== '',
  );
  return { ok: true, text: text ?? '', completionTokens: tokens };
}

function field(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) at = isObject(at) ? at[key] : undefined;
  return at;
}
