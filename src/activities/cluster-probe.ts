// One probe round of the supervisor in one (local) activity: the head's probes (probeHead below) and every
// worker's Ray container, in parallel, over one SSH pool, so a worker behind the head as its jump host rides the
// head's connection (one handshake per host), and a round costs one workflow task instead of an activity task
// per host and a workflow task per result. The connections are the worker's (ssh-context.ts), kept open at least
// until the next round. Each host's outcome stays its own: a host that cannot be reached is
// reported with the error, never failing the others, so the workflow still counts each against its
// unreachable window. The spec's companions are probed in the same round, each over its host's connection beside
// that host's own probes; their outcomes come back apart, so a companion's failure never fails the main round.
import type { HostRef } from '../config/targets.js';
import { companionProbeTimeoutS } from '../host-commands/companions.js';
import { baseUrl, inspectContainerCommand, rayStatusCommand } from '../host-commands/launch.js';
import type { StepCommand } from '../host-commands/step-command.js';
import { judgeContainer } from '../parsers/container-state.js';
import { judgeRayStatus } from '../parsers/ray-status.js';
import { redactedTail } from '../shared/secrets.js';
import { SshConnectError, toFailureDetails } from '../ssh/errors.js';
import type { ExecResult, SshSession } from '../ssh/executor.js';
import { sh, type RemoteCommand } from '../ssh/quote.js';
import { containerSecrets, containerStateOf, inspectContainer, type ContainerState } from './docker.js';
import { secretValues } from './secrets.js';
import { probeCompanionOn, type CompanionInput, type CompanionProbe } from './companions.js';
import { runCommands } from './run-commands.js';
import { chatRequest } from './smoke.js';
import { onHosts } from './ssh-context.js';
import type { ProbeCheck, ProbeName, ProbeServingInput } from './types.js';

export interface ProbeServingClusterInput {
  head: ProbeServingInput;
  workers: HostRef[];
  /** The container that must run on every worker: Ray's, or (serve.backend multiproc) the host's rank. */
  container: string;
  /**
   * Keep the connections open unused at least this long (a little over the interval), even past the worker's
   * SSH idle time, so a healthy round costs no SSH handshake; unset: the worker's idle time alone.
   */
  keepConnectionsMs?: number;
  /** The spec's companions, each probed on its host (only set when the spec has any). */
  companions?: CompanionInput[];
}

/**
 * One companion's outcome in a round: its probe's verdict, or `unreachable` when its host could not be reached
 * (the host's own window judges that, not the companion's count).
 */
export type CompanionRoundProbe =
  CompanionProbe | { name: string; host: string; unreachable: true; error: string };

export type HostProbe =
  | { host: string; ok: true; checks: ProbeCheck[] }
  /** The host could not be reached (or its probe could not run): why, as the SSH layer or the host said it. */
  | { host: string; ok: false; error: string };

export async function probeServingCluster(
  input: ProbeServingClusterInput,
): Promise<{ hosts: HostProbe[]; companions?: CompanionRoundProbe[] }> {
  const keep = input.keepConnectionsMs !== undefined ? { idleMs: input.keepConnectionsMs } : undefined;
  // The spec's env secrets, which nothing the probes report may show (a server's error body can quote them).
  const secrets = await secretValues(...(input.head.secretEnv ?? []));
  const refs = [input.head.head, ...input.workers];
  return onHosts(
    refs,
    async (open) => {
      const settle = async (ref: HostRef, probe: () => Promise<ProbeCheck[]>): Promise<HostProbe> => {
        try {
          return { host: ref.target.name, ok: true, checks: await probe() };
        } catch (err) {
          const error = redactedTail(toFailureDetails(err).message, secrets, 2048);
          return { host: ref.target.name, ok: false, error };
        }
      };
      const companions = Promise.all(
        (input.companions ?? []).map((c) => probeCompanionIn(c, refs, open, secrets)),
      );
      const hosts = await Promise.all([
        settle(input.head.head, async () => probeHead(await open(input.head.head), input.head, secrets)),
        ...input.workers.map((ref, i) =>
          settle(ref, async () => {
            const state = await inspectContainer(await open(ref), input.container);
            const check = containerCheck(state, input.head.backend, i + 1, input.container);
            return [{ name: 'container' as const, host: ref.target.name, ...check }];
          }),
        ),
      ]);
      if (!input.companions?.length) return { hosts };
      return { hosts, companions: await companions };
    },
    keep,
  );
}

/** How long a companion's probe may take in a round: one request's curl timeout and a little for the rest. */
const companionRoundTimeoutS = companionProbeTimeoutS + 5;

/**
 * A companion's probe over its host's connection (the one this round opened for the host's own probes, found by
 * name: the input's refs are copies). Never throws: a host that cannot be reached makes it `unreachable`.
 */
async function probeCompanionIn(
  input: CompanionInput,
  refs: readonly HostRef[],
  open: (ref: HostRef) => Promise<SshSession>,
  secrets: readonly string[],
): Promise<CompanionRoundProbe> {
  const who = { name: input.companion.name, host: input.host.target.name };
  const ref = refs.find((r) => r.target.name === who.host);
  if (!ref) return { ...who, ok: false, running: false, error: `no host ${who.host} in this cluster` };
  let timer: NodeJS.Timeout | undefined;
  // Bounded, so a companion that hangs never holds the main model's verdict past the round's own timeout.
  const late = new Promise<CompanionRoundProbe>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({ ...who, ok: false, running: true, error: `no answer within ${companionRoundTimeoutS}s` }),
      companionRoundTimeoutS * 1000,
    );
  });
  try {
    return await Promise.race([probeCompanionOn(await open(ref), { ...input, host: ref }), late]);
  } catch (err) {
    const error = redactedTail(toFailureDetails(err).message, secrets, 2048);
    if (err instanceof SshConnectError) return { ...who, unreachable: true, error };
    return { ...who, ok: false, running: true, error };
  } finally {
    clearTimeout(timer);
  }
}

// The head's probes, in one round trip over its SSH session: the Ray container runs, `/health` answers 200, a real
// one-token completion comes back within a short timeout (a server can be healthy and still unable to generate),
// and `ray status` shows the nodes and GPUs the launch verified. Each read is bounded on the host (curl's
// --max-time, `timeout` around the docker reads), so one that hangs only costs its own bound. A trip whose
// sections cannot be read is asked again one read at a time. The workflow decides what a failed round means; this
// only observes.
const healthTimeoutS = 5;
/** The docker reads' bound on the host: a daemon that hangs fails its check, not the whole trip. */
const dockerReadTimeoutS = 20;

/**
 * Each probe is judged on its own; a lost connection throws, so the workflow counts the head against its
 * unreachable window. What a check reports is redacted with `configured` (the spec's env secrets), the
 * container's env secrets and the API key.
 */
async function probeHead(
  session: SshSession,
  input: ProbeServingInput,
  configured: readonly string[],
): Promise<ProbeCheck[]> {
  const host = input.head.target.name;
  const url = baseUrl(input.clusterIp, input.port);
  const chat = await chatRequest({ ...input, prompt: 'ping', maxTokens: 1 }, input.completionTimeoutS);
  const inspect: StepCommand = {
    name: 'inspect',
    command: sh`timeout ${dockerReadTimeoutS} ${inspectContainerCommand(input.container)}`,
  };
  const health: StepCommand = { name: 'health', command: healthCommand(url) };
  const ray: StepCommand = {
    name: 'ray-status',
    command: sh`timeout ${dockerReadTimeoutS} ${rayStatusCommand(input.container)}`,
  };
  // A multiproc cluster has no Ray: its ranks are judged by their containers, each on its own host.
  const commands = [inspect, health, ...chat.commands, ...(input.backend === 'multiproc' ? [] : [ray])];
  const started = Date.now();
  const answers = await runCommands(session, commands, {
    timeoutMs: (2 * dockerReadTimeoutS + healthTimeoutS + 30) * 1000 + chat.timeoutMs,
    stdin: chat.stdin,
    secrets: [...configured, ...chat.secrets],
  }).catch((err: unknown) => {
    if (err instanceof SshConnectError) throw err;
    return new Map<string, ExecResult>();
  });
  const tripMs = Date.now() - started;
  const answer = async (c: StepCommand): Promise<ExecResult> =>
    answers.get(c.name) ??
    session.exec(c.command, {
      timeoutMs: chat.commands.includes(c) ? chat.timeoutMs : (dockerReadTimeoutS + 10) * 1000,
      check: false,
      ...(c.stdin ? { stdin: chat.stdin } : {}),
      secrets: [...configured, ...chat.secrets],
    });

  let secrets: string[] = [...configured, ...chat.secrets];
  const checks: ProbeCheck[] = [];
  const probe = async (name: ProbeName, body: () => Promise<Omit<ProbeCheck, 'name' | 'host'>>) => {
    let seen: Omit<ProbeCheck, 'name' | 'host'>;
    try {
      seen = await body();
    } catch (err) {
      if (err instanceof SshConnectError) throw err;
      seen = { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    checks.push({
      name,
      host,
      latencyMs: tripMs,
      ...seen,
      ...(seen.error !== undefined ? { error: redactedTail(seen.error, secrets, 2048) } : {}),
      ...(seen.detail !== undefined ? { detail: redactedTail(seen.detail, secrets, 2048) } : {}),
    });
  };
  await probe('container', async () => {
    const state = containerStateOf(await answer(inspect), input.container, host);
    secrets = [...secrets, ...containerSecrets(state)];
    return containerCheck(state, input.backend, 0, input.container);
  });
  await probe('health', async () => healthVerdict(await answer(health)));
  await probe('completion', async () => {
    const r = chat.judge(await answer(chat.commands[0] as StepCommand));
    return {
      ok: true,
      ...(r.seconds > 0 ? { latencyMs: Math.round(r.seconds * 1000) } : {}),
      detail: `${r.completionTokens} token(s)`,
    };
  });
  if (input.backend === 'multiproc') return checks;
  await probe('rayStatus', async () => {
    const verdict = judgeRayStatus(
      await answer(ray),
      { nodes: input.expectedNodes, gpus: input.expectedGpus },
      { host, container: input.container },
    );
    if (!('seen' in verdict)) return { ok: false, error: verdict.message };
    const { nodes, gpus } = verdict.seen;
    const detail = `${nodes} of ${input.expectedNodes} nodes, ${gpus} of ${input.expectedGpus} GPUs`;
    return verdict.ok ? { ok: true, detail } : { ok: false, detail, error: verdict.message };
  });
  return checks;
}

/** The container probe's verdict; a failure names the Ray container, or (multiproc) the host's rank. */
function containerCheck(
  state: ContainerState,
  backend: 'multiproc' | undefined,
  rank: number,
  container: string,
): { ok: boolean; error?: string } {
  const what = backend === 'multiproc' ? `rank ${rank}'s container` : 'the Ray container';
  const verdict = judgeContainer(state, `${what} ${container}`);
  return verdict.ok ? { ok: true } : { ok: false, error: verdict.message };
}

/** `/health`: its status and time, as curl prints them. */
function healthCommand(url: string): RemoteCommand {
  return sh`curl -sS --max-time ${healthTimeoutS} -o /dev/null -w ${'%{http_code} %{time_total}'} ${`${url}/health`}`;
}

/** 200 within a few seconds; anything else is the error, as curl or the server said it. */
function healthVerdict(res: ExecResult): Omit<ProbeCheck, 'name' | 'host'> {
  const [code = '', seconds = ''] = res.stdout.trim().split(' ');
  const latencyMs = Number.isFinite(Number(seconds)) ? Math.round(Number(seconds) * 1000) : undefined;
  if (res.exitCode === 0 && code === '200')
    return { ok: true, ...(latencyMs !== undefined ? { latencyMs } : {}) };
  const said = res.stderr.trim().split('\n')[0] ?? '';
  return {
    ok: false,
    error:
      res.exitCode === 0
        ? `GET /health answered HTTP ${code}`
        : `GET /health failed (curl exit ${res.exitCode}${said ? `: ${said}` : ''})`,
  };
}
