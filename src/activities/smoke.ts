// The smoke test's activity: the step's command and judge (src/steps/smoke.ts), run on the head.
import { authorizationHeader } from './health.js';
import { resolveValue } from './secrets.js';
import type { SshSession } from '../ssh/executor.js';
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
  const url = chatUrl(input.clusterIp, input.port);
  const body = JSON.stringify({
    model: input.model,
    messages: [{ role: 'user', content: input.prompt }],
    max_tokens: input.maxTokens,
    stream: false,
  });
  const apiKey = await resolveValue('serve.env.VLLM_API_KEY', input.apiKey);
  const secrets = apiKey ? [apiKey] : [];
  const answers = await runCommands(session, chatCommands(url, timeoutS), {
    timeoutMs: (timeoutS + 15) * 1000,
    stdin: `${authorizationHeader(apiKey).trimEnd()}\n${body}`,
    secrets,
  });
  return judgeChat(answerOf(answers, 'chat'), { host: input.head.target.name, url, secrets });
}
