// The agreement read of one host, declared once: its named reads (each fact its own command, run in the host's
// preflight trip or, when its facts did not come from there, by checkHostsAgree alone) and the parse of what they
// returned into the host's facts. Read only. The versions inside the image cost a container start, so they are
// read on the head in its trip, and on another host only for an image ID the head does not share.
import type { StepCommand, Answers } from '../host-commands/step-command.js';
import type { ExecResult } from '../ssh/executor.js';
import {
  clockCommand,
  gpuDriverCommand,
  imageVersionsCommand,
  indexSha256Command,
  ipcCommand,
  kernelCommand,
  linksCommand,
  machineIdCommand,
  rayPortProbeCommand,
  weightHashesCommand,
  weightIndexesCommand,
  weightListCommand,
  type HostReadInput,
} from '../host-commands/agreement.js';
import { imageIdCommand, ipv4AddressesCommand } from '../host-commands/preflight.js';
import {
  parseHostFacts,
  parseVersions,
  type FactSection,
  type HostFacts,
} from '../parsers/agreement-facts.js';

const small = 64 * 1024;
const listing = 4 * 1024 * 1024;

/** Each fact's read by its section name; `image-id` and `addresses` are the preflight checks' own reads. */
function factReads(input: HostReadInput): [FactSection, StepCommand][] {
  const reads: [FactSection, StepCommand][] = [
    ['clock', { name: 'clock', command: clockCommand(), maxBytes: 256 }],
    ['machine', { name: 'machine-id', command: machineIdCommand(), maxBytes: 256 }],
    ['image', { name: 'image-id', command: imageIdCommand(input.image) }],
    ['addr', { name: 'addresses', command: ipv4AddressesCommand() }],
    ['link', { name: 'links', command: linksCommand(), maxBytes: small }],
    ['weights', { name: 'weight-list', command: weightListCommand(input.modelPath), maxBytes: listing }],
    ['index', { name: 'weight-indexes', command: weightIndexesCommand(input.modelPath), maxBytes: listing }],
    ['ipc', { name: 'ipc', command: ipcCommand(), maxBytes: small }],
    // The host's identity (src/preflight/host-identity.ts): what a revision records and a rollback finds again.
    ['kernel', { name: 'kernel', command: kernelCommand(), maxBytes: 256 }],
    ['driver', { name: 'gpu-driver', command: gpuDriverCommand(), maxBytes: 2048 }],
    ['index-sha', { name: 'index-sha256', command: indexSha256Command(input.modelPath), maxBytes: 2048 }],
  ];
  if (input.hashWeights)
    reads.push([
      'hash',
      { name: 'weight-hashes', command: weightHashesCommand(input.modelPath), maxBytes: listing },
    ]);
  if (input.rayHead)
    reads.push(['ray', { name: 'ray-port', command: rayPortProbeCommand(input.rayHead), maxBytes: small }]);
  return reads;
}

export const versionsRead = (image: string): StepCommand => ({
  name: 'versions',
  command: imageVersionsCommand(image),
});

/**
 * The host's agreement reads, the clock first (its offset is measured from when the trip started), and with
 * `withVersions` the versions inside the image last.
 */
export function agreementCommands(input: HostReadInput, withVersions: boolean): StepCommand[] {
  return [...factReads(input).map(([, c]) => c), ...(withVersions ? [versionsRead(input.image)] : [])];
}

/** How long the read may take: hashing reads every byte of the weights, so it gets most of the agreement profile's 3 hours. */
export function readTimeoutMs(input: HostReadInput): number {
  return input.hashWeights ? 170 * 60_000 : 60_000;
}

/** An answer's lines; the last one dropped when the runner cut the output there, since it may be a part of one. */
function linesOf(answer: ExecResult): string[] {
  const lines = answer.stdout.split('\n');
  if (answer.stdoutCutBytes) lines.pop();
  return lines.filter((l) => l !== '');
}

/**
 * The host's facts out of the answers to agreementCommands(input, withVersions) (alone or inside a larger run);
 * the versions count only for a host whose image is there.
 */
export function factsOf(answers: Answers, input: HostReadInput, startedAtMs: number): HostFacts {
  const sections = new Map<FactSection, string[]>();
  for (const [section, read] of factReads(input)) {
    const answer = answers.get(read.name);
    if (answer) sections.set(section, linesOf(answer));
  }
  const facts = parseHostFacts(input.host, sections, startedAtMs);
  if (facts.weights && answers.get('weight-list')?.stdoutCutBytes) facts.weights.truncated = true;
  const versions = answers.get(versionsRead(input.image).name);
  if (versions && facts.imageId !== undefined) facts.versions = parseVersions(versions.stdout);
  return facts;
}

/**
 * A host's facts go into the workflow's history (the preflight report, then checkHostsAgree's input), so only
 * up to this size; a host with more (a model folder of thousands of files) is read again by checkHostsAgree.
 */
export const maxPassedFactsBytes = 32 * 1024;

/** The facts as preflightHost returns them, or undefined when they are too big to pass through the history. */
export function factsToPass(facts: HostFacts): HostFacts | undefined {
  return JSON.stringify(facts).length <= maxPassedFactsBytes ? facts : undefined;
}
