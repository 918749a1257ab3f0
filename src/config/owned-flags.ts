// The `vllm serve` flags a multiproc launch sets itself (src/host-commands/multiproc.ts rankArgv says why each is
// there). serve.args come after them on every rank's command line and vLLM's parser keeps the last value of a
// flag, so one of these in serve.args would silently override what liftoff checked and every rank relies on:
// refused at validation, naming the spec field that sets it. Pure: the schema runs it, in workflows too.
import { flagName } from '../shared/secrets.js';

/**
 * Each flag by its name as vLLM reads it (flagName: no dashes, `_` as `-`), with why the spec may not set it here
 * and what to write instead.
 */
const multiprocOwnedFlags: Record<string, string> = {
  nnodes: 'liftoff sets it to the number of hosts (one rank a host); remove it',
  'node-rank':
    'liftoff gives each host its rank by its place in hosts (the head, hosts[0], is rank 0); remove it',
  'master-addr':
    "liftoff sets it to the head's clusterIp (hosts[0].clusterIp); remove it, and set that instead",
  'master-port':
    'liftoff sets it from serve.masterPort, which preflight checks is free on the head; set serve.masterPort instead',
  'tensor-parallel-size':
    'liftoff sets it from serve.tensorParallelSize, checked against hosts × gpu.perHost; set serve.tensorParallelSize instead',
  'distributed-executor-backend':
    "liftoff sets mp (vLLM's multiprocessing workers); remove it, or set serve.backend: ray for Ray's executor",
  'distributed-timeout-seconds':
    'liftoff sets it from serve.distributedTimeout; set serve.distributedTimeout instead (e.g. 5m)',
  port: "liftoff sets rank 0's API port from serve.port, which the health checks and the supervisor call; set serve.port instead",
  headless: 'liftoff runs every rank but rank 0 headless, and rank 0 serves the API; remove it',
  'served-model-name':
    'liftoff sets it from serve.servedModelName, the name the health checks and the smoke test ask for; set serve.servedModelName instead',
};

/** vLLM's one-dash aliases of the owned flags. */
const ownedAliases = new Map([['tp', 'tensor-parallel-size']]);

// vLLM's data parallel (--data-parallel-size/-dp and its -address, -rpc-port, -start-rank, -size-local, … with their
// -dpa, -dpp, -dpr, -dpl, … aliases) gives ranks other roles and counts than liftoff's one engine over every GPU of
// every host (tensor × pipeline parallel = hosts × gpu.perHost), whose rank 0 alone serves the API.
const dataParallelFix =
  "liftoff's multiproc launch runs one engine over every GPU of every host (data parallel 1) and gives each rank its role; remove it (for replicas, deploy more clusters)";
const dataParallel = 'data-parallel';
const dataParallelAlias = /^dp[a-z]?$/;

/**
 * A name counts as an owned flag when whole, when it is vLLM's alias, or when it is a prefix vLLM's parser would
 * expand to it (argparse takes an unambiguous prefix): one that reaches past the flag's first word (`master-p`,
 * `node-r`), or for a one-word flag three letters or more (`nno`, `hea`, `por`). Shorter prefixes are ambiguous
 * in vLLM (`--master-` is addr or port, `--po` also `--pooler-config`), which refuses them itself.
 */
function expandsTo(name: string, flag: string): boolean {
  if (!flag.startsWith(name)) return false;
  const firstDash = flag.indexOf('-');
  const minimum = firstDash < 0 ? Math.min(3, flag.length) : firstDash + 2;
  return name.length >= minimum;
}

/** What serve.args[i] may not say for a multiproc launch, as (index, message); [] when nothing. */
export function multiprocOwnedArgIssues(args: readonly string[]): Array<{ index: number; message: string }> {
  const issues: Array<{ index: number; message: string }> = [];
  args.forEach((arg, index) => {
    const name = flagName(arg);
    if (name === undefined) return;
    // Quoted without its value, as vLLM would name it.
    const shown = JSON.stringify(arg.replace(/=.*$/s, ''));
    const owned = ownedAliases.get(name) ?? Object.keys(multiprocOwnedFlags).find((f) => expandsTo(name, f));
    if (owned) {
      issues.push({
        index,
        message: `${shown} is --${owned}, which serve.backend: multiproc sets on every rank's command line; a value here would override it (vLLM keeps the last). ${multiprocOwnedFlags[owned]}`,
      });
    } else if (
      dataParallelAlias.test(name) ||
      expandsTo(name, dataParallel) ||
      name.startsWith(dataParallel)
    ) {
      issues.push({
        index,
        message: `${shown} is a data-parallel flag, which serve.backend: multiproc does not combine with its ranks: ${dataParallelFix}`,
      });
    }
  });
  return issues;
}
