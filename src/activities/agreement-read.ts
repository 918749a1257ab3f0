// The reads behind the agreement checks: one remote command per host, read only, every section bounded on the
// host. The versions inside the image cost a container start, so they are read on one host per distinct image
// ID: an image ID is the hash of the image's content, so hosts that share it share its versions.
import { randomBytes } from 'node:crypto';
import type { SshSession } from '../ssh/executor.js';
import {
  hostReadBatch,
  hostReadCommand,
  hostReadMaxBytes,
  imageVersionsCommand,
  type HostReadInput,
} from '../host-commands/agreement.js';
import { prefetchReads } from './prefetch.js';
import { parseHostFacts, parseVersions, splitSections, type HostFacts } from '../parsers/agreement-facts.js';

/** How long the read may take: hashing reads every byte of the weights, so it gets most of the agreement profile's 3 hours. */
export function readTimeoutMs(input: HostReadInput): number {
  return input.hashWeights ? 170 * 60_000 : 60_000;
}

/** The marker of one read's sections: fresh each time, so no host output can forge one. */
export function newNonce(): string {
  return randomBytes(8).toString('hex');
}

/** A host's facts, and with `withVersions` the versions inside the image, in one round trip (hostReadBatch). */
export async function readHostFactsOnce(
  direct: SshSession,
  input: HostReadInput,
  withVersions: boolean,
): Promise<HostFacts> {
  const nonce = newNonce();
  // The clock is read first in the trip: the offset is measured from when the trip started.
  const startedAtMs = Date.now();
  const session = await prefetchReads(direct, hostReadBatch(input, nonce, withVersions), {
    timeoutMs: readTimeoutMs(input) + (withVersions ? 120_000 : 0),
  });
  return factsOfTrip(session, input, nonce, startedAtMs, withVersions);
}

/**
 * The facts (and with `withVersions` the image's versions) out of a trip that carried hostReadBatch(input, nonce,
 * withVersions), whether alone or beside other reads (preflightHost's). The versions are read only from a host whose
 * image is there.
 */
export async function factsOfTrip(
  session: SshSession,
  input: HostReadInput,
  nonce: string,
  startedAtMs: number,
  withVersions: boolean,
): Promise<HostFacts> {
  const facts = await readHostFacts(session, input, nonce, startedAtMs);
  if (withVersions && facts.imageId !== undefined)
    facts.versions = await readImageVersions(session, input.image);
  return facts;
}

export async function readHostFacts(
  session: SshSession,
  input: HostReadInput,
  nonce = newNonce(),
  startedAtMs = Date.now(),
): Promise<HostFacts> {
  const res = await session.exec(hostReadCommand(input, nonce), {
    timeoutMs: readTimeoutMs(input),
    check: false,
    maxOutputBytes: hostReadMaxBytes,
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
