// A cluster as the workflows address it: its spec (validated as the CLI validates it), its hosts with the head
// split out, and the activities it runs under; a deploy adds its launch id, tracker and progress. Apart from
// deploy.ts, so the steps the deploy calls (preflight, the load, teardown, multiproc) import it without it.
import { ApplicationFailure } from '@temporalio/workflow';
import type { ZodType } from 'zod';
import type { NamedHost } from '../activities/types.js';
import { deploySpecSchema, type DeploySpec } from '../config/schema.js';
import { formatIssues } from '../config/errors.js';
import { resolveSshTarget } from '../config/targets.js';
import { FailureType } from '../shared/failures.js';
import type { StepActivities } from './activity-options.js';
import type { StepTracker } from './step-tracker.js';
import type { DeployProgress } from './steps.js';

export type ClusterHost = NamedHost & { role: 'head' | 'worker'; address: string };

/** A cluster as the workflows address it: its spec, its hosts (the head split from the others), its activities. */
export type ClusterRun = ReturnType<typeof clusterOf> & { spec: DeploySpec; acts: StepActivities };

/** What the steps of one deploy work with. */
export type DeployRun = ClusterRun & { launchId: string; tracker: StepTracker; progress: DeployProgress };

export function validate(input: unknown): DeploySpec {
  return parseSpec(deploySpecSchema, input);
}

/** `input` as `schema` reads it, or the refusal the CLI gives, for a spec pasted into the Temporal UI too. */
export function parseSpec<T>(schema: ZodType<T>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    throw ApplicationFailure.create({
      type: FailureType.invalidSpec,
      message: `invalid spec:\n${formatIssues(parsed.error)}`,
      nonRetryable: true,
    });
  }
  return parsed.data;
}

/** The spec's hosts split into the head and the others, as the workflows address them. */
export function clusterOf(spec: DeploySpec): {
  hosts: ClusterHost[];
  head: ClusterHost;
  workers: ClusterHost[];
} {
  const hosts = clusterHosts(spec);
  const head = hosts.find((h) => h.role === 'head');
  if (!head) throw ApplicationFailure.nonRetryable('no head host', FailureType.invalidSpec);
  return { hosts, head, workers: hosts.filter((h) => h !== head) };
}

/** The spec's hosts as activities address them: SSH target (jump chain resolved) and key references. */
export function clusterHosts(spec: DeploySpec): ClusterHost[] {
  const { privateKeyPath, useAgent, knownHostsPath } = spec.ssh;
  const auth = { privateKeyPath, useAgent, knownHostsPath };
  return spec.hosts.map((h) => ({
    name: h.name,
    role: h.role,
    address: h.address,
    clusterIp: h.clusterIp,
    ref: { target: resolveSshTarget(spec.hosts, spec.ssh, h.name), auth },
  }));
}
