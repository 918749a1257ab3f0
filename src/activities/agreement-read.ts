// The reads behind the agreement checks: one remote command per host, read only, every section bounded on the
// host. The versions inside the image cost a container start, so they are read on one host per distinct image
// ID: an image ID is the hash of the image's content, so hosts that share it share its versions.
import { randomBytes } from 'node:crypto';
import type { SshSession } from '../ssh/executor.js';
import { hostReadCommand, imageVersionsCommand, type HostReadInput } from '../host-commands/agreement.js';
import { parseHostFacts, parseVersions, splitSections, type HostFacts } from '../parsers/agreement-facts.js';

/** How long the read may take: hashing reads every byte of the weights, so it gets most of the agreement profile's 3 hours. */
function readTimeoutMs(input: HostReadInput): number {
  return input.hashWeights ? 170 * 60_000 : 60_000;
}

export async function readHostFacts(session: SshSession, input: HostReadInput): Promise<HostFacts> {
  const nonce = randomBytes(8).toString('hex');
  const startedAtMs = Date.now();
  const res = await session.exec(hostReadCommand(input, nonce), {
    timeoutMs: readTimeoutMs(input),
    check: false,
    maxOutputBytes: 8 * 1024 * 1024,
  });
  return parseHostFacts(input.host, splitSections(res.stdout, nonce), startedAtMs);
}

/**
 * Python, Ray and vLLM inside the image, from the package metadata (nothing is imported, so it takes a moment).
 * No network, never a pull: a missing image is the image check's to report.
 */
export async function readImageVersions(session: SshSession, image: string): Promise<HostFacts['versions']> {
  const res = await session.exec(imageVersionsCommand(image), { timeoutMs: 120_000, check: false });
  return parseVersions(res.stdout);
}

export type { HostReadInput };
