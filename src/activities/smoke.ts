// The smoke test's activity: the step's command and judge (src/steps/smoke.ts), run on the head.
import { authorizationHeader } from './health.js';
import { resolveValue } from './secrets.js';
import type { ExecResult, SshSession } from '../ssh/executor.js';
import type { StepCommand } from '../host-commands/step-command.js';
import { onHost } from './ssh-context.js';
import { answerOf, runCommands } from './run-commands.js';
import { smokeRequestTimeoutS } from '../host-commands/launch.js';
import { chatCommands, chatUrl, judgeChat, type SmokeTestResult } from '../steps/smoke.js';
import type { SmokeTestInput } from './types.js';

export async function smokeTest(input: SmokeTestInput): Promise<SmokeTestResult> {
  return onHost(input.head, (session) => chatCompletion(session, input, smokeRequestTimeoutS));
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
  const request = await chatRequest(input, timeoutS);
  const answers = await runCommands(session, request.commands, {
    timeoutMs: request.timeoutMs,
    stdin: request.stdin,
    secrets: request.secrets,
  });
  return request.judge(answerOf(answers, 'chat'));
}

/**
 * One chat completion as commands to run on the head (the `chat` command takes `stdin`: the key's header line
 * and the body) and the judge of its answer; for a caller that sends it beside other reads in one round trip.
 */
export async function chatRequest(
  input: SmokeTestInput,
  timeoutS: number,
): Promise<{
  commands: StepCommand[];
  stdin: string;
  secrets: string[];
  timeoutMs: number;
  judge: (answer: ExecResult) => SmokeTestResult;
}> {
  const url = chatUrl(input.clusterIp, input.port);
  const body = JSON.stringify({
    model: input.model,
    messages: [{ role: 'user', content: input.prompt }],
    max_tokens: input.maxTokens,
    stream: false,
  });
  const apiKey = await resolveValue('serve.env.VLLM_API_KEY', input.apiKey);
  const secrets = apiKey ? [apiKey] : [];
  return {
    commands: chatCommands(url, timeoutS),
    stdin: `${authorizationHeader(apiKey).trimEnd()}\n${body}`,
    secrets,
    timeoutMs: (timeoutS + 15) * 1000,
    judge: (answer) => judgeChat(answer, { host: input.head.target.name, url, secrets }),
  };
}
