// Which revision a rollback deploys, with which spec, and whether the hosts still have what it needs. Pure: the
// deploy workflow, the supervisor and the CLI use the same rules.
import { shortImageId, type HostIdentity, type Revision } from './revisions.js';

/** What a rollback's deploy carries in its options: what it restores, from what, and why. */
export interface RollbackRequest {
  /** The revision deployed again. */
  to: number;
  /** The revision that failed, when one did (automatic rollback, or after a bake window). */
  from?: number;
  cause: string;
  /** The failed run's workflow id and run id: the postmortem links the two. */
  failedRun?: string;
  /** Each host as the revision recorded it: preflight compares what it finds. */
  hosts: HostIdentity[];
}

/** The latest revision that served and is not bad: what an automatic rollback restores. */
export function knownGoodOf(revisions: readonly Revision[]): Revision | undefined {
  return [...revisions].reverse().find((r) => r.status !== 'bad' && r.evidence !== undefined);
}

/**
 * `liftoff rollback` without --to: the known-good before the current revision when the current one serves
 * (going back means going back), else the latest known-good.
 */
export function rollbackTarget(
  revisions: readonly Revision[],
  current: number | undefined,
  to?: number,
): { revision: Revision } | { problem: string } {
  if (to !== undefined) {
    const revision = revisions.find((r) => r.number === to);
    if (revision) return { revision };
    const kept = revisions.map((r) => r.number);
    return {
      problem: `revision ${to} is not kept (kept: ${kept.length > 0 ? kept.join(', ') : 'none'}); see liftoff revisions`,
    };
  }
  const serving = revisions.find((r) => r.number === current && r.status === 'serving');
  const before = serving ? revisions.filter((r) => r.number < serving.number) : revisions;
  const revision = knownGoodOf(before);
  if (revision) return { revision };
  return {
    problem: serving
      ? `no known-good revision before the serving revision ${serving.number}`
      : 'the cluster has no known-good revision',
  };
}

/** The one image ID every host recorded, when they agree: what a rollback pins instead of the tag. */
export function pinnedImageOf(revision: Revision): string | undefined {
  const ids = new Set(revision.hosts.map((h) => h.imageId));
  const [only] = [...ids];
  return ids.size === 1 && only !== undefined ? only : undefined;
}

/** The revision's spec with its image pinned to the recorded ID, so a tag moved since cannot sneak in. */
export function pinnedSpec(revision: Revision): unknown {
  const spec = structuredCopy(revision.spec);
  const image = pinnedImageOf(revision);
  if (image && isRecord(spec) && isRecord(spec.ray)) spec.ray.image = image;
  return spec;
}

export function rollbackRequest(revision: Revision, cause: string, from?: number, failedRun?: string) {
  return {
    to: revision.number,
    cause,
    hosts: revision.hosts,
    ...(from !== undefined ? { from } : {}),
    ...(failedRun !== undefined ? { failedRun } : {}),
  } satisfies RollbackRequest;
}

/** The revision serving now, or that served last: the latest one not bad. */
export function currentRevisionOf(revisions: readonly Revision[]): number | undefined {
  return [...revisions].reverse().find((r) => r.status !== 'bad')?.number;
}

/**
 * What preflight found missing against what the revision recorded: an image ID or weights no longer on a host,
 * each naming the host. Nothing a host did not record is compared.
 */
export function missingFromHosts(request: RollbackRequest, found: readonly HostIdentity[]): string[] {
  const problems: string[] = [];
  for (const recorded of request.hosts) {
    const now = found.find((f) => f.host === recorded.host);
    if (!now) continue;
    if (recorded.imageId && now.imageId !== recorded.imageId)
      problems.push(
        `${recorded.host}: image ${shortImageId(recorded.imageId)} of revision ${request.to} is gone (the host has ${now.imageId ? shortImageId(now.imageId) : 'no such image'}); load it again (docker load) or roll back to another revision`,
      );
    const was = recorded.weights;
    const is = now.weights;
    if (was?.snapshot && is?.snapshot !== was.snapshot)
      problems.push(
        `${recorded.host}: weights snapshot ${was.snapshot.slice(0, 12)} of revision ${request.to} is gone (found ${is?.snapshot?.slice(0, 12) ?? 'none'}); download that revision again or roll back to another`,
      );
    else if (was?.indexSha256 && is?.indexSha256 !== was.indexSha256)
      problems.push(
        `${recorded.host}: the weights' index differs from revision ${request.to}'s (sha256 ${was.indexSha256.slice(0, 12)}, now ${is?.indexSha256?.slice(0, 12) ?? 'none'}); restore those weights or roll back to another revision`,
      );
  }
  return problems;
}

/** The bad revision whose spec is this one, compared as canonical JSON: a schedule does not redeploy it unasked. */
export function badRevisionWithSpec(revisions: readonly Revision[], spec: unknown): Revision | undefined {
  const wanted = canonicalJson(spec);
  return [...revisions].reverse().find((r) => r.status === 'bad' && canonicalJson(r.spec) === wanted);
}

function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isRecord(v) && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** A deep copy of plain JSON data (specs are): workflows have no structuredClone guarantee across SDK sandboxes. */
function structuredCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
