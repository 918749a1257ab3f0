// Step 11, smokeTest: one chat completion against the new server, from the head (the endpoint listens on the
// cluster network, which the control host may not reach). Its command, its judge and its plan entry; the
// supervisor's one-token probe runs the same command and judge with a short timeout. It must answer 200 with a chat
// completion that generated at least one token (parsers/chat-completion.ts); the text it got is reported, and may
// be empty (a tiny model's short answer can decode to ""), and tokens/s is recorded. Pure.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { readChatCompletion } from '../parsers/chat-completion.js';
import { redactedTail, redactText } from '../shared/secrets.js';
import type { ExecResult } from '../ssh/executor.js';
import type { DeploySpec } from '../config/schema.js';
import { baseUrl, smokeCommand, smokeRequestTimeoutS, smokeTimingMarker } from '../host-commands/launch.js';
import type { StepCommand } from '../host-commands/step-command.js';
import { plannedRun, type PlanHost, type PlannedStep } from './plan-entry.js';

export interface SmokeTestResult {
  text: string;
  completionTokens: number;
  seconds: number;
  tokensPerSecond: number;
}

/** Where the chat completion goes: the head's endpoint on the cluster network. */
export const chatUrl = (clusterIp: string, port: number): string =>
  `${baseUrl(clusterIp, port)}/v1/chat/completions`;

/** The request; the header line and the body come on stdin, so neither the key nor the prompt is on a command line. */
export const chatCommands = (url: string, timeoutS: number): StepCommand[] => [
  { name: 'chat', command: smokeCommand(url, timeoutS, smokeTimingMarker), stdin: true },
];

/** What smokeCommand printed: the body, then curl's time and the HTTP status (0 and 0 when the marker is missing). */
export interface TimedReply {
  body: string;
  seconds: number;
  httpStatus: number;
  /** Whether curl's marker was there at all. */
  timed: boolean;
}

/**
 * smokeCommand's output read: curl prints its timing and the status after the body, so one request gives the
 * answer and curl's own timing. The smoke test and a companion's probe read their requests' answers with it.
 */
export function timedReplyOf(stdout: string): TimedReply {
  const markerAt = stdout.lastIndexOf(smokeTimingMarker);
  if (markerAt < 0) return { body: stdout, seconds: 0, httpStatus: 0, timed: false };
  const [timeText = '', statusText = ''] = stdout
    .slice(markerAt + smokeTimingMarker.length)
    .trim()
    .split('\n');
  return {
    body: stdout.slice(0, markerAt),
    seconds: Number(timeText),
    httpStatus: Number(statusText),
    timed: true,
  };
}

/** What the chat completion's answer says: the text, its tokens and tokens/s; else the smoke test's failure. */
export function judgeChat(
  res: ExecResult,
  { host, url, secrets }: { host: string; url: string; secrets: readonly string[] },
): SmokeTestResult {
  // What the server or curl said, redacted before it is cut (a cut secret no longer matches).
  const said = (text: string) => redactedTail(text, secrets, 1024);
  const fail = (message: string, details: Record<string, unknown>, nonRetryable = false) =>
    ApplicationFailure.create({
      type: FailureType.smokeTestFailed,
      message: redactText(`Smoke test on ${host} (POST ${url}): ${message}`, secrets),
      details: [{ host, url, ...details }],
      nonRetryable,
    });
  if (res.exitCode !== 0) {
    throw fail(`curl failed (exit ${res.exitCode}): ${said(res.stderr.trim())}`, { exitCode: res.exitCode });
  }
  const { body: payload, seconds, httpStatus } = timedReplyOf(res.stdout);
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

/** smokeTest on the head, as `liftoff plan` shows it. */
export function smokePlan(spec: DeploySpec, head: PlanHost): PlannedStep {
  const url = chatUrl(head.clusterIp, spec.serve.port);
  return {
    step: 'smokeTest',
    intent: [
      `one chat completion from ${spec.serve.model} at ${url}: ${JSON.stringify(spec.smoke.prompt)}, at most ${spec.smoke.maxTokens} tokens`,
    ],
    commands: [plannedRun(chatCommands(url, smokeRequestTimeoutS))],
  };
}
