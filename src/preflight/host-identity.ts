// What a host is, beyond the spec, out of its agreement facts (issue 30): the image it has under the spec's tag,
// its kernel and GPU driver, which weights its model folder holds, and the versions inside the image. A revision
// records it, so a rollback can say what it must find again and `liftoff revisions --diff` what changed.
// Pure: the facts were read and parsed already (src/parsers/agreement-facts.ts).
import type { HostFacts } from '../parsers/agreement-facts.js';
import type { HostIdentity } from '../shared/revisions.js';

// A Hugging Face cache folder keeps each revision under snapshots/<commit>: git's 40 hex digits (64 for a
// SHA-256 repository).
const snapshotPath = /^\.\/snapshots\/([0-9a-f]{40}|[0-9a-f]{64})\//;

export function hostIdentityOf(facts: HostFacts): HostIdentity {
  const snapshot = snapshotOf(facts);
  const indexSha256 = facts.indexSha256?.sha256;
  return {
    host: facts.host,
    ...(facts.imageId !== undefined ? { imageId: facts.imageId } : {}),
    ...(facts.kernel !== undefined ? { kernel: facts.kernel } : {}),
    ...(facts.driver !== undefined ? { driver: facts.driver } : {}),
    ...(snapshot !== undefined || indexSha256 !== undefined
      ? {
          weights: {
            ...(snapshot !== undefined ? { snapshot } : {}),
            ...(indexSha256 !== undefined ? { indexSha256 } : {}),
          },
        }
      : {}),
    ...(facts.versions !== undefined ? { versions: { ...facts.versions } } : {}),
  };
}

/**
 * The snapshot commit the weights come from: the hashed index's, else the first index's, else the one snapshot
 * the weight list holds. A folder with several snapshots and no index says nothing (which one vLLM loads is
 * refs/main's, which is not read); a folder that is not an HF cache folder has none.
 */
export function snapshotOf(facts: HostFacts): string | undefined {
  const fromIndex = facts.indexSha256?.file ?? facts.indexes[0]?.file;
  if (fromIndex !== undefined) return snapshotPath.exec(fromIndex)?.[1];
  const listed = new Set<string>();
  for (const entry of facts.weights?.entries ?? []) {
    const commit = snapshotPath.exec(entry.path)?.[1];
    if (commit !== undefined) listed.add(commit);
  }
  return listed.size === 1 ? [...listed][0] : undefined;
}
