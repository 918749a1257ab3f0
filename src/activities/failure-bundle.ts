// The failure bundle: what every host shows at the moment the supervisor declares the cluster lost, collected
// before anything is removed so the relaunch does not erase the evidence. The serve log's tail with the
// exception that caused the failure (vLLM's "see root cause above" wrapper ranks below it), `ray status`,
// who holds the GPUs, the Ray container's state and exit code, its log, and the kernel's OOM lines where the
// login may read them. Never throws: a host that cannot be reached is reported as such.
import { summarizeVllmLog } from '../parsers/vllm-log.js';
import { hostLines } from '../parsers/host-output.js';
import { redactText } from '../shared/secrets.js';
import { tail } from '../shared/text.js';
import { sh, type RemoteCommand } from '../ssh/quote.js';
import { containerLogTailCommand, rayStatusCommand, serveLogTailCommand } from '../host-commands/launch.js';
import { containerSecrets, inspectContainer } from './docker.js';
import { firstLine } from './diagnostics.js';
import { onHost } from './ssh-context.js';
import { secretValues } from './secrets.js';
import type { DiagnosticsInput, FailureBundle, HostBundle, NamedHost } from './types.js';

/** Each part is cut to this much: a bundle from every host must fit in one history event. */
const partBytes = 6 * 1024;
const serveLogLines = 200;
const containerLogLines = 40;
const kernelLines = 20;

async function bundleOf(input: DiagnosticsInput, host: NamedHost): Promise<HostBundle> {
  const errors: string[] = [];
  // The spec's secrets, then the container's own once inspected: every text kept is redacted before it is cut.
  let secrets: string[] = [];
  try {
    return await onHost(host.ref, async (session) => {
      secrets = await secretValues(...(input.secretEnv ?? []));
      let container: HostBundle['container'];
      try {
        const state = await inspectContainer(session, input.container);
        secrets = [...secrets, ...containerSecrets(state)];
        container = {
          exists: state.exists,
          running: state.running,
          ...(state.status !== undefined ? { status: state.status } : {}),
          ...(state.exitCode !== undefined ? { exitCode: state.exitCode } : {}),
        };
      } catch (err) {
        errors.push(`docker inspect ${input.container}: ${firstLine(err, secrets)}`);
      }
      const part = async (what: string, cmd: RemoteCommand) => {
        try {
          const res = await session.exec(cmd, { timeoutMs: 30_000, check: false });
          const text = `${res.stdout}${res.stderr ? (res.stdout ? '\n' : '') + res.stderr : ''}`.trimEnd();
          if (res.exitCode !== 0) errors.push(`${what}: exit code ${res.exitCode}`);
          return redactText(text, secrets);
        } catch (err) {
          errors.push(`${what}: ${firstLine(err, secrets)}`);
          return undefined;
        }
      };
      const isHead = host.name === input.headName;
      const [serveLog, rayStatus, gpuApps, containerLog, kernel] = await Promise.all([
        isHead ? part('serve log', serveLogTailCommand(input.logPath, serveLogLines)) : undefined,
        part('ray status', rayStatusCommand(input.container)),
        part(
          'nvidia-smi',
          sh`nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader`,
        ),
        part('docker logs', containerLogTailCommand(input.container, containerLogLines)),
        // dmesg may be closed to an unprivileged login (kernel.dmesg_restrict): then it is simply left out.
        part(
          'kernel log',
          sh`dmesg 2>/dev/null | grep -aiE ${'out of memory|oom-kill|oom_reaper|killed process'} | tail -n ${kernelLines} | tail -c ${partBytes}; true`,
        ),
      ]);
      const rootException =
        serveLog !== undefined ? summarizeVllmLog(hostLines(serveLog)).fatal?.line : undefined;
      const cut = (text: string | undefined) =>
        text === undefined || text === '' ? undefined : tail(text, partBytes);
      return dropUndefined({
        host: host.name,
        reachable: true,
        container,
        serveLogTail: cut(serveLog),
        rootException: rootException !== undefined ? tail(rootException, 2048) : undefined,
        rayStatus: cut(rayStatus),
        gpuApps: cut(gpuApps),
        containerLogTail: cut(containerLog),
        kernelOom: cut(kernel),
        errors,
      });
    });
  } catch (err) {
    return { host: host.name, reachable: false, errors: [...errors, firstLine(err, secrets)] };
  }
}

function dropUndefined(b: { [K in keyof HostBundle]: HostBundle[K] | undefined }): HostBundle {
  return Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)) as unknown as HostBundle;
}

export async function collectFailureBundle(input: DiagnosticsInput): Promise<FailureBundle> {
  const hosts = await Promise.all(input.hosts.map((h) => bundleOf(input, h)));
  return { collectedAtMs: Date.now(), hosts };
}
