// Part of step 1, read only: do the hosts agree with each other (image, versions, weights, addresses, IPC,
// clocks)? One activity for every host, since each answer only means something beside the others'. A host
// that cannot be reached is left out here: its own preflight reports the SSH failure.
import type { HostFacts } from '../parsers/agreement-facts.js';
import { readHostFactsOnce, readImageVersions } from './agreement-read.js';
import { onHost } from './ssh-context.js';
import type { HostRef } from '../config/targets.js';
import {
  compareHosts,
  hostReadOf,
  type AgreementExpectations,
  type AgreementReport,
} from '../preflight/agreement.js';
import { takeHandoff } from './step-handoff.js';
import { factsKey } from '../host-commands/agreement.js';

export interface AgreementInput extends AgreementExpectations {
  refs: Record<string, HostRef>;
  hashWeights: boolean;
  /** Take the facts each host's preflightHost read in this worker (step-handoff.ts); read the rest. */
  cachedFacts?: boolean;
}

export interface AgreementResult extends AgreementReport {
  /** Hosts whose facts could not be read, with why. */
  unread: { host: string; error: string }[];
}

export async function checkHostsAgree(input: AgreementInput): Promise<AgreementResult> {
  const head = input.hosts.find((h) => h.role === 'head');
  // Each host's facts resolve its slot, so the versions phase can see every image ID without a second session.
  const slots = input.hosts.map(() => deferred<HostFacts | undefined>());
  const all = Promise.all(slots.map((s) => s.promise));
  /** An image ID the head's versions do not cover is read once, on its first host. */
  const needsVersions = async (facts: HostFacts): Promise<boolean> => {
    const everyone = await all;
    const known = everyone.some((f) => f?.versions !== undefined && f.imageId === facts.imageId);
    const firstWithId = everyone.find((f) => f?.imageId !== undefined && f.imageId === facts.imageId);
    return !known && firstWithId === facts;
  };
  const runs = input.hosts.map(async (h, i) => {
    const ref = input.refs[h.name];
    const slot = slots[i];
    if (!ref || !slot) throw new Error(`no SSH reference for ${h.name}`);
    const read = hostReadOf(input, h);
    try {
      // What this host's preflightHost read in its own round trip, when it ran in this worker.
      const kept = input.cachedFacts ? takeHandoff('hostFacts', factsKey(read)) : undefined;
      if (kept) {
        slot.resolve(kept);
        if (await needsVersions(kept))
          kept.versions = await onHost(ref, (session) => readImageVersions(session, input.image));
        return kept;
      }
      return await onHost(ref, async (session) => {
        // The head reads the versions inside the image in the same round trip as its facts.
        const facts = await readHostFactsOnce(session, read, h === head);
        slot.resolve(facts);
        if (await needsVersions(facts)) facts.versions = await readImageVersions(session, input.image);
        return facts;
      });
    } finally {
      slot.resolve(undefined);
    }
  });
  const settled = await Promise.allSettled(runs);
  const facts: HostFacts[] = [];
  const unread: AgreementResult['unread'] = [];
  settled.forEach((r, i) => {
    const name = input.hosts[i]?.name ?? `host ${i}`;
    if (r.status === 'fulfilled') facts.push(r.value);
    else unread.push({ host: name, error: r.reason instanceof Error ? r.reason.message : String(r.reason) });
  });
  // Hosts of one image share its versions: copy them to the hosts that did not read them.
  for (const f of facts) {
    f.versions ??= facts.find((o) => o.versions && o.imageId === f.imageId)?.versions;
  }
  return { ...compareHosts(input, facts), unread };
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T>(): Deferred<T> {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
