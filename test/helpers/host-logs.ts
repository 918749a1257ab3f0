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
