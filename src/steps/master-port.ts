// Part of step 1 for serve.backend multiproc, on the head, read only: is serve.masterPort free, or held by this
// cluster's earlier rank 0 (which step 3 removes)? Both reads in one trip; the workflow refuses on the verdict.
import type { HostRef } from '../config/targets.js';
import { listenerCommand, rank0ContainersCommand } from '../host-commands/multiproc.js';
import type { Answers, StepCommand } from '../host-commands/step-command.js';

export interface MasterPortInput {
  host: HostRef;
  cluster: string;
  port: number;
}

export interface MasterPortResult {
  host: string;
  free: boolean;
  /** What listens there (`ss`'s line), when something does. */
  listener?: string;
  /** An earlier multiproc launch's rank 0 of this cluster runs on the host: step 3 removes it. */
  earlierRank0?: string;
}

export const masterPortCommands = (input: Pick<MasterPortInput, 'port' | 'cluster'>): StepCommand[] => [
  { name: 'listener', command: listenerCommand(input.port) },
  { name: 'rank0', command: rank0ContainersCommand(input.cluster) },
];

const firstLine = (text: string | undefined): string | undefined =>
  text
    ?.split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');

export function judgeMasterPort(answers: Answers, host: string): MasterPortResult {
  const held = firstLine(answers.get('listener')?.stdout)?.slice(0, 200);
  if (held === undefined) return { host, free: true };
  const earlierRank0 = firstLine(answers.get('rank0')?.stdout);
  return { host, free: false, listener: held, ...(earlierRank0 ? { earlierRank0 } : {}) };
}
