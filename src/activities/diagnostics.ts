// What a postmortem needs from every host after a failed deploy, gathered so nobody has to SSH in: the
// Ray container's log, `ray status`, nvidia-smi, and the serve log (head). Never throws: a host that cannot
// be reached is reported as such.
import { redactedTail } from '../shared/secrets.js';
import { sh, type RemoteCommand } from '../ssh/quote.js';
import type { ExecResult } from '../ssh/executor.js';
import type { StepCommand } from '../host-commands/step-command.js';
import {
  containerLogTailCommand,
  inspectContainerCommand,
  serveLogTailCommand,
} from '../host-commands/launch.js';
import { containerSecrets, containerStateOf } from './docker.js';
import { runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';
import { secretValues } from './secrets.js';
import type { DiagnosticsInput, HostDiagnostics, NamedHost } from './types.js';

const partBytes = 8 * 1024;
const tailLines = 50;
const rayStatusTimeoutS = 15;

type Part = 'containerLogTail' | 'rayStatus' | 'nvidiaSmi' | 'serveLogTail';

async function collectHost(input: DiagnosticsInput, host: NamedHost): Promise<HostDiagnostics> {
  const errors: string[] = [];
  // Each part: its field of the result, what an error calls it, and its command (named by the field).
  const parts: Array<[Part, string, RemoteCommand]> = [
    ['containerLogTail', 'docker logs', containerLogTailCommand(input.container, tailLines)],
    // Real Ray's `ray status` on a worker that cannot reach the head's GCS blocks for about 40 s before it gives
    // up; the report should not wait that long for a section that then says nothing.
    ['rayStatus', 'ray status', sh`timeout ${rayStatusTimeoutS} docker exec ${input.container} ray status`],
    ['nvidiaSmi', 'nvidia-smi', sh`nvidia-smi`],
  ];
  if (host.name === input.headName)
    parts.push(['serveLogTail', 'serve log', serveLogTailCommand(input.logPath, tailLines)]);
  const inspect: StepCommand = { name: 'inspect', command: inspectContainerCommand(input.container) };
  const named = ([part, , command]: [Part, string, RemoteCommand]) => ({ name: part.toLowerCase(), command });
  const commands = [inspect, ...parts.map(named)];
  try {
    return await onHost(host.ref, async (session) => {
      // Every part in one round trip; should that one fail, each part is asked on its own.
      const answers = await runCommands(session, commands, {
        timeoutMs: 30_000 + rayStatusTimeoutS * 1000,
        maxBytesPerCommand: 256 * 1024,
      }).catch(() => new Map<string, ExecResult>());
      const answer = async (c: StepCommand): Promise<ExecResult> =>
        answers.get(c.name) ?? session.exec(c.command, { timeoutMs: 30_000, check: false });
      // The container's env is the env liftoff gave it: its secret-looking values are what to hide.
      let secrets: string[] = await secretValues(...(input.secretEnv ?? []));
      try {
        secrets = [
          ...secrets,
          ...containerSecrets(containerStateOf(await answer(inspect), input.container, host.name)),
        ];
      } catch (err) {
        errors.push(`docker inspect ${input.container}: ${firstLine(err, secrets)}`);
      }
      const read = async (p: [Part, string, RemoteCommand]): Promise<Partial<HostDiagnostics>> => {
        const [part, what] = p;
        try {
          const res = await answer(named(p));
          const text = `${res.stdout}${res.stderr ? (res.stdout ? '\n' : '') + res.stderr : ''}`.trimEnd();
          // 124: `timeout` ended the command.
          if (res.exitCode === 124) errors.push(`${what}: no answer within ${rayStatusTimeoutS} s`);
          else if (res.exitCode !== 0) errors.push(`${what}: exit code ${res.exitCode}`);
          return { [part]: redactedTail(text, secrets, partBytes) };
        } catch (err) {
          errors.push(`${what}: ${firstLine(err, secrets)}`);
          return {};
        }
      };
      const found = (await Promise.all(parts.map(read))).reduce((all, one) => ({ ...all, ...one }), {});
      return { host: host.name, reachable: true, ...found, errors };
    });
  } catch (err) {
    return { host: host.name, reachable: false, errors: [...errors, firstLine(err)] };
  }
}

/** An error's first line, redacted before it is cut (a cut secret would no longer match). */
export function firstLine(err: unknown, secrets: readonly string[] = []): string {
  const text = err instanceof Error ? err.message : String(err);
  return redactedTail(text.split('\n')[0] ?? text, secrets, 1024);
}

export async function collectDiagnostics(input: DiagnosticsInput): Promise<HostDiagnostics[]> {
  return Promise.all(input.hosts.map((h) => collectHost(input, h)));
}
