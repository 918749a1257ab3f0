// The supervisor's probes of the head of a serving cluster, over one SSH session (part of the round in
// cluster-probe.ts): the Ray container runs, `/health` answers 200, a real one-token completion comes back
// within a short timeout (a server can be healthy and still unable to generate), and `ray status` shows the
// nodes and GPUs the launch verified. The workflow decides what a failed round means; this only observes. A
// head that cannot be reached throws, so the workflow counts it against its unreachable window.
import { judgeContainer } from '../parsers/container-state.js';
import { redactedTail } from '../shared/secrets.js';
import type { SshSession } from '../ssh/executor.js';
import { SshConnectError } from '../ssh/errors.js';
import { sh } from '../ssh/quote.js';
import { containerSecrets, inspectContainer, type ContainerState } from './docker.js';
import { baseUrl } from '../host-commands/launch.js';
import { readRayStatus } from './ray-cluster.js';
import { resolveValue } from './secrets.js';
import { chatCompletion } from './smoke.js';
import type { ProbeCheck, ProbeName, ProbeServingInput } from './types.js';

const healthTimeoutS = 5;

/**
 * The head's probes on an open session: each judged on its own; a lost connection throws (unreachable). What a
 * check reports is redacted with `configured` (the spec's env secrets), the container's env secrets and the API key.
 */
export async function probeHead(
  session: SshSession,
  input: ProbeServingInput,
  configured: readonly string[] = [],
): Promise<ProbeCheck[]> {
  const host = input.head.target.name;
  let secrets: string[] = [...configured];
  const checks: ProbeCheck[] = [];
  // Each probe is judged on its own; only a lost connection ends the round (the host is unreachable).
  const probe = async (name: ProbeName, body: () => Promise<Omit<ProbeCheck, 'name' | 'host'>>) => {
    const started = Date.now();
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
      latencyMs: Date.now() - started,
      ...seen,
      ...(seen.error !== undefined ? { error: redactedTail(seen.error, secrets, 2048) } : {}),
      ...(seen.detail !== undefined ? { detail: redactedTail(seen.detail, secrets, 2048) } : {}),
    });
  };
  await probe('container', async () => {
    const state = await inspectContainer(session, input.container);
    secrets = [...secrets, ...containerSecrets(state)];
    return containerCheck(state, input.backend, 0, input.container);
  });
  const url = baseUrl(input.clusterIp, input.port);
  await probe('health', () => health(session, url));
  await probe('completion', async () => {
    const apiKey = await resolveValue('serve.env.VLLM_API_KEY', input.apiKey);
    if (apiKey) secrets = [...secrets, apiKey];
    const started = Date.now();
    const r = await chatCompletion(
      session,
      { ...input, prompt: 'ping', maxTokens: 1 },
      input.completionTimeoutS,
    );
    return {
      ok: true,
      latencyMs: r.seconds > 0 ? Math.round(r.seconds * 1000) : Date.now() - started,
      detail: `${r.completionTokens} token(s)`,
    };
  });
  // A multiproc cluster has no Ray: its ranks are judged by their containers, each on its own host.
  if (input.backend === 'multiproc') return checks;
  await probe('rayStatus', async () => {
    const verdict = await readRayStatus(session, input.container, {
      nodes: input.expectedNodes,
      gpus: input.expectedGpus,
    });
    if (!('seen' in verdict)) return { ok: false, error: verdict.message };
    const { nodes, gpus } = verdict.seen;
    const detail = `${nodes} of ${input.expectedNodes} nodes, ${gpus} of ${input.expectedGpus} GPUs`;
    return verdict.ok ? { ok: true, detail } : { ok: false, detail, error: verdict.message };
  });
  return checks;
}

/** The container probe's verdict; a failure names the Ray container, or (multiproc) the host's rank. */
export function containerCheck(
  state: ContainerState,
  backend: 'multiproc' | undefined,
  rank: number,
  container: string,
): { ok: boolean; error?: string } {
  const what = backend === 'multiproc' ? `rank ${rank}'s container` : 'the Ray container';
  const verdict = judgeContainer(state, `${what} ${container}`);
  return verdict.ok ? { ok: true } : { ok: false, error: verdict.message };
}

/** `/health`: 200 within a few seconds; anything else is the error, as curl or the server said it. */
async function health(session: SshSession, url: string): Promise<Omit<ProbeCheck, 'name' | 'host'>> {
  const res = await session.exec(
    sh`curl -sS --max-time ${healthTimeoutS} -o /dev/null -w ${'%{http_code} %{time_total}'} ${`${url}/health`}`,
    { timeoutMs: (healthTimeoutS + 10) * 1000, check: false },
  );
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
