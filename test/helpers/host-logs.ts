// The logs a simulated host keeps of what ran on it (launches.log, containers.log): what the tests read as
// evidence of what a deploy did, never liftoff's own report of it.
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { paths } from '../../sim/host-state.js';
import type { SimCluster } from '../../sim/cluster.js';

/** The non-empty lines of a host log; none while the host has not written it yet. */
export function hostLogLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
  } catch {
    return [];
  }
}

/** How many times the simulated vllm was launched on the cluster's head, as its launches.log says. */
export function headLaunches(sim: SimCluster): number {
  const head = sim.hosts[0];
  assert.ok(head, 'the cluster has a head');
  return hostLogLines(paths.launches(head.hostDir)).length;
}

/** Every simulated tool a session ran on the host (sim/tools/main.ts writes one JSON argv a line). */
export function hostCommands(hostDir: string): string[][] {
  return hostLogLines(paths.commands(hostDir)).map((l) => (JSON.parse(l) as { argv: string[] }).argv);
}

const readOnlySystemctl = new Set([
  'is-active',
  'is-enabled',
  'is-failed',
  'show',
  'status',
  'cat',
  'list-units',
]);
const readOnlyDocker = new Set(['inspect', 'image', 'ps', 'version', 'info', 'images', 'logs']);

/**
 * The commands of `argvs` that may change the host: anything but reads of systemctl, docker and nvidia-smi.
 * A `docker run --rm --network none` without -d, volumes or mounts is a throwaway container that can touch
 * nothing outside itself (preflight reads the versions inside the image with one).
 */
export function changingCommands(argvs: string[][]): string[][] {
  return argvs.filter(([tool, verb, ...rest]) => {
    if (tool === 'nvidia-smi') return false;
    if (tool === 'systemctl') return !readOnlySystemctl.has(verb ?? '');
    if (tool === 'docker') {
      if (verb === 'run') {
        const args = rest.join(' ');
        return !(
          rest.includes('--rm') &&
          / --network none /.test(` ${args} `) &&
          !/(^| )(-d|--detach|-v|--volume|--mount)( |$)/.test(args)
        );
      }
      return !readOnlyDocker.has(verb ?? '') || (verb === 'image' && rest[0] !== 'inspect');
    }
    return true;
  });
}
