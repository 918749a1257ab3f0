// Part of step 1, read only: do the hosts agree with each other (image, versions, weights, addresses, IPC,
// clocks)? One activity for every host, since each answer only means something beside the others'. Each host's
// facts come from its preflightHost's trip, passed in by the workflow; a host whose facts are absent (an older
// run's input, a report without them) is read here. A host that cannot be reached is left out: its own preflight
// reports the SSH failure.
import type { HostFacts } from '../parsers/agreement-facts.js';
import { parseVersions } from '../parsers/agreement-facts.js';
import type { SshSession } from '../ssh/executor.js';
import { runCommands } from './run-commands.js';
import { onHost } from './ssh-context.js';
import type { HostRef } from '../config/targets.js';
import {
  compareHosts,
  hostReadOf,
  type AgreementExpectations,
  type AgreementReport,
} from '../preflight/agreement.js';
import { agreementCommands, factsOf, readTimeoutMs, versionsRead } from '../steps/agreement-read.js';

export interface AgreementInput extends AgreementExpectations {
  refs: Record<string, HostRef>;
  hashWeights: boolean;
  /** Hosts' facts their preflightHost read (PreflightReport.facts); the hosts not among them are read here. */
  facts?: HostFacts[];
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
      // A copy: the versions are filled in below, and the input is the workflow's.
      const passed = input.facts?.find((f) => f.host === h.name);
      if (passed) {
        const facts = { ...passed };
        slot.resolve(facts);
        if (await needsVersions(facts))
          facts.versions = await onHost(ref, (session) => readImageVersions(session, input.image));
        return facts;
      }
      return await onHost(ref, async (session) => {
        // The head reads the versions inside the image in the same round trip as its facts.
        const startedAtMs = Date.now();
        const withVersions = h === head;
        const answers = await runCommands(session, agreementCommands(read, withVersions), {
          timeoutMs: readTimeoutMs(read) + (withVersions ? 120_000 : 0),
        });
        const facts = factsOf(answers, read, startedAtMs);
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

/**
 * Python, Ray and vLLM inside the image, from the package metadata (nothing is imported, so it takes a moment).
 * No network, never a pull: a missing image is the image check's to report.
 */
async function readImageVersions(session: SshSession, image: string): Promise<HostFacts['versions']> {
  const read = versionsRead(image);
  const answers = await runCommands(session, [read], { timeoutMs: 120_000 });
  return parseVersions(answers.get(read.name)?.stdout ?? '');
}

function deferred<T>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
