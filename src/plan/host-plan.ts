// What the deploy would run on one host, step by step, built with the deploy's own command builders
// (src/host-commands) from the spec and what a read-only look at the host found (its login's uid, which
// listed units are loaded, which containers exist). With serve.backend: multiproc (vLLM's own multi-node mode)
// the Ray steps show skipped with the deploy's reason. Pure: the plan activity reads, this writes the list.
import { multiprocSkipsRay } from '../config/backend.js';
import type { DeploySpec } from '../config/schema.js';
import { raw } from '../ssh/quote.js';
import { planStopServices } from '../steps/stop-services.js';
import { planRemoveContainers, removalTargets } from '../steps/remove-containers.js';
import { planGpusClear } from '../steps/gpus-clear.js';
import { baseUrl } from '../host-commands/launch.js';
import { startRayPlan } from '../steps/start-ray.js';
import { verifyRayPlan } from '../steps/verify-ray.js';
import { launchServePlan } from '../steps/launch-serve.js';
import { smokePlan } from '../steps/smoke.js';
import { companionsPlan } from '../steps/companion.js';
import { headPollCommand, rankPollCommand, rayWorkerWatchCommand } from '../host-commands/polls.js';
import { imageVersionsCommand } from '../host-commands/agreement.js';
import { preflightPlan } from '../steps/preflight.js';
import { preflightInputOf } from '../steps/preflight-input.js';
import { listenerCommand, rank0ContainersCommand } from '../host-commands/multiproc.js';
import {
  planPlaceholders,
  plannedRun,
  read,
  readWhen,
  type PlanHost,
  type PlannedStep,
} from '../steps/plan-entry.js';
import { startRankPlan } from '../steps/start-rank.js';
import { hostSteps } from '../steps/host-steps.js';
import { runsOn, type HostStep, type HostStepInput } from '../steps/host-step.js';

export interface HostPlan {
  host: string;
  role: 'head' | 'worker';
  steps: PlannedStep[];
  stop: string[];
  disable: string[];
  remove: string[];
  start: string[];
}

/** What the plan activity read on the host, read only. */
export interface HostObservation {
  uid: string;
  /** The listed units systemd knows (LoadState other than not-found). */
  loadedUnits: string[];
  containers: string[];
  /** Containers an earlier liftoff launch of this cluster left (by label). */
  labelled: string[];
  /** serve.backend multiproc: the interface carrying the host's clusterIp, which its rank's gloo binds to. */
  clusterIface?: string;
}

/** Rank 0 is the head; the other hosts take ranks 1.. in the spec's order (as the deploy's rankFollowers). */
function rankOf(host: PlanHost, workers: readonly PlanHost[]): number {
  return host.role === 'head' ? 0 : workers.findIndex((w) => w.name === host.name) + 1;
}

function preflightCommands(spec: DeploySpec, host: PlanHost, head: PlanHost): PlannedStep {
  return preflightPlan(preflightInputOf(spec, host, head), [
    // Hosts of one image share its versions: another host reads them only for an image ID the head lacks.
    ...(host.role === 'head'
      ? []
      : [
          readWhen(
            imageVersionsCommand(spec.ray.image),
            "its image ID differs from the head's (once per distinct image ID, on its first host)",
          ),
        ]),
    // multiproc: serve.masterPort must be free on the head, or held by this cluster's earlier rank 0.
    ...(host.role === 'head' && spec.serve.backend === 'multiproc'
      ? [
          read(listenerCommand(spec.serve.masterPort ?? 0)),
          readWhen(rank0ContainersCommand(spec.cluster), 'something listens on serve.masterPort'),
        ]
      : []),
  ]);
}

export function planHost(
  spec: DeploySpec,
  host: PlanHost,
  head: PlanHost,
  workers: readonly PlanHost[],
  seen: HostObservation,
): HostPlan {
  const launchId = `liftoff-${spec.cluster}:${planPlaceholders.runId}`;
  const steps: PlannedStep[] = [preflightCommands(spec, host, head)];
  const units = [...new Set(spec.cleanup.services)];
  const stop = units.filter((u) => seen.loadedUnits.includes(u));
  const disable = spec.cleanup.disableServices ? stop : [];
  if (units.length > 0) steps.push(planStopServices(units, spec.cleanup.disableServices, spec.cluster, seen));
  const names = [...new Set([...spec.cleanup.containers, spec.ray.container])];
  const lists = { all: seen.containers, labelled: seen.labelled };
  const remove = removalTargets(names, lists);
  steps.push(planRemoveContainers(names, spec.cluster, lists, stop.length > 0), planGpusClear(spec.gpu));

  const container = spec.ray.container;
  const multiproc = spec.serve.backend === 'multiproc';
  const start: string[] = [];
  if (multiproc) {
    const startRay = host.role === 'head' ? 'startRayHead' : 'startRayWorkers';
    steps.push(
      ...[startRay, 'verifyRayCluster'].map((step) => ({ step, commands: [], skipped: multiprocSkipsRay })),
      startRankPlan(
        spec,
        launchId,
        host,
        head,
        rankOf(host, workers),
        workers.map((w) => w.name),
        seen.clusterIface,
      ),
    );
  } else {
    steps.push(startRayPlan(spec, launchId, host, head), verifyRayPlan(spec, host, workers));
    start.push(`Ray ${host.role} container ${container} (${spec.ray.image})`);
  }
  const url = baseUrl(head.clusterIp, spec.serve.port);
  const untilHealthy = `until /health answers and the model is listed (serve.loadTimeout ${spec.serve.loadTimeout})`;
  if (host.role === 'head') {
    if (!multiproc) steps.push(launchServePlan(spec, launchId, host));
    // The head's polls are the same with either backend: with multiproc the pid is rank 0's log copy, which
    // lives as long as its container.
    steps.push({
      step: 'waitHealthy',
      intent: [
        `every ${spec.serve.pollInterval}: the server's process and container alive, ${url}/health 200, the model in /v1/models, no fatal line in the log`,
      ],
      commands: [
        // One command per poll: the process, the container, /health (and /v1/models), the log's tail and news.
        read(
          headPollCommand(
            { pid: 0, container, logPath: spec.serve.logPath, logOffset: 0, url },
            { pid: raw(planPlaceholders.pid) },
          ).command,
          untilHealthy,
        ),
      ],
    });
    steps.push(smokePlan(spec, host));
    start.push(
      multiproc
        ? `vLLM rank 0 container ${container} (${spec.ray.image}): vllm serve ${spec.serve.model} --nnodes ${spec.hosts.length}, after the headless ranks; log ${spec.serve.logPath}, endpoint ${url}/v1`
        : `vllm serve ${spec.serve.model} in ${container}, log ${spec.serve.logPath}, endpoint ${url}/v1`,
    );
  } else if (multiproc) {
    // A headless rank's polls: its container, what its log said since the last poll (from the run's offset).
    const untilRank0 = `${untilHealthy.replace('until', 'until rank 0')}; a fatal line here fails it`;
    steps.push({
      step: 'waitHealthy',
      commands: [read(rankPollCommand(container, spec.serve.logPath, 0).command, untilRank0)],
    });
    start.push(
      `vLLM rank ${rankOf(host, workers)} (headless) container ${container} (${spec.ray.image}), before rank 0; log ${spec.serve.logPath}`,
    );
  } else {
    const untilLoaded = 'while the head loads the model';
    steps.push({
      step: 'waitHealthy',
      intent: [
        `every ${spec.serve.workerPollEvery} polls of the head: the Ray container ${container} and its main process still alive`,
      ],
      commands: [
        read(rayWorkerWatchCommand(container).command, `${untilLoaded}, every serve.workerPollEvery-th poll`),
      ],
    });
  }
  for (const hostStep of hostSteps) {
    const entry = hostStepPlan(hostStep, { spec, host });
    if (!entry) continue;
    const at = steps.map((s) => s.step).lastIndexOf(hostStep.after);
    steps.splice(at === -1 ? steps.length : at + 1, 0, entry);
  }
  // The companions start once the main model answered its smoke test (the head's last step before them); a
  // worker has no smoke test of its own, so its companions come last there too.
  const companions = companionsPlan(spec, host);
  if (companions) steps.push(companions);
  return { host: host.name, role: host.role, steps, stop, disable, remove, start };
}

/** A host step's plan entry on this host, built from its own commands; undefined where it does not run. */
export function hostStepPlan(step: HostStep, input: HostStepInput): PlannedStep | undefined {
  if (!runsOn(step, input.host.role) || step.skippedFor(input.spec) !== undefined) return undefined;
  return { step: step.name, intent: step.intent(input), commands: [plannedRun(step.commands(input))] };
}
