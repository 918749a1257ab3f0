// The smoke test: one chat completion against the new server, from the head (the endpoint listens on the
// cluster network, which the control host may not reach). It must answer 200 with a chat completion that generated
// at least one token (chat-completion.ts: the probe's judge too); the text it got is reported, and may be empty
// (a tiny model's short answer can decode to ""), and tokens/s is recorded.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { smokeCommand, smokeRequestTimeoutS, smokeTimingMarker } from '../host-commands/launch.js';
import { authorizationHeader, baseUrl } from './health.js';
import { resolveValue } from './secrets.js';
import { redactedTail, redactText } from '../shared/secrets.js';
import type { SshSession } from '../ssh/executor.js';
import { onHost } from './ssh-context.js';
import { readChatCompletion } from './chat-completion.js';
import type { SmokeTestInput, SmokeTestResult } from './types.js';

const requestTimeoutS = smokeRequestTimeoutS;

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
  const reading = readChatCompletion(payload, httpStatus);
  if (!reading.ok) {
    throw fail(`${reading.problem}: ${said(reading.quote)}`, { httpStatus }, !reading.retryable);
  }
  const { text, completionTokens } = reading;
  const safeSeconds = Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
  return {
    text,
    completionTokens,
    seconds: safeSeconds,
    tokensPerSecond: safeSeconds > 0 ? completionTokens / safeSeconds : 0,
  };
}
