// What a postmortem needs from every host after a failed deploy, gathered so nobody has to SSH in: the
// Ray container's log, `ray status`, nvidia-smi, and the serve log (head). Never throws: a host that cannot
// be reached is reported as such.
import { redactedTail, secretEnvValues } from '../shared/secrets.js';
import { sh, type RemoteCommand } from '../ssh/quote.js';
import { containerLogTailCommand, inspectContainer } from './docker.js';
import { inspectContainerCommand } from '../host-commands/launch.js';
import { prefetchReads } from './prefetch.js';
import { serveLogTailCommand } from './serve.js';
import { onHost } from './ssh-context.js';
import { secretValues } from './secrets.js';
import type { DiagnosticsInput, HostDiagnostics, NamedHost } from './types.js';

const partBytes = 8 * 1024;
const tailLines = 50;
const rayStatusTimeoutS = 15;

function envRecord(env: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    env.map((kv) => {
      const eq = kv.indexOf('=');
      return [eq < 0 ? kv : kv.slice(0, eq), eq < 0 ? '' : kv.slice(eq + 1)];
    }),
  );
}

async function collectHost(input: DiagnosticsInput, host: NamedHost): Promise<HostDiagnostics> {
  const isHead = host.name === input.headName;
  const errors: string[] = [];
  try {
    return await onHost(host.ref, async (direct) => {
      const rayStatusRead = sh`timeout ${rayStatusTimeoutS} docker exec ${input.container} ray status`;
      // Every part in one round trip; should that one fail, each part is asked on its own as before.
      const session = await prefetchReads(
        direct,
        [
          inspectContainerCommand(input.container),
          containerLogTailCommand(input.container, tailLines),
          rayStatusRead,
          sh`nvidia-smi`,
          ...(isHead ? [serveLogTailCommand(input.logPath, tailLines)] : []),
        ],
        { timeoutMs: 30_000 + rayStatusTimeoutS * 1000, maxBytesPerRead: 256 * 1024 },
      ).catch(() => direct);
      // The container's env is the env liftoff gave it: its secret-looking values are what to hide.
      let secrets: string[] = await secretValues(...(input.secretEnv ?? []));
      try {
        secrets = [
          ...secrets,
          ...secretEnvValues(envRecord((await inspectContainer(session, input.container)).env)),
        ];
      } catch (err) {
        errors.push(`docker inspect ${input.container}: ${firstLine(err, secrets)}`);
      }
      const part = async (what: string, cmd: RemoteCommand): Promise<string | undefined> => {
        try {
          const res = await session.exec(cmd, { timeoutMs: 30_000, check: false });
          const text = `${res.stdout}${res.stderr ? (res.stdout ? '\n' : '') + res.stderr : ''}`.trimEnd();
          // 124: `timeout` ended the command.
          if (res.exitCode === 124) errors.push(`${what}: no answer within ${rayStatusTimeoutS} s`);
          else if (res.exitCode !== 0) errors.push(`${what}: exit code ${res.exitCode}`);
          return redactedTail(text, secrets, partBytes);
        } catch (err) {
          errors.push(`${what}: ${firstLine(err, secrets)}`);
          return undefined;
        }
      };
      const [containerLogTail, rayStatus, nvidiaSmi, serveLogTail] = await Promise.all([
        part('docker logs', containerLogTailCommand(input.container, tailLines)),
        // Real Ray's `ray status` on a worker that cannot reach the head's GCS blocks for about 40 s before it
        // gives up; the report should not wait that long for a section that then says nothing.
        part('ray status', rayStatusRead),
        part('nvidia-smi', sh`nvidia-smi`),
        isHead ? part('serve log', serveLogTailCommand(input.logPath, tailLines)) : undefined,
      ]);
      return {
        host: host.name,
        reachable: true,
        ...(containerLogTail !== undefined ? { containerLogTail } : {}),
        ...(rayStatus !== undefined ? { rayStatus } : {}),
        ...(nvidiaSmi !== undefined ? { nvidiaSmi } : {}),
        ...(serveLogTail !== undefined ? { serveLogTail } : {}),
        errors,
      };
    });
  } catch (err) {
    return { host: host.name, reachable: false, errors: [...errors, firstLine(err)] };
  }
}

/** An error's first line, redacted before it is cut (a cut secret would no longer match). */
function firstLine(err: unknown, secrets: readonly string[] = []): string {
  const text = err instanceof Error ? err.message : String(err);
  return redactedTail(text.split('\n')[0] ?? text, secrets, 1024);
}

export async function collectDiagnostics(input: DiagnosticsInput): Promise<HostDiagnostics[]> {
  return Promise.all(input.hosts.map((h) => collectHost(input, h)));
}
