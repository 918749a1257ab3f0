// Which machine each host is: the id a cluster holds it by (src/workflows/cluster.ts), read in the agreement read
// since the spec's address of a host can differ from another spec's.
import type { HostFacts } from '../parsers/agreement-facts.js';

export interface MachineIds {
  /** By host name; a host without an id is missing (it is not held, and a warning says so). */
  ids: Record<string, string>;
  warnings: string[];
}

export function machineIdsOf(facts: readonly HostFacts[]): MachineIds {
  const ids: Record<string, string> = {};
  const warnings: string[] = [];
  const seen = new Map<string, string>();
  for (const f of facts) {
    if (f.machineId === undefined) {
      warnings.push(
        `${f.host} reports no machine id (/etc/machine-id): liftoff cannot tell which cluster holds it; create one with systemd-machine-id-setup`,
      );
      continue;
    }
    const first = seen.get(f.machineId);
    // A warning, not a refusal: simulated hosts on loopback addresses are one machine.
    if (first !== undefined)
      warnings.push(
        `${first} and ${f.host} report the same machine id ${f.machineId}: one machine under two addresses? List each host once`,
      );
    else seen.set(f.machineId, f.host);
    ids[f.host] = f.machineId;
  }
  return { ids, warnings };
}
