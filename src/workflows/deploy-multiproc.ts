// The multiproc backend's part of the deploy (serve.backend: multiproc): vLLM's own multi-node mode, one rank
// per host, no Ray. Preflight, cleanup, GPU check, smoke test and record are the Ray sequence's; what differs
// is here: the master port's check, the ranks' launch instead of the Ray steps, and the ranks' polls.
import { ApplicationFailure, deprecatePatch } from '@temporalio/workflow';
import type { CheckRankResult } from '../activities/multiproc.js';
import type { NamedHost } from '../activities/types.js';
import { multiprocSkipsRay, rayOnlySteps } from '../config/backend.js';
import { rankInput } from '../host-commands/step-inputs.js';
import { judgeContainer } from '../parsers/container-state.js';
import { judgeVllmFatal } from '../parsers/vllm-log.js';
import { FailureType } from '../shared/failures.js';
import { loadFailure, rootApplicationFailure } from './failures.js';
import type { ClusterRun, DeployRun } from './cluster-run.js';
import { patches } from './patches.js';
import { nameLostFollower, type Followers } from './wait-healthy.js';

/** Part of preflight: serve.masterPort must be free on the head, or held by this cluster's earlier rank 0. */
export async function checkMasterPortFree({ spec, head, acts }: ClusterRun): Promise<void> {
  const port = spec.serve.masterPort ?? 0;
  const { checkMasterPort } = acts('preflight', 'checkMasterPort');
  const r = await checkMasterPort({ host: head.ref, cluster: spec.cluster, port });
  if (r.free || r.earlierRank0 !== undefined) return;
  throw ApplicationFailure.create({
    type: FailureType.masterPortInUse,
    message: `nothing was stopped or removed:\n  ${head.name}: serve.masterPort ${port} is in use on the head (${r.listener ?? 'a listener'}), and not by an earlier liftoff launch of ${spec.cluster}; rank 0 could not listen there. Stop what listens on it, or pick another serve.masterPort.`,
    nonRetryable: true,
    details: [{ host: head.name, port, listener: r.listener ?? null }],
  });
}

/**
 * Steps 5–8 for multiproc: the Ray steps are shown skipped, then every rank's container starts in launchServe.
 * Returns rank 0's pid (the copy of its container's output to serve.logPath, which lives as long as it).
 */
export async function launchRanks(run: DeployRun): Promise<number> {
  const { spec, head, workers, launchId, acts, tracker } = run;
  for (const step of rayOnlySteps) tracker.skip(step, multiprocSkipsRay);
  const { startRank } = acts('launchServe', 'startRank');
  // The inputs are built where `liftoff plan` builds them too (src/host-commands/step-inputs.ts).
  const start = (host: NamedHost, rank: number) => startRank(rankInput(spec, launchId, host, rank, head));
  return tracker.run('launchServe', async () => {
    // The headless ranks first, then rank 0. vLLM itself accepts any order (each rank retries its connect to
    // the store until --distributed-timeout-seconds), but rank 0 is the one whose clock matters: its store waits
    // that long for the others and its API is what the load is judged by. Started last, it finds every peer
    // already dialling in, so none of its timeout is spent on docker runs through jump hosts; and a headless rank
    // that cannot start at all (image, flags, log folder) fails the step before rank 0 takes the GPUs and ports.
    const headless = await Promise.all(workers.map((w, i) => start(w, i + 1)));
    const rank0 = await start(head, 0).catch(async (err: unknown) => {
      // Rank 0 exiting at once may only echo a headless rank that died meanwhile (its collectives fail with
      // "connection reset by peer"): a rank whose container is gone is named instead.
      if (workers.length > 0) {
        deprecatePatch(patches.lostHostBeforeHeadFailure);
        await nameLostFollower(rankFollowers(run), workers, {
          where: 'phase starting',
          tail: [],
          load: { phase: 'starting', elapsedS: 0, health: 'unknown', lastLogAtMs: Date.now() },
        });
      }
      throw err;
    });
    const started = (r: typeof rank0): string =>
      `${r.host}: rank ${r.rank}${r.rank === 0 ? '' : ' (headless)'}${r.reused ? ', reused' : ''}`;
    tracker.detail('launchServe', [rank0, ...headless].map(started).join('; '));
    return rank0.pid;
  });
}

/** waitHealthy's view of the headless ranks: a fatal line in a rank's log or its container's end fails the load. */
export function rankFollowers({ spec, head, workers, acts }: DeployRun): Followers<CheckRankResult> {
  const offsets = new Map<string, number>();
  const { checkRank } = acts('waitHealthy', 'checkRank');
  // Rank 0 is the head; the other hosts take ranks 1.. in the spec's order.
  const rankOf = (host: NamedHost) => (host === head ? 0 : workers.findIndex((w) => w === host) + 1);
  return {
    poll: (host) =>
      checkRank({
        host: host.ref,
        container: spec.ray.container,
        logPath: spec.serve.logPath,
        logOffset: offsets.get(host.name) ?? 0,
      }),
    gone: (r) => !r.containerRunning,
    judge: (host, r, at) => {
      offsets.set(host.name, r.logOffset);
      const who = `rank ${rankOf(host)} on ${host.name}`;
      if (r.fatal) {
        const master = { masterAddr: head.clusterIp, masterPort: spec.serve.masterPort };
        const verdict = judgeVllmFatal(r.fatal, { backend: 'multiproc', ...master });
        // Rank 0 held its port when it started: a later "port in use" fails the rank as any fatal line does.
        const type = verdict.type === FailureType.masterPortInUse ? FailureType.rankFailed : verdict.type;
        throw loadFailure(type, `${who} failed at ${at.where}: ${verdict.message}`, r.tail, at.load);
      }
      const container = judgeContainer(
        { running: r.containerRunning, status: r.containerStatus, exitCode: r.exitCode },
        `container ${spec.ray.container}`,
      );
      if (!container.ok) {
        throw loadFailure(
          FailureType.rankExited,
          `${who} exited at ${at.where}: ${container.message}; its last line: ${r.tail[r.tail.length - 1] ?? '(empty log)'}`,
          r.tail,
          at.load,
        );
      }
    },
  };
}

/** A rank that failed leaves the others waiting for it for ever, holding their GPUs: they are removed. */
export function isRankFailure(err: unknown): boolean {
  const { rankExited, rankFailed, masterUnreachable, serverExited, serverFatal } = FailureType;
  const rankFailures: string[] = [rankExited, rankFailed, masterUnreachable, serverExited, serverFatal];
  return rankFailures.includes(rootApplicationFailure(err)?.type ?? '');
}
