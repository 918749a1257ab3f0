// The one reading of a chat completion's answer (the smoke test's and the supervisor's probe's): a 200 chat
// completion with at least one completion token serves, whatever its text; the text is the answer, else the
// reasoning (vLLM 0.32's `reasoning`, older `reasoning_content`).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readChatCompletion } from '../../src/activities/chat-completion.js';

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
  // What serves: the text read, and the token count that decides.
  for (const [what, message, tokens, text] of [
    ['the answer and its token count', { content: 'ready', reasoning: null }, 1, 'ready'],
    [
      "a reasoning model's text under message.reasoning (vLLM 0.32, content null)",
      { content: null, reasoning: 'Okay, the user' },
      4,
      'Okay, the user',
    ],
    ['the older reasoning_content under a blank answer', { content: '', reasoning_content: 'Hmm' }, 1, 'Hmm'],
    ['a non-blank answer, preferred to the reasoning', { content: 'yes', reasoning: 'Hmm' }, 3, 'yes'],
    [
      'a token that decodes to "": it serves, judged by tokens, not text',
      { content: '', reasoning: null },
      1,
      '',
    ],
  ] as const) {
    it(`reads ${what}`, () => {
      assert.deepEqual(readChatCompletion(completion(message, tokens), 200), {
        ok: true,
        text,
        completionTokens: tokens,
      });
    });
  }

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

  // What does not serve and says why: the problem named, the answer quoted, and whether trying again can help
  // (only a passing condition's status is retryable).
  for (const [what, answer, status, problem, quote, retryable] of [
    [
      'an answer that is not JSON, named with its status',
      '<html>Bad Gateway</html>\n',
      502,
      'HTTP 502, the answer is not JSON',
      '<html>Bad Gateway</html>',
      true,
    ],
    [
      'a refusal, quoting its message',
      JSON.stringify({ object: 'error', message: 'EngineCore encountered an issue.', code: 500 }),
      500,
      'HTTP 500',
      'EngineCore encountered an issue.',
      false,
    ],
    [
      'a busy server, retryable',
      JSON.stringify({ error: { message: 'Too many requests' } }),
      429,
      'HTTP 429',
      'Too many requests',
      true,
    ],
    [
      'a refusal with no message, quoted whole',
      '{"detail":"Not Found"}',
      404,
      'HTTP 404',
      '{"detail":"Not Found"}',
      false,
    ],
  ] as const) {
    it(`reads ${what}`, () => {
      assert.deepEqual(readChatCompletion(answer, status), { ok: false, problem, quote, retryable });
    });
  }
});
