// Step 7, verifyRayCluster: the head's `ray status` until every node joined with its GPUs, judged by the one judge
// of `ray status` (parsers/ray-status.ts); the workers' container state and log for why one cannot join. With the
// launch's marker, each head poll reads it beside Ray's state, and the last poll's answers become the head's last
// look (HeadLook), which the verification returns for the workflow to pass to launchServe. Pure.
import { judgeRayStatus, type RayVerdict } from '../parsers/ray-status.js';
import type { DeploySpec } from '../config/schema.js';
import {
  containerLogTailCommand,
  inspectContainerCommand,
  markerPathFor,
  rayStatusCommand,
  workerJoinLogLines,
  type HeadLook,
} from '../host-commands/launch.js';
import { answerOf, type Answers, type StepCommand } from '../host-commands/step-command.js';
import { plannedRun, type PlanHost, type PlannedStep } from './plan-entry.js';
import { markerLookOf, preReadCommands } from './launch-serve.js';

export interface HeadPollInput {
  container: string;
  expectedNodes: number;
  expectedGpus: number;
  /** The launch's marker: read beside Ray's state, so the last poll is the launch's look at the head. */
  launchMarkerPath?: string;
}

/** One poll of the head: Ray's state, and with the launch's marker the launch's pre-read beside it. */
export function headPollCommands(input: HeadPollInput): StepCommand[] {
  return input.launchMarkerPath
    ? preReadCommands(input.container, input.launchMarkerPath, 'verify')
    : [{ name: 'ray-status', command: rayStatusCommand(input.container) }];
}

/** Ray's verdict on one poll, and once it passed with the marker read beside it, the head's last look. */
export function judgeHeadPoll(
  answers: Answers,
  input: HeadPollInput,
  host: string,
  nowMs: number,
): { verdict: RayVerdict; look?: HeadLook } {
  const verdict = judgeRayStatus(
    answerOf(answers, 'ray-status'),
    { nodes: input.expectedNodes, gpus: input.expectedGpus },
    { host, container: input.container },
  );
  if (!verdict.ok || input.launchMarkerPath === undefined) return { verdict };
  return {
    verdict,
    look: {
      atMs: nowMs,
      host,
      container: input.container,
      markerPath: input.launchMarkerPath,
      ray: verdict.seen,
      ...markerLookOf(answers),
    },
  };
}

/** A worker that has not joined: its container's state and its log, for why. */
export const workerReadCommands = (container: string): StepCommand[] => [
  { name: 'state', command: inspectContainerCommand(container) },
  { name: 'log', command: containerLogTailCommand(container, workerJoinLogLines) },
];

/** verifyRayCluster on this host, as `liftoff plan` shows it: the head's polls, or a worker's reads while it lags. */
export function verifyRayPlan(spec: DeploySpec, host: PlanHost, workers: readonly PlanHost[]): PlannedStep {
  const nodes = workers.length + 1;
  const until = `until ${nodes} nodes and their GPUs have joined (ray.verifyTimeout ${spec.ray.verifyTimeout})`;
  const container = spec.ray.container;
  const headPolls = headPollCommands({
    container,
    expectedNodes: nodes,
    expectedGpus: nodes * spec.gpu.perHost,
    launchMarkerPath: markerPathFor(spec.serve.logPath),
  });
  const commands =
    host.role === 'head'
      ? plannedRun(headPolls, { repeats: until })
      : plannedRun(workerReadCommands(container), { repeats: 'while this node has not joined' });
  return { step: 'verifyRayCluster', commands: [commands] };
}
