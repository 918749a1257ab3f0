// What a cluster's workflow puts in its LiftoffHostIds search attribute for each host it holds: a 4-character
// digest of the host's machine id, not the id. Temporal caps one search attribute value at 2048 bytes (its JSON),
// and 32-hex-digit ids ("…", 35 bytes each) stopped fitting at 59 hosts; 256 digests (the most hosts a spec may
// name) take 1793. A digest is only for finding candidates: two machines can share one (24 bits), so whoever
// looks a host up confirms it against the full ids in the cluster's memo. Pure, for the workflows.

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** FNV-1a (32 bits) of the id's UTF-16 code units, cut to 24 bits, as four base64url characters. */
export function hostDigest(machineId: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < machineId.length; i += 1) {
    hash ^= machineId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  const bits = hash >>> 8;
  let text = '';
  for (let shift = 18; shift >= 0; shift -= 6) text += alphabet[(bits >>> shift) & 63] ?? '';
  return text;
}

/** The digests of `machineIds`, each once, in the order first seen. */
export function hostDigests(machineIds: readonly string[]): string[] {
  return [...new Set(machineIds.map(hostDigest))];
}
