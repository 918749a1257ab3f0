// The spec `liftoff init` writes: YAML by hand, so every choice can carry its comment (what was picked, why,
// and what was not). The file is printable ASCII and newlines only, whatever the hosts printed: a human reads
// what a parser reads. Comments show anything else as an escape (\u2028, \u202e): YAML refuses control
// characters, a YAML 1.1 reader (PyYAML) takes U+2028, U+2029 and U+0085 for line breaks, so a hostile GPU name
// could otherwise start a line of its own, and bidi controls make a line read in another order than it parses.
// Values are double-quoted with the same escapes, which YAML reads back as the characters they stand for.
import type { Choice, CleanupSuggestion, InitChoices } from './choose.js';
import { rayContainerName } from './choose.js';
import type { HostFacts } from './probe.js';
import type { CompanionChoices, CompanionProposal } from './companions.js';

export interface InitSshOptions {
  user: string;
  privateKeyPath?: string;
  useAgent?: boolean;
  knownHostsPath: string;
}

export interface WriteSpecInput {
  cluster: string;
  ssh: InitSshOptions;
  choices: InitChoices;
  facts: HostFacts[];
  /** Shown in the header: when the hosts were probed. */
  probedAt: string;
}

// Everything but printable ASCII, one code point at a time.
const notPrintableAscii = /[^\x20-\x7e]/gu;
const escapeOf = (c: string): string => {
  const code = c.codePointAt(0) ?? 0;
  return code > 0xffff
    ? `\\U${code.toString(16).padStart(8, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
};
/** A YAML double-quoted string: JSON's escapes, and \uXXXX (\UXXXXXXXX) for anything else not printable ASCII. */
const q = (v: string): string => JSON.stringify(v).replace(notPrintableAscii, escapeOf);
/** Comment text: what is not printable ASCII shown as its escape, so it can neither end the comment nor hide. */
const commentText = (text: string): string => text.replace(notPrintableAscii, escapeOf);
const fallbackModel = 'Org/Model-Name';
const fallbackLog = '/var/tmp/liftoff-vllm-serve.log';

function choiceComments(indent: string, what: string, choice: Choice<unknown>): string[] {
  const picked = choice.alternatives.length > 0 ? 'picked ' : '';
  return [
    `${indent}# ${what}: ${picked}${commentText(choice.reason)}`,
    ...choice.alternatives.map((alt) => `${indent}#   not picked: ${commentText(alt)}`),
  ];
}

/** Which hosts reported each suggestion; one that only some hosts run is flagged, as a deploy stops it on all. */
function reportedBy(items: CleanupSuggestion[], hosts: string[]): string[] {
  return items.map((item) => {
    const missing = hosts.filter((h) => !item.hosts.includes(h));
    const on = item.hosts.join(', ');
    const where =
      missing.length === 0
        ? `reported by ${hosts.length === 1 ? on : `every host (${on})`}`
        : `ONLY SOME HOSTS: reported by ${on}, not by ${missing.join(', ')}`;
    return `  #   ${commentText(item.name)}: ${commentText(where)}`;
  });
}

function gpuSummary(h: HostFacts): string {
  if (h.gpus.length === 0) return 'no GPU listed by nvidia-smi';
  const names = [...new Set(h.gpus.map((g) => g.name))].join(', ');
  const unified = h.gpus.some((g) => g.memoryTotalMiB === null);
  const memory = unified
    ? 'unified memory (nvidia-smi reports no device memory)'
    : `${Math.min(...h.gpus.map((g) => g.memoryTotalMiB ?? 0))} MiB each`;
  return `${h.gpus.length} GPU (${names}, ${memory})`;
}

/** Where the serve log goes: the home that holds the HF cache (it exists on the head), else /var/tmp. */
function logPathFor(cacheDir: string | undefined): string {
  const home =
    cacheDir !== undefined ? /^(\/home\/[^/]+|\/root)\/\.cache\/huggingface$/.exec(cacheDir)?.[1] : undefined;
  return home ? `${home}/liftoff-vllm-serve.log` : fallbackLog;
}

const sourceOf = (p: { source: CompanionProposal['source'] }): string =>
  `${p.source.kind === 'unit' ? 'unit' : 'container'} ${p.source.name} on ${p.source.host}`;

/** One companion: the found line the user confirms, then its fields, each that needs it with its comment. */
function companionLines(p: CompanionProposal): string[] {
  const c = p.companion;
  const out = [
    `  # found: ${commentText(sourceOf(p))} running ${commentText(p.commandLine)}; confirm before deploying`,
    ...p.notes.map((n) => `  # note: ${commentText(n)}`),
    `  - name: ${q(c.name)}`,
    `    host: ${q(c.host)}`,
  ];
  if (c.image !== undefined) out.push(`    image: ${q(c.image)}`);
  out.push(`    command: [${c.command.map(q).join(', ')}]`);
  if (c.model !== undefined) out.push(`    model: ${q(c.model)}`);
  out.push(`    port: ${c.port}`);
  out.push(`    # ${commentText(p.memory.reason)}`, `    memoryMiB: ${c.memoryMiB}`);
  out.push(`    probe: ${c.probe}`, `    gpus: ${c.gpus}`);
  if (c.volumes.length > 0) out.push('    volumes:', ...c.volumes.map((v) => `      - ${q(v)}`));
  return out;
}

/** The companions section: what was offered, and as comments what was found but not offered, with why. */
function companionsSection(choices: CompanionChoices): string[] {
  const found = choices.proposals.length + choices.notOffered.length;
  if (found === 0) return [];
  const out = [
    '# vLLM services found running beside the main model: the deploy starts each again as a companion (in its own',
    '# container, liftoff-NAME) after the main model answers, once cleanup stopped the unit or container it was.',
  ];
  for (const n of choices.notOffered) {
    const line = n.commandLine !== undefined ? ` running ${n.commandLine}` : '';
    out.push(`# not offered: ${commentText(`${sourceOf(n)}${line}: ${n.reason}`)}`);
  }
  if (choices.proposals.length === 0) return [...out, 'companions: []'];
  out.push('companions:');
  for (const p of choices.proposals) out.push(...companionLines(p));
  return out;
}

export function writeSpecText(input: WriteSpecInput): string {
  const { choices } = input;
  const out: string[] = [
    `# liftoff spec written by \`liftoff init\` from what the hosts showed (read only) at ${input.probedAt}.`,
    '# Check each choice below (the comments say what was picked and why), then:',
    '#   liftoff validate -c THIS_FILE && liftoff plan -c THIS_FILE',
  ];
  for (const w of choices.warnings) out.push(`# WARNING: ${commentText(w)}`);
  out.push(`cluster: ${q(input.cluster)}`, 'ssh:', `  user: ${q(input.ssh.user)}`);
  if (input.ssh.privateKeyPath !== undefined) out.push(`  privateKeyPath: ${q(input.ssh.privateKeyPath)}`);
  if (input.ssh.useAgent) out.push('  useAgent: true');
  out.push(`  knownHostsPath: ${q(input.ssh.knownHostsPath)}`, 'hosts:');
  for (const h of choices.hosts) {
    const facts = input.facts.find((f) => f.name === h.name);
    out.push(`  # ${h.name}: ${commentText(facts ? gpuSummary(facts) : 'not probed')}`);
    out.push(`  - name: ${q(h.name)}`, `    address: ${q(h.address)}`, `    role: ${h.role}`);
    if (h.jumpHost) out.push(`    jumpHost: ${q(h.jumpHost)}`);
    if (h.cluster) {
      out.push(...choiceComments('    ', 'clusterIp', h.cluster));
      out.push(`    clusterIp: ${q(h.cluster.value.ip)}`);
    } else {
      out.push(
        '    # clusterIp: no candidate interface found; the SSH address stands in',
        `    clusterIp: ${q(h.address)}`,
      );
    }
  }
  out.push('cleanup:');
  out.push(
    '  # running on the hosts now: vLLM services, and containers of an inference server; the deploy stops and removes them',
    ...(choices.companions.proposals.length > 0
      ? ['  # (those offered under companions below come back as companions once the main model answers)']
      : []),
  );
  const hostNames = choices.hosts.map((h) => h.name);
  out.push(...reportedBy(choices.services, hostNames));
  out.push(`  services: [${choices.services.map((x) => q(x.name)).join(', ')}]`);
  out.push('  # so a reboot does not start them again');
  out.push('  disableServices: true');
  out.push(...reportedBy(choices.containers, hostNames));
  out.push(`  containers: [${choices.containers.map((x) => q(x.name)).join(', ')}]`);
  if (choices.otherContainers.length > 0) {
    out.push(
      `  # also running, not suggested (no sign of an inference server): ${commentText(choices.otherContainers.join(', '))}`,
    );
  }
  out.push('gpu:', `  perHost: ${choices.gpusPerHost}`);
  out.push('ray:', ...choiceComments('  ', 'image', choices.image), `  image: ${q(choices.image.value)}`);
  out.push(`  container: ${q(rayContainerName)}`, '  env:');
  if (choices.iface !== undefined) {
    out.push("    # the head's cluster interface (the comments under hosts say why)");
    out.push(`    NCCL_SOCKET_IFNAME: ${q(choices.iface)}`, `    GLOO_SOCKET_IFNAME: ${q(choices.iface)}`);
  } else {
    out.push('    {}');
  }
  const model = choices.model;
  // Without a model found, the login's own cache: where `huggingface-cli download` run as it would put one.
  const home = input.ssh.user === 'root' ? '/root' : `/home/${input.ssh.user}`;
  const cacheDir = model?.value.cacheDir ?? `${home}/.cache/huggingface`;
  out.push('  volumes:');
  if (!model) out.push("    # no model found: the SSH user's own Hugging Face cache");
  out.push(`    - ${q(`${cacheDir}:/root/.cache/huggingface`)}`);
  out.push('serve:');
  if (model) out.push(...choiceComments('  ', 'model', model));
  else out.push("  # model: none found in the hosts' Hugging Face caches; name yours here");
  out.push(`  model: ${q(model?.value.id ?? fallbackModel)}`);
  out.push(`  tensorParallelSize: ${choices.hosts.length * choices.gpusPerHost}`);
  out.push(`  logPath: ${q(logPathFor(cacheDir))}`);
  out.push(...companionsSection(choices.companions));
  return `${out.join('\n')}\n`;
}
