// A companion's two steps on its host: start its container (the deploy's startCompanions, the supervisor's restart)
// and probe it with real work (the readiness wait and every supervisor round). Their named commands, the judges of
// what they returned, and the plan's entry. Pure.
import { ApplicationFailure } from '@temporalio/common';
import { companionModel, startOrder, type CompanionSpec } from '../config/companions.js';
import type { DeploySpec } from '../config/schema.js';
import { FailureType } from '../shared/failures.js';
import { readChatCompletion } from '../parsers/chat-completion.js';
import { dockerSaid, listenerOf } from '../parsers/host-output.js';
import { sh } from '../ssh/quote.js';
import { judgeContainer, parseContainerInspect, type ContainerLook } from '../parsers/container-state.js';
import { isObject, redactedTail } from '../shared/secrets.js';
import {
  companionGetCommand,
  companionProbeTimeoutS,
  companionProbeUrl,
  companionRunCommand,
  type CompanionInput,
} from '../host-commands/companions.js';
import type { EnvTransport } from '../host-commands/env-transport.js';
import {
  baseUrl,
  healthCommand,
  inspectContainerCommand,
  removeContainerCommand,
  smokeCommand,
  smokeTimingMarker,
} from '../host-commands/launch.js';
import { listenerCommand } from '../host-commands/multiproc.js';
import { answerOf, type Answers, type StepCommand } from '../host-commands/step-command.js';
import { planTransport, plannedRun, type PlannedStep } from './plan-entry.js';
import type { ExecResult } from '../ssh/executor.js';
import { companionInput } from '../host-commands/step-inputs.js';
import type { PlanHost } from './plan-entry.js';
import { timedReplyOf, type TimedReply } from './smoke.js';

/** Remove what holds the name (an earlier run's container), see that nothing listens on the port, then run it. */
export function startCommands(input: CompanionInput, transport: EnvTransport): StepCommand[] {
  return [
    { name: 'remove', command: removeContainerCommand(input.container), change: true },
    // Prints what listens, and succeeds, only when something does: the run goes ahead only when it failed.
    { name: 'listening', command: sh`${listenerCommand(input.companion.port)} | grep .` },
    {
      name: 'run',
      command: companionRunCommand(input, transport),
      change: true,
      stdin: true,
      unlessOk: 'listening',
      when: `nothing listens on port ${input.companion.port}`,
    },
  ];
}

/** What the start's trip says: the container's id, else the failure that names the field to fix. */
export function judgeStart(answers: Answers, input: CompanionInput, secrets: readonly string[]): string {
  const { companion } = input;
  const host = input.host.target.name;
  const listening = answers.get('listening');
  const held = listening?.exitCode === 0 ? (listenerOf(listening.stdout) ?? 'a process') : undefined;
  if (held !== undefined) {
    throw ApplicationFailure.create({
      type: FailureType.companionFailed,
      message: `companion ${companion.name}: port ${companion.port} is in use on ${host} (${held}); its server could not listen there. Stop what listens on it, or pick another companions[].port.`,
      nonRetryable: true,
      details: [{ host, companion: companion.name, port: companion.port, listener: held }],
    });
  }
  const started = answerOf(answers, 'run');
  if (started.exitCode !== 0) {
    const said = redactedTail(dockerSaid(started.stderr.trim() || started.stdout.trim()), secrets, 2048);
    throw ApplicationFailure.create({
      type: FailureType.companionFailed,
      message: `companion ${companion.name}: docker run of ${input.container} on ${host} failed (exit ${started.exitCode}): ${said} Fix companions[].image, command or volumes and deploy again.`,
      nonRetryable:
        /No such image|Unable to find image|invalid|unknown (shorthand )?flag|could not select device driver/.test(
          said,
        ),
      details: [{ host, companion: companion.name, exitCode: started.exitCode }],
    });
  }
  return started.stdout.trim().split('\n').pop() ?? '';
}

/** The container's state, then the probe's request(s): one round trip. */
export function probeCommands(input: CompanionInput): StepCommand[] {
  const { companion, clusterIp } = input;
  const state: StepCommand = { name: 'state', command: inspectContainerCommand(input.container) };
  if (companion.probe === 'health') {
    return [
      state,
      { name: 'health', command: healthCommand(baseUrl(clusterIp, companion.port)) },
      {
        name: 'models',
        command: companionGetCommand(`${baseUrl(clusterIp, companion.port)}/v1/models`),
        stdin: true,
      },
    ];
  }
  const url = companionProbeUrl(clusterIp, companion.port, companion.probe);
  return [
    state,
    { name: 'request', command: smokeCommand(url, companionProbeTimeoutS, smokeTimingMarker), stdin: true },
  ];
}

/** One probe's verdict: it did the work (and how fast), or why not, and whether its container still runs. */
export type CompanionVerdict =
  { ok: true; latencyMs: number; detail: string } | { ok: false; running: boolean; error: string };

/** curl's answer (timedReplyOf), or why there is none. */
function replyOf(res: ExecResult): TimedReply | string {
  if (res.exitCode !== 0)
    return `curl failed (exit ${res.exitCode}): ${res.stderr.trim() || res.stdout.trim()}`;
  const reply = timedReplyOf(res.stdout);
  return reply.timed ? reply : 'no answer';
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

type Work = { done: true; detail: string } | { done: false; problem: string };
const done = (detail: string): Work => ({ done: true, detail });
const notDone = (problem: string): Work => ({ done: false, problem });

/** What a 200 of each kind must hold to count as the work done. */
function workDone(kind: CompanionSpec['probe'], body: string): Work {
  const json = parsed(body);
  const data = isObject(json) ? json.data : undefined;
  switch (kind) {
    case 'embeddings': {
      const first: unknown = Array.isArray(data) ? data[0] : undefined;
      const vector = isObject(first) ? first.embedding : undefined;
      if (!Array.isArray(vector) || vector.length === 0 || typeof vector[0] !== 'number')
        return notDone('the answer holds no embedding (data[0].embedding)');
      return done(`an embedding of ${vector.length} dimensions`);
    }
    case 'rerank': {
      const results = isObject(json) ? json.results : undefined;
      const scored = Array.isArray(results)
        ? results.filter((r) => isObject(r) && typeof r.relevance_score === 'number')
        : [];
      if (scored.length !== 2)
        return notDone('the answer does not score both documents (results[].relevance_score)');
      return done('2 documents scored');
    }
    case 'chat': {
      const reading = readChatCompletion(body, 200);
      return reading.ok ? done(`${reading.completionTokens} token`) : notDone(reading.problem);
    }
    case 'health': {
      const ids = Array.isArray(data) ? data.filter(isObject).map((m) => m.id) : [];
      if (ids.length === 0) return notDone('/v1/models lists no model');
      return done(
        `serves ${ids
          .filter((id) => typeof id === 'string')
          .slice(0, 3)
          .join(', ')}`,
      );
    }
  }
}

/** Judges a probe's trip: an answer that shows the work (a vector, two scores, a token, a model list) passes. */
export function judgeProbe(
  answers: Answers,
  input: CompanionInput,
  secrets: readonly string[],
): CompanionVerdict {
  const { companion } = input;
  const said = (text: string) => redactedTail(text, secrets, 512);
  const stateAnswer = answerOf(answers, 'state');
  const look = stateOf(stateAnswer);
  const container = judgeContainer(look, `its container ${input.container}`);
  const running = container.ok;
  const fail = (error: string): CompanionVerdict => ({ ok: false, running, error: said(error) });
  if (!container.ok) return fail(container.message);
  if (companion.probe === 'health') {
    const health = answerOf(answers, 'health');
    if (health.exitCode !== 0 || health.stdout.trim() !== '200')
      return fail(`/health answered ${health.stdout.trim() || `nothing (${health.stderr.trim()})`}`);
  }
  const reply = replyOf(answerOf(answers, companion.probe === 'health' ? 'models' : 'request'));
  if (typeof reply === 'string') return fail(reply);
  if (reply.httpStatus !== 200) return fail(`HTTP ${reply.httpStatus}: ${reply.body.trim()}`);
  const work = workDone(companion.probe, reply.body);
  if (!work.done) return fail(work.problem);
  const latencyMs = Number.isFinite(reply.seconds) ? Math.round(reply.seconds * 1000) : 0;
  return { ok: true, latencyMs, detail: work.detail };
}

/** `docker inspect`'s answer as the container's look; a failed read counts as not running. */
function stateOf(res: ExecResult): ContainerLook {
  return (res.exitCode === 0 ? parseContainerInspect(res.stdout) : undefined) ?? { running: false };
}

/** startCompanions as `liftoff plan` shows it on `host`: each companion there, in the order the deploy starts them. */
export function companionsPlan(spec: DeploySpec, host: PlanHost): PlannedStep | undefined {
  const here = startOrder(spec.companions).filter((c) => c.host === host.name);
  if (here.length === 0) return undefined;
  const inputs = here.map((c) => companionInput(spec, 'RUN_ID', host, c));
  return {
    step: 'startCompanions',
    // The image and command are in the docker run line below it: the intent says what, when, and how it is judged.
    intent: inputs.map(({ companion: c, container }) => {
      const model = companionModel(c);
      return `start ${c.name} (${container}, ${c.memoryMiB} MiB) after the smoke test; ready when its ${c.probe} probe${model ? ` of ${model}` : ''} at ${companionProbeUrl(host.clusterIp, c.port, c.probe)} does the work`;
    }),
    commands: inputs.flatMap((input) => [
      plannedRun(startCommands(input, planTransport(input.companion.env))),
      plannedRun(probeCommands(input), {
        repeats: `every 5 s until it passes, up to ${input.companion.readyTimeout}`,
      }),
    ]),
  };
}
