// The one reading of a chat completion's answer (the smoke test's and the supervisor's probe's): a 200 chat
// completion with at least one completion token serves, whatever its text; the text is the answer, else the
// reasoning (vLLM 0.32's `reasoning`, older `reasoning_content`).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readChatCompletion } from '../../src/parsers/chat-completion.js';

const completion = (message: Record<string, unknown>, completionTokens?: unknown): string =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'length' }],
    ...(completionTokens !== undefined
      ? { usage: { prompt_tokens: 5, completion_tokens: completionTokens, total_tokens: 6 } }
      : {}),
  });

describe('readChatCompletion', () => {
  it('reads the answer and its token count', () => {
    assert.deepEqual(readChatCompletion(completion({ content: 'ready', reasoning: null }, 1), 200), {
      ok: true,
      text: 'ready',
      completionTokens: 1,
    });
  });

  it("reads a reasoning model's text under message.reasoning (vLLM 0.32, content null)", () => {
    assert.deepEqual(readChatCompletion(completion({ content: null, reasoning: 'Okay, the user' }, 4), 200), {
      ok: true,
      text: 'Okay, the user',
      completionTokens: 4,
    });
  });

  it('reads the older reasoning_content too, and prefers a non-blank answer to either', () => {
    const older = readChatCompletion(completion({ content: '', reasoning_content: 'Hmm' }, 1), 200);
    assert.deepEqual(older, { ok: true, text: 'Hmm', completionTokens: 1 });
    const both = readChatCompletion(completion({ content: 'yes', reasoning: 'Hmm' }, 3), 200);
    assert.deepEqual(both, { ok: true, text: 'yes', completionTokens: 3 });
  });

  it('a token that decodes to "" still serves: judged by tokens, not text', () => {
    assert.deepEqual(readChatCompletion(completion({ content: '', reasoning: null }, 1), 200), {
      ok: true,
      text: '',
      completionTokens: 1,
    });
  });

  it('no generated token does not serve, whatever the text says', () => {
    for (const tokens of [0, undefined, '1', 0.5]) {
      const r = readChatCompletion(completion({ content: 'ready' }, tokens), 200);
      assert.equal(r.ok, false, JSON.stringify(tokens));
      assert.ok(!r.ok);
      assert.match(r.problem, /^the completion generated no tokens \(usage\.completion_tokens is /);
      assert.equal(r.retryable, true);
    }
  });

  it('a 200 that is not a chat completion is named, and quoted', () => {
    for (const payload of ['{}', '[]', '{"choices":[]}', '{"choices":[{"message":"hi"}]}', 'null']) {
      const r = readChatCompletion(payload, 200);
      assert.ok(!r.ok, payload);
      assert.equal(r.problem, 'the answer is not a chat completion (no choices[0].message)');
      assert.equal(r.quote, payload);
    }
  });

  it('an answer that is not JSON is named with its status', () => {
    const r = readChatCompletion('<html>Bad Gateway</html>\n', 502);
    assert.deepEqual(r, {
      ok: false,
      problem: 'HTTP 502, the answer is not JSON',
      quote: '<html>Bad Gateway</html>',
      retryable: true,
    });
  });

  it("quotes a refusal's message; only a passing condition's status is retryable", () => {
    const error = JSON.stringify({ object: 'error', message: 'EngineCore encountered an issue.', code: 500 });
    assert.deepEqual(readChatCompletion(error, 500), {
      ok: false,
      problem: 'HTTP 500',
      quote: 'EngineCore encountered an issue.',
      retryable: false,
    });
    const busy = readChatCompletion(JSON.stringify({ error: { message: 'Too many requests' } }), 429);
    assert.deepEqual(busy, { ok: false, problem: 'HTTP 429', quote: 'Too many requests', retryable: true });
    const bare = readChatCompletion('{"detail":"Not Found"}', 404);
    assert.deepEqual(bare, {
      ok: false,
      problem: 'HTTP 404',
      quote: '{"detail":"Not Found"}',
      retryable: false,
    });
  });
});
