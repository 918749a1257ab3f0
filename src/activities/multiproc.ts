// The multiproc backend's host steps: vLLM's own multi-node mode, one container per host running its rank's
// `vllm serve` (no Ray). A rank's container carries the same labels as a Ray container (cluster, launch, role),
// and a marker next to its log records the launch, so a retried start finds the rank it already started.
import { activityFailure } from './activity-failure.js';
import { FailureType } from '../shared/failures.js';
import { judgeVllmFatal, summarizeVllmLog } from '../parsers/vllm-log.js';
import { dockerSaid, listenerOf } from '../parsers/host-output.js';
import { redactText, redactedTail, secretArgValues } from '../shared/secrets.js';
import { sentence, tail } from '../shared/text.js';
import type { ExecResult, SshSession } from '../ssh/executor.js';
import { containerLogTail, containerSecrets, containerStateOf, pause } from './docker.js';
import { envTransport } from '../host-commands/env-transport.js';
import { removeContainerCommand, symlinkExit } from '../host-commands/launch.js';
import {
  interfaceOf,
  rank0ContainersCommand,
  rankEnv,
  rankTailLines,
  type StartRankInput,
} from '../host-commands/multiproc.js';
import {
  judgeMasterPort,
  listenerRead,
  rankConfirmCommands,
  rankConfirmPollMs,
  rankConfirmWindowMs,
  rankReadCommands,
  rankRun,
} from '../steps/start-rank.js';
import { markerLookOf } from '../steps/launch-serve.js';
import { answerOf, execSectioned, runCommands } from './run-commands.js';
import { containerOf, logChunkOf, tailLinesOf } from './health.js';
import { rankPollCommand } from '../host-commands/polls.js';
import { heartbeat } from './heartbeat.js';
import { resolveEnv, secretsOf } from './secrets.js';
import { pidAlive } from './serve.js';
import { onHost } from './ssh-context.js';
import type { HostRef } from '../config/targets.js';
import type { VllmFatal } from '../parsers/vllm-log.js';

export interface StartRankResult {
  host: string;
  rank: number;
  /** The process copying the container's output to the log: it lives as long as the container. */
  pid: number;
  reused: boolean;
}

export interface MasterPortResult {
  host: string;
  free: boolean;
  /** What listens there (`ss`'s line), when something does. */
  listener?: string;
  /** An earlier multiproc launch's rank 0 of this cluster runs on the host: step 3 removes it. */
  earlierRank0?: string;
}

export interface CheckRankResult {
  host: string;
  containerRunning: boolean;
  containerStatus?: string;
  exitCode?: number;
  logOffset: number;
  /** The most telling fatal line of the new log, when there is one. */
  fatal?: VllmFatal;
  /** The rank's last log lines. */
  tail: string[];
}

/** What listens on `port` on the host: `ss`'s answer. */
async function readListener(session: SshSession, port: number): Promise<ExecResult> {
  return answerOf(await runCommands(session, [listenerRead(port)], { timeoutMs: 10_000 }), 'listener');
}

/** Preflight on the head: is serve.masterPort free (or held by this cluster's earlier rank 0, removed in step 3)? */
export async function checkMasterPort(input: {
  host: HostRef;
  cluster: string;
  port: number;
}): Promise<MasterPortResult> {
  const host = input.host.target.name;
  return onHost(input.host, async (session) => {
    const held = listenerOf((await readListener(session, input.port)).stdout);
    if (held === undefined) return { host, free: true };
    const rank0s = await session.exec(rank0ContainersCommand(input.cluster), {
      timeoutMs: 30_000,
      check: false,
    });
    const earlierRank0 = rank0s.stdout.split('\n').find((l) => l.trim() !== '');
    return { host, free: false, listener: held, ...(earlierRank0 ? { earlierRank0 } : {}) };
  });
}

export async function startRank(input: StartRankInput): Promise<StartRankResult> {
  const host = input.host.target.name;
  const resolved = await Promise.all(input.env.map((e) => resolveEnv(e)));
  const values = Object.assign({}, ...resolved.map((r) => r.values)) as Record<string, string>;
  const secretNames = new Set(resolved.flatMap((r) => [...r.secretNames]));
  const secrets = [...secretsOf({ values, secretNames }), ...secretArgValues(input.args)];
  return onHost(input.host, async (session) => {
    // The container, the marker and whether its pid runs, the addresses, and rank 0's port: one round trip.
    const reads = await runCommands(session, rankReadCommands(input), { timeoutMs: 30_000 });
    const existing = containerStateOf(answerOf(reads, 'existing'), input.container, host);
    let listening = reads.get('listener');
    if (existing.exists) {
      if (existing.running && existing.labels['liftoff.launch'] === input.launchId) {
        const { marker, markerPidAlive } = markerLookOf(reads);
        if (marker && marker.pid > 0 && (markerPidAlive ?? (await pidAlive(session, marker.pid)))) {
          return { host, rank: input.rank, pid: marker.pid, reused: true };
        }
      }
      // Another launch's container, or this launch's that died or lost its log: it goes before the name is free,
      // and the master port is asked again once it has gone.
      await session.exec(removeContainerCommand(input.container), { timeoutMs: 60_000 });
      listening = undefined;
    }
    // Checked again right before rank 0 listens there: the head may have changed since preflight.
    if (input.rank === 0) {
      judgeMasterPort(listening ?? (await readListener(session, input.masterPort)), input);
    }

    const env = rankEnv(
      input.clusterIp,
      interfaceOf(answerOf(reads, 'addrs').stdout, input.clusterIp),
      values,
    );
    const transport = envTransport(env, secretNames);
    const started = answerOf(
      await runCommands(session, [rankRun(input, transport, Date.now())], {
        timeoutMs: 120_000,
        stdin: transport.stdin,
        secrets,
      }),
      'run',
    );
    const pid = Number(started.stdout.trim().split('\n').pop());
    if (started.exitCode !== 0 || !Number.isInteger(pid) || pid <= 0) {
      const why = redactText(started.stderr.trim() || started.stdout.trim(), secrets);
      throw activityFailure(
        FailureType.rankExited,
        started.exitCode === symlinkExit
          ? `serve.logPath ${input.logPath} (or its marker) is a symbolic link on ${host}; nothing was started: remove the link or change serve.logPath.`
          : `Starting rank ${input.rank} on ${host} failed (exit ${started.exitCode}): ${sentence(tail(dockerSaid(why), 2048))} Check the image, volumes and serve.logPath's folder on that host.`,
        true,
        { host, rank: input.rank, exitCode: started.exitCode },
      );
    }

    // A rank whose arguments vLLM refuses, or rank 0 finding the master port taken, exits within a second or two.
    const deadline = Date.now() + rankConfirmWindowMs;
    while (Date.now() < deadline) {
      heartbeat({ host, phase: 'confirming', rank: input.rank });
      await pause(rankConfirmPollMs);
      const confirm = await runCommands(session, rankConfirmCommands(input.container), { timeoutMs: 20_000 });
      const state = containerStateOf(answerOf(confirm, 'state'), input.container, host);
      if (state.running) continue;
      const log = await containerLogTail(session, input.container, secrets);
      const fatal = summarizeVllmLog(log.split('\n')).fatal;
      const verdict = fatal
        ? judgeVllmFatal(fatal, {
            backend: 'multiproc',
            masterAddr: input.masterAddr,
            masterPort: input.masterPort,
          })
        : undefined;
      // The container already exited: that is what failed the start, whatever the line; only a port taken on the
      // head keeps its own type, since the spec's serve.masterPort is what must change.
      const type = verdict?.type === FailureType.masterPortInUse ? verdict.type : FailureType.rankExited;
      throw activityFailure(
        type,
        `Rank ${input.rank} on ${host} exited right after it started (exit code ${state.exitCode ?? 'unknown'})` +
          (verdict ? `: ${verdict.message}` : '') +
          `\n--- ${host} rank ${input.rank} log (tail) ---\n${tail(log, 4096)}`,
        true,
        { host, rank: input.rank, exitCode: state.exitCode ?? null, logTail: tail(log, 4096) },
      );
    }
    return { host, rank: input.rank, pid, reused: false };
  });
}

/**
 * One poll of a headless rank during the load, in one remote command (polls.ts rankPollCommand): its container,
 * the log's tail, and what the log said since the last poll. A docker that fails leaves the log's answer
 * standing: a fatal line is reported whatever the container; without one, an unknown state fails the poll.
 */
export async function checkRank(input: {
  host: HostRef;
  container: string;
  logPath: string;
  logOffset: number;
}): Promise<CheckRankResult> {
  return onHost(input.host, async (session) => {
    const host = input.host.target.name;
    const poll = rankPollCommand(input.container, input.logPath, input.logOffset);
    const out = await execSectioned(session, poll, { timeoutMs: 45_000 });
    const container = containerOf(out.sections.get('container'), input.container, host);
    const secrets = container.state ? containerSecrets(container.state) : [];
    const chunk = logChunkOf(out.rest, input.logOffset);
    const summary = chunk.lines.length > 0 ? summarizeVllmLog(chunk.lines) : undefined;
    let fatal = summary?.fatal
      ? { ...summary.fatal, line: redactText(summary.fatal.line, secrets) }
      : undefined;
    let tailLines = tailLinesOf(out.sections.get('tail'), secrets);
    // The log file is a `docker logs -f` copy, which may not hold a rank's last lines yet when its container is
    // already seen exited (the copy lags, and the poll sizes the file before it asks for the state): the daemon
    // has them all, so the tail that says why comes from it.
    if (container.state && !container.state.running && !fatal) {
      const log = await containerLogTail(session, input.container, secrets, rankTailLines);
      const lines = log.split('\n').filter((l) => l.trim() !== '');
      if (lines.length > 0) {
        const said = summarizeVllmLog(lines).fatal;
        if (said) fatal = { ...said, line: redactText(said.line, secrets) };
        tailLines = lines;
      }
    }
    if (!container.state && !fatal) {
      throw activityFailure(
        FailureType.rayContainerFailed,
        `The poll of rank ${host} cannot tell whether the container ${input.container} runs: ${redactedTail(container.problem ?? '', secrets, 1024)}`,
        false,
        { host },
      );
    }
    const state = container.state;
    return {
      host,
      containerRunning: state ? state.running : true,
      ...(state?.status ? { containerStatus: state.status } : {}),
      ...(state?.exitCode !== undefined ? { exitCode: state.exitCode } : {}),
      logOffset: chunk.nextOffset,
      ...(fatal ? { fatal } : {}),
      tail: tailLines,
    };
  });
}
