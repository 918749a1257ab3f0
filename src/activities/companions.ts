// A companion on its host: start its container, and probe it with real work (src/steps/companion.ts holds the
// commands and the judges). The deploy's readiness wait polls probeCompanion; the supervisor's round calls
// probeCompanionOn over the round's own connection.
import { companionModel } from '../config/companions.js';
import {
  companionProbeBody,
  companionProbeTimeoutS,
  type CompanionInput,
} from '../host-commands/companions.js';
import { envTransport } from '../host-commands/env-transport.js';
import type { SshSession } from '../ssh/executor.js';
import {
  judgeProbe,
  judgeStart,
  probeCommands,
  startCommands,
  type CompanionVerdict,
} from '../steps/companion.js';
import { containerLogTail } from './docker.js';
import { heartbeat } from './heartbeat.js';
import { authorizationHeader } from './health.js';
import { runCommands } from './run-commands.js';
import { resolveEnv, resolveValue, secretsOf, secretValues } from './secrets.js';
import { onHost } from './ssh-context.js';

export type { CompanionInput } from '../host-commands/companions.js';

/** One probe of one companion: the verdict, and the container's last lines when it no longer runs. */
export type CompanionProbe = CompanionVerdict & { name: string; host: string; logTail?: string };

export interface CompanionStarted {
  host: string;
  container: string;
  containerId: string;
}

export async function startCompanion(input: CompanionInput): Promise<CompanionStarted> {
  const resolved = await resolveEnv(input.companion.env);
  const transport = envTransport(resolved.values, resolved.secretNames);
  const secrets = secretsOf(resolved);
  return onHost(input.host, async (session) => {
    heartbeat({ host: input.host.target.name, phase: 'starting', container: input.container });
    const answers = await runCommands(session, startCommands(input, transport), {
      timeoutMs: 150_000,
      stdin: transport.stdin,
      secrets,
    });
    const containerId = judgeStart(answers, input, secrets);
    return { host: input.host.target.name, container: input.container, containerId };
  });
}

export async function probeCompanion(input: CompanionInput): Promise<CompanionProbe> {
  return onHost(input.host, (session) => probeCompanionOn(session, input));
}

/** The probe over an open session: the container's state and the request, in one round trip. */
export async function probeCompanionOn(session: SshSession, input: CompanionInput): Promise<CompanionProbe> {
  const { companion } = input;
  const apiKey = await resolveValue(
    `companions.${companion.name}.env.VLLM_API_KEY`,
    companion.env.VLLM_API_KEY,
  );
  const secrets = [...(await secretValues(companion.env)), ...(apiKey ? [apiKey] : [])];
  const body = companionProbeBody(companion.probe, companionModel(companion));
  const answers = await runCommands(session, probeCommands(input), {
    timeoutMs: (2 * companionProbeTimeoutS + 15) * 1000,
    stdin: `${authorizationHeader(apiKey).trimEnd()}\n${body}`,
    secrets,
  });
  const verdict = judgeProbe(answers, input, secrets);
  const who = { name: companion.name, host: input.host.target.name };
  if (verdict.ok || verdict.running) return { ...verdict, ...who };
  const logTail = await containerLogTail(session, input.container, secrets);
  return { ...verdict, ...who, ...(logTail ? { logTail } : {}) };
}
