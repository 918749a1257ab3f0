// Step 1, preflight: every host is checked, read only, and nothing is stopped unless every check on every host
// passed. One failure lists every problem of every host, so one run tells the whole story.
import { ApplicationFailure } from '@temporalio/workflow';
import type { NamedHost, PreflightReport } from '../activities/types.js';
import type { DeploySpec } from '../config/schema.js';
import { dirnameOf, modelPathFor } from '../config/derive.js';
import { FailureType } from '../shared/failures.js';
import type { StepActivities } from './activity-options.js';
import { messageOf } from './failures.js';

export async function preflight(
  spec: DeploySpec,
  hosts: NamedHost[],
  head: NamedHost,
  acts: StepActivities,
): Promise<void> {
  const modelPath = modelPathFor(spec) ?? '';
  const { preflightHost } = acts('preflight');
  const reports = await Promise.allSettled(
    hosts.map((h) =>
      preflightHost({
        host: h.ref,
        clusterIp: h.clusterIp,
        iface: plainEnv(spec.ray.env, 'NCCL_SOCKET_IFNAME'),
        image: spec.ray.image,
        modelPath,
        volumes: spec.ray.volumes,
        logDir: h === head ? dirnameOf(spec.serve.logPath) : undefined,
        logPath: h === head ? spec.serve.logPath : undefined,
        minFreeDiskGiB: spec.preflight.minFreeDiskGiB,
      }),
    ),
  );
  const problems: string[] = [];
  const byHost: Record<string, PreflightReport | { error: string }> = {};
  reports.forEach((r, i) => {
    const name = hosts[i]?.name ?? `host ${i}`;
    if (r.status === 'rejected') {
      problems.push(`${name}: ssh: ${messageOf(r.reason)}`);
      byHost[name] = { error: messageOf(r.reason) };
    } else {
      byHost[name] = r.value;
      for (const c of r.value.checks) if (!c.ok) problems.push(`${name}: ${c.name}: ${c.detail}`);
    }
  });
  if (problems.length > 0) {
    throw ApplicationFailure.create({
      type: FailureType.preflightFailed,
      message: `nothing was stopped or removed:\n  ${problems.join('\n  ')}`,
      nonRetryable: true,
      details: [byHost],
    });
  }
}

/** A plain (non-secret) env value of the spec; a secret reference is not something the workflow may read. */
function plainEnv(env: DeploySpec['ray']['env'], name: string): string | undefined {
  const value = env[name];
  return typeof value === 'string' ? value : undefined;
}
