// The smoke test: one chat completion against the new server, from the head (the endpoint listens on the
// cluster network, which the control host may not reach). It must return text; tokens/s is recorded.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { smokeCommand, smokeRequestTimeoutS, smokeTimingMarker } from '../host-commands/launch.js';
import { authorizationHeader, baseUrl } from './health.js';
import { resolveValue } from './secrets.js';
import { redactedTail, redactText } from '../shared/secrets.js';
import type { SshSession } from '../ssh/executor.js';
import { onHost } from './ssh-context.js';
import type { SmokeTestInput, SmokeTestResult } from './types.js';

const requestTimeoutS = smokeRequestTimeoutS;
/** Answers that say "not now" rather than "no": timeout, too many requests, a gateway's or a busy server's. */
const transientHttpStatus = new Set([408, 429, 502, 503, 504]);

interface ChatCompletion {
  choices?: Array<{ message?: { content?: unknown; reasoning_content?: unknown } }>;
  usage?: { completion_tokens?: unknown };
  error?: { message?: unknown };
  message?: unknown;
}

// curl prints this after the body, so one request gives both the answer and curl's own timing.
const timingMarker = smokeTimingMarker;

export async function smokeTest(input: SmokeTestInput): Promise<SmokeTestResult> {
  return onHost(input.head, (session) => chatCompletion(session, input, requestTimeoutS));
}

/**
 * One chat completion over an open session to the head, bounded by `timeoutS`: the smoke test's, and the
 * supervisor's one-token probe (a short timeout: a server that is healthy but cannot generate fails it).
 */
export async function chatCompletion(
  session: SshSession,
  input: SmokeTestInput,
  timeoutS: number,
): Promise<SmokeTestResult> {
  const host = input.head.target.name;
  const url = `${baseUrl(input.clusterIp, input.port)}/v1/chat/completions`;
  const body = JSON.stringify({
    model: input.model,
    messages: [{ role: 'user', content: input.prompt }],
    max_tokens: input.maxTokens,
    stream: false,
  });
  const apiKey = await resolveValue('serve.env.VLLM_API_KEY', input.apiKey);
  const secrets = apiKey ? [apiKey] : [];
  // What the server or curl said, redacted before it is cut (a cut secret no longer matches).
  const said = (text: string) => redactedTail(text, secrets, 1024);
  const fail = (message: string, details: Record<string, unknown>, nonRetryable = false) =>
    ApplicationFailure.create({
      type: FailureType.smokeTestFailed,
      message: redactText(`Smoke test on ${host} (POST ${url}): ${message}`, secrets),
      details: [{ host, url, ...details }],
      nonRetryable,
    });

  const res = await session.exec(smokeCommand(url, timeoutS, timingMarker), {
    timeoutMs: (timeoutS + 15) * 1000,
    check: false,
    stdin: `${authorizationHeader(apiKey).trimEnd()}\n${body}`,
    secrets,
  });
  if (res.exitCode !== 0) {
    throw fail(`curl failed (exit ${res.exitCode}): ${said(res.stderr.trim())}`, {
      exitCode: res.exitCode,
    });
  }
  const markerAt = res.stdout.lastIndexOf(timingMarker);
  const payload = markerAt >= 0 ? res.stdout.slice(0, markerAt) : res.stdout;
  const [timeText = '', statusText = ''] = (
    markerAt >= 0 ? res.stdout.slice(markerAt + timingMarker.length) : ''
  )
    .trim()
    .split('\n');
  const seconds = Number(timeText);
  const httpStatus = Number(statusText);
  let parsed: ChatCompletion;
  try {
    parsed = JSON.parse(payload) as ChatCompletion;
  } catch {
    throw fail(`HTTP ${httpStatus}, the answer is not JSON: ${said(payload.trim())}`, { httpStatus });
  }
  if (httpStatus !== 200) {
    const why = [parsed.error?.message, parsed.message].find((m) => typeof m === 'string') ?? payload.trim();
    // The server answered, and said no: asking again gets the same answer, or none (vLLM's engine that fails a
    // request with 500 has died, and the server shuts down after it). Only the statuses of a passing condition
    // are worth another attempt.
    throw fail(`HTTP ${httpStatus}: ${said(why)}`, { httpStatus }, !transientHttpStatus.has(httpStatus));
  }
  const message = parsed.choices?.[0]?.message;
  const content = typeof message?.content === 'string' ? message.content : '';
  // Reasoning models may spend a short budget on reasoning alone; that still proves generation works.
  const reasoning = typeof message?.reasoning_content === 'string' ? message.reasoning_content : '';
  const text = content.trim() !== '' ? content : reasoning;
  if (text.trim() === '') {
    throw fail(`the completion returned no text: ${said(payload.trim())}`, { httpStatus });
  }
  const completionTokens =
    typeof parsed.usage?.completion_tokens === 'number' ? parsed.usage.completion_tokens : 0;
  const safeSeconds = Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
  return {
    text,
    completionTokens,
    seconds: safeSeconds,
    tokensPerSecond: safeSeconds > 0 ? completionTokens / safeSeconds : 0,
  };
}
