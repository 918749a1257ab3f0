// `liftoff plan`: the deploy's validate and preflight steps, exactly as the deploy runs them (on a worker, under
// its policy, through the one preflight function), then a read-only look at each host that lists every command
// the deploy would run there. Nothing is stopped, removed or started. A workflow, not a local run, so the
// plan sees the hosts from where the deploy would: the worker's keys, known_hosts and network.
import { ApplicationFailure, deprecatePatch, proxyActivities } from '@temporalio/workflow';
import type { PreflightCheck } from '../activities/types.js';
import type { DeploySpec, EnvSpec } from '../config/schema.js';
import type { HostPlan } from '../plan/host-plan.js';
import { FailureType } from '../shared/failures.js';
import { retryProfiles, stepActivities, type Activities, type StepActivities } from './activity-options.js';
import { checkHostOwners } from './cluster-hold.js';
import { knownGoodOf, pinnedImageOf } from '../shared/rollback.js';
import { shortImageId } from '../shared/revisions.js';
import { clusterOf, validate } from './cluster-run.js';
import { checkMasterPortFree } from './deploy-multiproc.js';
import { patches } from './patches.js';
import { preflight, type PreflightPassed } from './preflight.js';

export interface PlanSecret {
  /** Where the spec uses it, e.g. `serve.env.HF_TOKEN`. */
  field: string;
  /** How the worker gets the value: a reference, never the value. */
  source: string;
}

/** What preflight's checks found on one host (the report without anything else it carries). */
export interface PlanFindings {
  host: string;
  checks: PreflightCheck[];
}

export interface PlanResult {
  cluster: string;
  /** Whether the deploy would go past preflight and start. */
  wouldStart: boolean;
  /** Preflight's refusal, one line per problem (empty when it passed). */
  problems: string[];
  /** Preflight's warnings when it passed (clock skew between hosts). */
  warnings: string[];
  hosts: HostPlan[];
  secrets: PlanSecret[];
  /** Each host's preflight checks when it passed (absent from a plan made by an older worker). */
  preflight?: PlanFindings[];
  /** Clusters holding these hosts that the deploy would take over (takeOver: true); without it, it is refused. */
  takesOverFrom?: string[];
  /** What a failure after the first stop would do: roll back to the known-good, or leave the cluster failed. */
  onFailure?: { rollbackTo?: number; image?: string; why: string };
}

export async function plan(input: unknown): Promise<PlanResult> {
  const spec = validate(input);
  const acts = stepActivities(spec);
  await acts('validate').checkWorkerPolicy({ spec });
  const cluster = { ...clusterOf(spec), spec, acts };
  const { hosts, head, workers } = cluster;
  const secrets = [...secretsOf('ray.env', spec.ray.env), ...secretsOf('serve.env', spec.serve.env)];
  let passed: PreflightPassed;
  let owners: { owners: { cluster: string }[] } = { owners: [] };
  try {
    passed = await preflight(cluster);
    // The deploy's preflight refuses a multiproc launch whose master port is taken on the head; so does the plan.
    if (spec.serve.backend === 'multiproc') {
      deprecatePatch(patches.multiprocPlan);
      await checkMasterPortFree(cluster);
    }
    // As the deploy's preflight: hosts another cluster holds are refused unless the spec takes them over.
    owners = await checkHostOwners(spec, hosts, passed.machineIds, spec.takeOver);
  } catch (err) {
    const refused = [
      FailureType.preflightFailed,
      FailureType.companionsDoNotFit,
      FailureType.companionPortInUse,
      FailureType.masterPortInUse,
      FailureType.hostsHeld,
    ] as string[];
    if (err instanceof ApplicationFailure && refused.includes(err.type ?? '')) {
      const lines = err.message.split('\n');
      const problems = (lines.length > 1 ? lines.slice(1) : lines)
        .map((l) => l.trim())
        .filter((l) => l !== '');
      return { cluster: spec.cluster, wouldStart: false, problems, warnings: [], hosts: [], secrets };
    }
    throw err;
  }
  const onFailure = await failurePlan(spec, acts);
  // A short read of each host, retried as the deploy's host steps are.
  const { planHostCommands } = proxyActivities<Activities>(retryProfiles(spec).hostStep);
  const plans = await Promise.all(hosts.map((h) => planHostCommands({ spec, host: h, head, workers })));
  return {
    cluster: spec.cluster,
    wouldStart: true,
    problems: [],
    warnings: passed.warnings,
    hosts: plans,
    secrets,
    preflight: passed.reports.map((r) => ({ host: r.host, checks: r.checks })),
    ...(owners.owners.length > 0 ? { takesOverFrom: owners.owners.map((o) => o.cluster) } : {}),
    onFailure,
  };
}

/** What the deploy's failure after the stop would bring back (rollout.onFailure and the cluster's known-good). */
async function failurePlan(
  spec: DeploySpec,
  acts: StepActivities,
): Promise<NonNullable<PlanResult['onFailure']>> {
  if (spec.rollout.onFailure === 'leave') return { why: 'rollout.onFailure: leave, so it stays failed' };
  const { revisions } = await acts('preflight', 'readRevisions').readRevisions({ cluster: spec.cluster });
  const good = knownGoodOf(revisions);
  if (!good) return { why: 'no known-good revision of the cluster yet, so it stays failed' };
  const image = pinnedImageOf(good);
  return {
    rollbackTo: good.number,
    ...(image ? { image } : {}),
    why: `it rolls back to revision ${good.number} (${good.model}${image ? `, image ${shortImageId(image)}` : ''})`,
  };
}

function secretsOf(prefix: string, env: EnvSpec): PlanSecret[] {
  return Object.entries(env).flatMap(([name, value]): PlanSecret[] => {
    if (typeof value === 'string') return [];
    const source = 'fromEnv' in value ? `worker env ${value.fromEnv}` : `worker file ${value.fromFile}`;
    return [{ field: `${prefix}.${name}`, source }];
  });
}
