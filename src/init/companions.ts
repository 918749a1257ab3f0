// `liftoff init`'s companions: each vLLM unit or inference container a host runs beside the main model, offered as a
// spec companion with the command line read from it (init/command-line.ts), so a deploy brings it back instead of
// only stopping it. Every proposal must pass the companion schema and the cross-field rules as written, since the
// spec must validate; one that cannot is listed as not offered, with why. Pure.
import {
  companionIssues,
  companionModel,
  companionSchema,
  gpuMemoryUtilizationOf,
  type CompanionProbeKind,
  type CompanionSpec,
} from '../config/companions.js';
import { flagValue } from '../config/vllm-flags.js';
import { rayOnlyFields } from '../config/backend.js';
import { dangerousMountProblem } from '../config/host-guards.js';
import { volume as volumeSchema } from '../config/text-fields.js';
import { credentialShape, isSecretFlag, secretArgs } from '../shared/secrets.js';
import type { ReadCommandLine } from './command-line.js';

/** Where a service was found: a systemd unit or a running container, on one host. */
export interface FoundService {
  kind: 'unit' | 'container';
  name: string;
  host: string;
  /** What was read from it; undefined when its command line could not be read. */
  read: ReadCommandLine | undefined;
}

/** Which unit or container a proposal comes from (what was read from it stays out: it may hold a credential). */
export type ServiceRef = Pick<FoundService, 'kind' | 'name' | 'host'>;

/** A companion as init writes it: the spec's fields (defaults left to the schema) and why each is so. */
export interface CompanionProposal {
  companion: Pick<
    CompanionSpec,
    'name' | 'host' | 'command' | 'port' | 'memoryMiB' | 'probe' | 'gpus' | 'volumes'
  > &
    Partial<Pick<CompanionSpec, 'image' | 'model'>>;
  source: ServiceRef;
  /** The command line as read, credentials redacted: for the comment the user confirms. */
  commandLine: string;
  /** How memoryMiB was found; `placeholder` when nothing said, and the user must set it. */
  memory: { placeholder: boolean; reason: string };
  notes: string[];
}

export interface NotOffered {
  source: ServiceRef;
  commandLine: string | undefined;
  reason: string;
}

export interface CompanionChoices {
  proposals: CompanionProposal[];
  notOffered: NotOffered[];
}

export interface HostMemory {
  host: string;
  /** One GPU's memory (--gpu-memory-utilization is a share of it), else the host's MemTotal on unified memory. */
  mib: number | null;
  what: string;
}

/** What memoryMiB says when nothing on the host told: a round figure the comment asks the user to replace. */
export const placeholderMemoryMiB = 4096;
/** The longest command line a comment shows. */
const maxShownChars = 600;
// The names of embedding and reranker models, as vLLM's `--runner auto` would tell them from the architecture.
const rerankerName = /rerank/i;
const embeddingName = /embed|(?:^|[/_-])(?:bge|e5|gte)(?:[-_]|$)|minilm|sentence-transformers\//i;
const basename = (word: string): string => word.slice(word.lastIndexOf('/') + 1);

/** The companion's name from its unit or container: vllm-embeddings.service → embeddings. */
export function companionNameOf(source: string): string {
  const name = source
    .toLowerCase()
    .replace(/\.service$/, '')
    .replace(/^vllm[-_]/, '')
    .replace(/[-_]vllm$/, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 24)
    .replace(/-+$/, '');
  return name === '' ? 'companion' : name;
}

/** The command line for the comment: credentials shown as [redacted], cut to a readable length. */
export function shownCommandLine(argv: readonly string[]): string {
  const secret = new Set(secretArgs(argv).map((s) => s.index));
  const shown = argv
    .map((arg, i) =>
      secret.has(i)
        ? isSecretFlag(arg) && arg.includes('=')
          ? `${arg.slice(0, arg.indexOf('='))}=[redacted]`
          : '[redacted]'
        : credentialShape(arg) !== undefined
          ? '[redacted]'
          : arg,
    )
    .join(' ');
  return shown.length > maxShownChars ? `${shown.slice(0, maxShownChars)} …` : shown;
}

/** The argv without its credentials: a secret flag with its value, and any value shaped like a credential. */
function withoutCredentials(argv: readonly string[]): { argv: string[]; dropped: string[] } {
  const values = new Set(secretArgs(argv).map((s) => s.index));
  const dropped: string[] = [];
  const kept = argv.filter((arg, i) => {
    const secretFlag = isSecretFlag(arg);
    if (secretFlag || values.has(i) || credentialShape(arg) !== undefined) {
      if (secretFlag) dropped.push(arg.replace(/=.*$/s, ''));
      else if (!values.has(i)) dropped.push('a value shaped like a credential');
      return false;
    }
    return true;
  });
  return { argv: kept, dropped };
}

const isVllmServe = (argv: readonly string[]): boolean =>
  (basename(argv[0] ?? '') === 'vllm' && argv[1] === 'serve') ||
  argv.includes('vllm.entrypoints.openai.api_server');

/** What the companion's readiness probe sends: from --runner/--convert (vLLM ≥ 0.10), --task (older), the name. */
export function probeKindOf(command: readonly string[], model: string | undefined): CompanionProbeKind {
  if (!isVllmServe(command)) return 'health';
  const convert = flagValue(command, 'convert');
  const task = flagValue(command, 'task');
  const runner = flagValue(command, 'runner');
  const name = model ?? '';
  if (convert === 'classify' || task === 'score' || task === 'rerank' || rerankerName.test(name))
    return 'rerank';
  if (convert === 'embed' || task === 'embed' || task === 'embedding' || runner === 'pooling')
    return 'embeddings';
  if (runner === undefined && embeddingName.test(name)) return 'embeddings';
  return 'chat';
}

type Proposed = Omit<CompanionProposal, 'companion'> & {
  companion: Omit<CompanionProposal['companion'], 'name'>;
};

/** One found service as a companion, or why it is not offered. */
function proposeOne(
  source: FoundService,
  mainModel: string | undefined,
  memory: HostMemory | undefined,
): Proposed | (NotOffered & { quiet?: true }) {
  const { read, ...ref } = source;
  if (!read) return { source: ref, commandLine: undefined, reason: 'its command line could not be read' };
  const commandLine = shownCommandLine(read.argv);
  const refuse = (reason: string): NotOffered => ({ source: ref, commandLine, reason });
  const notes: string[] = [];
  let command: string[];
  let image: string | undefined;
  let volumes: string[] = [];
  let gpus: boolean;
  if (read.container) {
    const c = read.container;
    command = c.command;
    if (!c.entrypointKnown) {
      if (!/vllm/i.test(c.image))
        return refuse(
          `it runs ${c.image}'s own entrypoint, which init does not read: write its command by hand`,
        );
      // vLLM's images start `vllm serve`: the arguments are the model and its flags.
      command = ['vllm', 'serve', ...c.command];
    }
    image = c.image;
    volumes = c.volumes;
    gpus = c.gpus || isVllmServe(command);
    if (c.env)
      notes.push('it was given environment variables, not copied (one may be a token): add them under env');
  } else if (isVllmServe(read.argv)) {
    // vLLM run on the host itself: the companion runs the same command in the cluster's image.
    command = basename(read.argv[0] ?? '') === 'vllm' ? ['vllm', ...read.argv.slice(1)] : read.argv;
    gpus = true;
    notes.push(
      "it ran on the host, not in a container: the companion runs it in the cluster's image (ray.image)",
    );
  } else {
    return refuse(`it runs ${basename(read.argv[0] ?? '?')}, neither vLLM nor a container`);
  }
  // A container that runs no vLLM is no service of this kind: cleanup lists it, nothing more is said.
  if (source.kind === 'container' && !isVllmServe(command))
    return { ...refuse('it runs no vLLM server'), quiet: true };
  const clean = withoutCredentials(command);
  if (clean.dropped.length > 0) {
    notes.push(
      `left out ${clean.dropped.join(', ')}: a credential would be stored in the spec and Temporal's history; pass it through env with a { fromEnv } or { fromFile } reference`,
    );
  }
  command = clean.argv;
  const explicitModel = flagValue(command, 'model');
  const model = companionModel({ command, model: undefined }) ?? explicitModel;
  if (mainModel !== undefined && model === mainModel)
    return refuse(`it serves the main model (${mainModel})`);
  const portText = flagValue(command, 'port');
  const port = portText === undefined ? 8000 : /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) return refuse(`its --port ${JSON.stringify(portText)} is no port`);
  const share = gpuMemoryUtilizationOf(command);
  const memoryOf = (): CompanionProposal['memory'] & { mib: number } => {
    if (share !== undefined && memory?.mib != null) {
      return {
        mib: Math.max(1, Math.ceil(share * memory.mib)),
        placeholder: false,
        reason: `--gpu-memory-utilization ${share} of ${memory.mib} MiB (${memory.what})`,
      };
    }
    const why =
      share === undefined
        ? 'its command sets no --gpu-memory-utilization'
        : `the memory of ${source.host} is not known`;
    return { mib: placeholderMemoryMiB, placeholder: true, reason: `PLACEHOLDER: ${why}; set what it takes` };
  };
  const { mib, ...memoryWhy } = memoryOf();
  const keptVolumes = volumes.filter((v) => {
    const problem = volumeSchema.safeParse(v).success ? dangerousMountProblem(v) : 'not HOST:CONTAINER';
    if (problem !== undefined) notes.push(`left out the mount ${v}: ${problem}`);
    return problem === undefined;
  });
  const probe = probeKindOf(command, model);
  const needsModel = probe !== 'health' && companionModel({ command, model: undefined }) === undefined;
  return {
    companion: {
      host: source.host,
      ...(image !== undefined ? { image } : {}),
      command,
      ...(needsModel && model !== undefined ? { model } : {}),
      port,
      memoryMiB: mib,
      probe: needsModel && model === undefined ? 'health' : probe,
      gpus,
      volumes: keptVolumes,
    },
    source: ref,
    commandLine,
    memory: memoryWhy,
    notes,
  };
}

/**
 * The companions to offer from what the hosts run, in the order found: named after their unit or container (made
 * unique with the host's name), each checked against the schema and the spec's rules as init writes the spec.
 * A container a found unit runs (its `docker run --name`) is the unit's, offered once.
 */
export function proposeCompanions(
  found: readonly FoundService[],
  opts: {
    mainModel: string | undefined;
    hosts: { name: string; role: 'head' | 'worker' }[];
    memory: HostMemory[];
    rayContainer: string;
  },
): CompanionChoices {
  const proposals: CompanionProposal[] = [];
  const notOffered: NotOffered[] = [];
  const runByUnit = new Map<string, string>();
  for (const f of found) {
    const name = f.kind === 'unit' ? f.read?.container?.name : undefined;
    if (name !== undefined) runByUnit.set(`${f.host}\0${name}`, f.name);
  }
  const names = new Set<string>();
  const uniqueName = (base: string, host: string): string => {
    const candidates = [base, `${base.slice(0, 23 - host.length)}-${host}`];
    for (const c of candidates) if (/^[a-z0-9][a-z0-9-]{0,23}$/.test(c) && !names.has(c)) return c;
    for (let n = 2; ; n++) {
      const c = `${base.slice(0, 23 - String(n).length)}-${n}`;
      if (!names.has(c)) return c;
    }
  };
  for (const source of found) {
    const unit = source.kind === 'container' ? runByUnit.get(`${source.host}\0${source.name}`) : undefined;
    if (unit !== undefined || source.name === opts.rayContainer) continue;
    const p = proposeOne(
      source,
      opts.mainModel,
      opts.memory.find((m) => m.host === source.host),
    );
    if ('reason' in p) {
      if (p.quiet === undefined) notOffered.push(p);
      continue;
    }
    const proposal: CompanionProposal = {
      ...p,
      companion: { name: uniqueName(companionNameOf(source.name), source.host), ...p.companion },
    };
    const parsed = companionSchema.safeParse(proposal.companion);
    const issues = parsed.success
      ? companionIssues({
          hosts: opts.hosts,
          ray: { container: opts.rayContainer, port: rayOnlyFields.port },
          serve: { port: 8000 },
          companions: [...proposals.map((x) => companionSchema.parse(x.companion)), parsed.data],
        }).filter((i) => i.path[1] === proposals.length)
      : parsed.error.issues.map((i) => ({ path: i.path, message: i.message }));
    if (issues.length > 0) {
      notOffered.push({
        source: p.source,
        commandLine: p.commandLine,
        reason: `as a companion it would not validate: ${issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      });
      continue;
    }
    names.add(proposal.companion.name);
    proposals.push(proposal);
  }
  return { proposals, notOffered };
}
