// Step 1, preflight: every host is checked, read only, and nothing is stopped unless every check on every host
// passed. One failure lists every problem of every host, so one run tells the whole story.
import { ApplicationFailure, deprecatePatch } from '@temporalio/workflow';
import type { NamedHost, PreflightReport } from '../activities/types.js';
import type { AgreementInput } from '../activities/agreement.js';
import type { HostFacts } from '../parsers/agreement-facts.js';
import { parseDuration } from '../config/duration.js';
import type { DeploySpec } from '../config/schema.js';
import { modelPathFor } from '../config/derive.js';
import { FailureType, type FailureTypeName } from '../shared/failures.js';
import type { HostIdentity } from '../shared/revisions.js';
import { missingFromHosts, type RollbackRequest } from '../shared/rollback.js';
import type { ClusterRun } from './cluster-run.js';
import { messageOf } from './failures.js';
import { patches } from './patches.js';
import { preflightInputOf } from '../steps/preflight-input.js';

export interface PreflightPassed {
  /** Clock skew between hosts, for the step's detail. */
  warnings: string[];
  /** Each host's checks, in the hosts' order: what `liftoff plan` says preflight found. */
  reports: PreflightReport[];
  /** Each host's machine id, by host name: what the cluster holds (missing for a host without one). */
  machineIds: Record<string, string>;
  /** What each host the agreement read is (image ID, kernel, driver, weights, versions), in the hosts' order. */
  identities: HostIdentity[];
}

/**
 * Passes when every check on every host passed; else throws preflightFailed with every problem (or, when every
 * problem is a finding that names its own failure type, the first one's: CompanionsDoNotFit). A rollback's run
 * (`rollback`) whose recorded image or weights are gone from a host throws rollbackRefused instead, naming the host.
 */
export async function preflight(
  { spec, hosts, head, acts }: ClusterRun,
  rollback?: RollbackRequest,
): Promise<PreflightPassed> {
  const modelPath = modelPathFor(spec) ?? '';
  const { preflightHost } = acts('preflight');
  const { checkHostsAgree } = acts('preflight', 'checkHostsAgree');
  // The agreement checks compare the hosts with each other, and cover NCCL/GLOO_SOCKET_IFNAME for every host.
  deprecatePatch(patches.agreementChecks);
  const expected = agreementInput(spec, hosts, head, modelPath);
  // Each host's agreement read rides in its preflightHost's round trip; the comparison follows, with those facts.
  deprecatePatch(patches.preflightOneTrip);
  const reports = await Promise.allSettled(hosts.map((h) => preflightHost(preflightInputOf(spec, h, head))));
  // The facts each host's trip read go to the comparison as its input; a host without them is read there.
  const agreement = checkHostsAgree({ ...expected, facts: passedFacts(reports) });
  const problems: string[] = [];
  // The types of the findings that name their own (the companion checks), in the order found.
  const typed: FailureTypeName[] = [];
  const byHost: Record<string, PreflightReport | { error: string }> = {};
  const verdicts: PreflightReport[] = [];
  reports.forEach((r, i) => {
    const name = hosts[i]?.name ?? `host ${i}`;
    if (r.status === 'rejected') {
      problems.push(`${name}: ssh: ${messageOf(r.reason)}`);
      byHost[name] = { error: messageOf(r.reason) };
    } else {
      // The facts went to the comparison; the failure's details and the plan keep the verdicts only.
      const { facts: _facts, ...report } = r.value;
      byHost[name] = report;
      verdicts.push(report);
      for (const c of r.value.checks) {
        if (c.ok) continue;
        problems.push(`${name}: ${c.name}: ${c.detail}`);
        if (c.failureType !== undefined) typed.push(c.failureType);
      }
    }
  });
  let warnings: string[] = [];
  let machineIds: Record<string, string> = {};
  let identities: HostIdentity[] = [];
  try {
    const result = await agreement;
    for (const p of result.problems) problems.push(`${p.hosts.join(', ')}: ${p.check}: ${p.detail}`);
    // A host its own preflight reached but the agreement read did not must not pass unseen.
    for (const u of result.unread) {
      const reached = byHost[u.host];
      if (reached && !('error' in reached)) problems.push(`${u.host}: agreement: not read: ${u.error}`);
    }
    warnings = result.warnings;
    // Absent from a result recorded before hosts were held.
    machineIds = result.machineIds ?? {};
    // Absent from a result recorded before revisions (issue 30).
    identities = result.identities ?? [];
  } catch (err) {
    problems.push(`agreement: not checked: ${messageOf(err)}`);
  }
  // Judged here, not after preflight passed: a rollback pins the image by ID, so a host without that ID fails its
  // image check too, and the person must hear which revision cannot come back and why, not only a missing image.
  const missing = rollback ? missingFromHosts(rollback, identities) : [];
  if (rollback && missing.length > 0) {
    throw ApplicationFailure.create({
      type: FailureType.rollbackRefused,
      message: `nothing was stopped or removed: revision ${rollback.to} cannot be restored:\n  ${missing.join('\n  ')}${problems.length > 0 ? `\npreflight found too:\n  ${problems.join('\n  ')}` : ''}`,
      nonRetryable: true,
      details: [byHost],
    });
  }
  if (problems.length > 0) {
    // A refusal whose every finding names its type (a companion budget that does not fit, a companion port held)
    // fails as that, the first one's; any other finding among them makes it PreflightFailed, listing them all.
    const [firstType] = typed;
    throw ApplicationFailure.create({
      type:
        firstType !== undefined && typed.length === problems.length ? firstType : FailureType.preflightFailed,
      message: `nothing was stopped or removed:\n  ${problems.join('\n  ')}`,
      nonRetryable: true,
      details: [byHost],
    });
  }
  return { warnings, reports: verdicts, machineIds, identities };
}

/**
 * The facts of the hosts whose trip read them, up to what one activity input may carry: a host past the budget
 * (thousands of weight files on many hosts) is read by checkHostsAgree itself.
 */
function passedFacts(reports: PromiseSettledResult<PreflightReport>[]): HostFacts[] {
  const budget = 1024 * 1024;
  let used = 0;
  const passed: HostFacts[] = [];
  for (const r of reports) {
    if (r.status !== 'fulfilled' || !r.value.facts) continue;
    const size = JSON.stringify(r.value.facts).length;
    if (used + size > budget) continue;
    used += size;
    passed.push(r.value.facts);
  }
  return passed;
}

export function agreementInput(
  spec: DeploySpec,
  hosts: NamedHost[],
  head: NamedHost,
  modelPath: string,
): AgreementInput {
  const ifaceVars = (['NCCL_SOCKET_IFNAME', 'GLOO_SOCKET_IFNAME'] as const).flatMap((name) => {
    const value = plainEnv(spec.ray.env, name);
    return value === undefined ? [] : [{ name, value }];
  });
  const vllmHostIps: AgreementInput['vllmHostIps'] = [];
  const rayIp = plainEnv(spec.ray.env, 'VLLM_HOST_IP');
  if (rayIp !== undefined)
    vllmHostIps.push({ field: 'ray.env', value: rayIp, hosts: hosts.map((h) => h.name) });
  const serveIp = plainEnv(spec.serve.env, 'VLLM_HOST_IP');
  if (serveIp !== undefined) vllmHostIps.push({ field: 'serve.env', value: serveIp, hosts: [head.name] });
  return {
    refs: Object.fromEntries(hosts.map((h) => [h.name, h.ref])),
    hosts: hosts.map((h) => ({ name: h.name, clusterIp: h.clusterIp, role: h === head ? 'head' : 'worker' })),
    image: spec.ray.image,
    modelPath,
    hashWeights: spec.preflight.hashWeights,
    rayPort: spec.ray.port,
    ifaceVars,
    vllmHostIps,
    maxClockSkewMs: parseDuration(spec.preflight.maxClockSkew) ?? 5000,
  };
}

/** A plain (non-secret) env value of the spec; a secret reference is not something the workflow may read. */
function plainEnv(env: DeploySpec['ray']['env'], name: string): string | undefined {
  const value = env[name];
  return typeof value === 'string' ? value : undefined;
}
