// The text form of `liftoff plan` (the JSON form is the PlanResult itself, round-trip scripts and all). Step by
// step, as the deploy runs them: first what the step will do on each host (its intent; for preflight, what its
// checks found), then every change (`!`) exactly as it runs, one a line, and the step's reads (`$`) counted on one
// line. What every host of a step does alike is said once. --verbose lists every read too, and the script that
// carries several commands in one round trip (transport, not intent). Every command of the deploy in full would
// be some 120 lines for a 2-host spec; a person checks a plan for its intent and its changes. Handed to the one
// output renderer (src/cli/render.ts), which escapes host text first.
import { deploySteps } from '../workflows/steps.js';
import { envTransport } from '../host-commands/env-transport.js';
import type { HostPlan } from '../plan/host-plan.js';
import {
  planPlaceholders,
  type PlannedCommand,
  type PlannedPart,
  type PlannedStep,
} from '../steps/plan-entry.js';
import type { PlanFindings, PlanResult } from '../workflows/index.js';
import { planWidth, wrapCommand, wrapWords } from './plan-wrap.js';

export interface PlanTextOptions {
  /** Also every read, each round trip's script, and the env prelude in front of a command. */
  verbose?: boolean;
}

const titles = new Map<string, string>(deploySteps.map((s) => [s.name, s.title]));
const stepOrder = deploySteps.map((s) => s.name);

/** The env transport's prelude (host-commands/env-transport.ts), said once in the legend instead of per command. */
const envPrelude = `${envTransport({}).prelude.text} `;
const envMark = '⇐';

const placeholderMeaning: Record<string, string> = {
  [planPlaceholders.runId]: 'the run id',
  [planPlaceholders.startedAt]: 'the launch time in ms',
  [planPlaceholders.pid]: "the server's pid",
};

/**
 * A line break inside a text (part of a quoted argument, or of a host's or a spec's text) shows as `\n`, so no
 * command or detail can fake lines of its own, such as a step or a `!` change that is not in the plan.
 */
const oneLine = (text: string): string => text.replaceAll('\n', '\\n');

/** One command as shown: its sign, its text, and when it runs if not always. */
interface Shown {
  sign: string;
  text: string;
  comment?: string;
  /** Words about commands (a count of reads), not a command: wrapped as prose. */
  prose?: true;
}

function shown(text: string, change: boolean, verbose: boolean, comment?: string): Shown {
  const env = !verbose && text.startsWith(envPrelude);
  return {
    sign: `${change ? '!' : '$'}${env ? envMark : ''}`,
    text: oneLine(env ? text.slice(envPrelude.length) : text),
    ...(comment ? { comment } : {}),
  };
}

function whenOf(cmd: { when?: string; repeats?: string; note?: string }): string | undefined {
  const said = [
    cmd.note,
    cmd.when ? `only when ${cmd.when}` : undefined,
    cmd.repeats ? `repeated ${cmd.repeats}` : undefined,
  ].filter((s): s is string => s !== undefined);
  return said.length > 0 ? said.join('; ') : undefined;
}

/**
 * A step's commands on one host, in order, each as it runs: every change, and under --verbose every read and the
 * script of each round trip. By default a step's reads are one line that counts them (and names those that have
 * a name), where the first of them runs: its intent and preflight's findings say what they look at, and the
 * changes are what a person checks a plan for. A trip whose commands this host already ran (a read made again
 * only in a case the plan names) is a comment. `seen` holds the texts of the host's commands so far.
 */
function commandsOf(step: PlannedStep, seen: Set<string>, verbose: boolean): Shown[] {
  const out: Shown[] = [];
  const reads = { at: -1, count: 0, names: [] as string[], sometimes: 0, repeats: '' };
  const read = (name: string | undefined, cmd: PlannedCommand, sometimes: boolean) => {
    if (reads.at === -1) reads.at = out.length;
    reads.count++;
    if (name) reads.names.push(name);
    if (sometimes) reads.sometimes++;
    if (reads.repeats === '' && cmd.repeats) reads.repeats = cmd.repeats;
  };
  for (const cmd of step.commands) {
    const parts: PlannedPart[] = cmd.parts ?? [
      { text: cmd.text, change: cmd.change, ...(cmd.name ? { name: cmd.name } : {}) },
    ];
    const comment = whenOf(cmd);
    if (parts.every((p) => seen.has(p.text))) {
      const n = parts.length === 1 ? 'the read' : `the ${parts.length} reads`;
      if (verbose) out.push({ sign: '#', text: `${n} above again${comment ? `, ${comment}` : ''}` });
      else for (const p of parts) read(p.name, cmd, true);
      continue;
    }
    if (verbose && cmd.parts) out.push({ sign: '»', text: oneLine(`one round trip: ${cmd.text}`) });
    if (verbose && cmd.parts && cmd.parts.length > 1 && comment) out.push({ sign: '#', text: `${comment}:` });
    for (const p of parts) {
      const own = cmd.parts && cmd.parts.length > 1 ? whenOf(p) : comment;
      if (!verbose && !p.change) read(p.name, cmd, cmd.when !== undefined || p.when !== undefined);
      else out.push(shown(p.text, p.change, verbose, own));
    }
    for (const p of parts) seen.add(p.text);
  }
  if (reads.at !== -1) {
    const named = reads.names.length === reads.count ? `: ${reads.names.join(', ')}` : '';
    const some = reads.sometimes > 0 ? ` (${reads.sometimes} only in some cases)` : '';
    out.splice(reads.at, 0, {
      sign: '$',
      prose: true,
      text: `${reads.count === 1 ? '1 read' : `${reads.count} reads`}${named}${some}`,
      ...(reads.repeats ? { comment: `repeated ${reads.repeats}` } : {}),
    });
  }
  return out;
}

/** A shown command as lines at `indent`: wrapped to the plan's width, its comment after it or on its own line. */
function commandLines(s: Shown, indent: string): string[] {
  // A round trip's script is transport, shown as it is (only under --verbose).
  if (s.sign === '»') return [`${indent}» ${s.text}`];
  const commentLines = (text: string) =>
    wrapWords(text, planWidth - indent.length - 2).map((l) => `${indent}# ${l}`);
  if (s.sign === '#') return commentLines(s.text);
  const comment = s.comment ? `  # ${oneLine(s.comment)}` : '';
  const head = `${indent}${s.sign} `;
  const inline = `${head}${s.text}${comment}`;
  if (inline.length <= planWidth) return [inline];
  const lines = s.comment ? commentLines(oneLine(s.comment)) : [];
  if (s.prose) return [...lines, ...proseLines(indent, `${s.sign} `, s.text)];
  const cont = ' '.repeat(head.length + 2);
  wrapCommand(s.text, planWidth - head.length).forEach((l, i) =>
    lines.push(i === 0 ? `${head}${l}` : `${cont}${l}`),
  );
  return lines;
}

/** A labelled line of prose (`label: text`), its continuation lines indented under the text. */
function proseLines(indent: string, label: string, text: string): string[] {
  const lead = `${indent}${label}`;
  return wrapWords(oneLine(text), planWidth - lead.length).map((l, i) =>
    i === 0 ? `${lead}${l}` : `${' '.repeat(lead.length)}${l}`,
  );
}

/** What the step will do on this host: its own intent, or for the steps that start something, the host plan's list. */
function intentOf(step: PlannedStep, host: HostPlan): string[] {
  if (step.skipped) return [`skipped (${step.skipped})`];
  const lines = [...(step.note ? [step.note] : []), ...(step.intent ?? [])];
  if (step.intent) return lines;
  const ray = step.step === 'startRayHead' || step.step === 'startRayWorkers';
  if (ray || step.step === 'launchServe')
    lines.push(...host.start.filter((s) => s.startsWith('Ray ') === ray).map((s) => `start ${s}`));
  return lines;
}

/** Preflight's checks, one line each: a detail every host shares is said once. */
function findingLines(found: readonly PlanFindings[], indent: string): string[] {
  const names = [...new Set(found.flatMap((f) => f.checks.map((c) => c.name)))];
  const lines: string[] = [];
  for (const name of names) {
    const per = found.flatMap((f) => {
      const c = f.checks.find((x) => x.name === name);
      return c ? [{ host: f.host, ...c }] : [];
    });
    const mark = (ok: boolean) => (ok ? '✓' : '✗');
    const first = per[0];
    if (!first) continue;
    const same = per.every((p) => p.ok === first.ok && p.detail === first.detail);
    const hosts = per.map((p) => p.host).join(', ');
    if (same) {
      lines.push(...proseLines(indent, `${mark(first.ok)} ${name} (${hosts}): `, first.detail));
      continue;
    }
    const joined = per.map((p) => `${p.host}${p.ok === first.ok ? '' : ` ${mark(p.ok)}`}: ${p.detail}`);
    const all = `${indent}${mark(per.every((p) => p.ok))} ${name}: ${oneLine(joined.join('; '))}`;
    if (all.length <= planWidth) lines.push(all);
    else
      for (const p of per) lines.push(...proseLines(indent, `${mark(p.ok)} ${name} (${p.host}): `, p.detail));
  }
  return lines;
}

interface HostStep {
  host: HostPlan;
  step: PlannedStep;
  shown: Shown[];
}

function stepBlock(entries: HostStep[], found: PlanFindings[] | undefined): string[] {
  const name = entries[0]?.step.step ?? '';
  const title = `${titles.get(name) ?? name} [${name}]`;
  const reasons = new Set(entries.map((e) => e.step.skipped));
  const [reason] = reasons;
  if (reasons.size === 1 && reason !== undefined) return [`${title}: skipped (${reason})`];
  const lines = [title];
  const label = (hs: HostStep[]) => hs.map((e) => e.host.host).join(', ');
  if (name === 'preflight') {
    if (found) lines.push(...findingLines(found, '  '));
    else lines.push('  passed (this worker does not say what its checks found)');
  }
  const intentLines = (hs: HostStep[], intent: readonly string[]): string[] => {
    const [first, ...rest] = intent;
    if (first === undefined) return [`  ${label(hs)}:`];
    return [...proseLines('  ', `${label(hs)}: `, first), ...rest.flatMap((l) => proseLines('    ', '', l))];
  };
  const commands = (shown: readonly Shown[]) => shown.flatMap((s) => commandLines(s, '    '));
  // The commands every host runs alike are said once, then each host's own.
  const firstShown = entries[0]?.shown ?? [];
  const sameAt = (i: number): boolean => {
    const first = firstShown[i];
    return first !== undefined && entries.every((e) => JSON.stringify(e.shown[i]) === JSON.stringify(first));
  };
  let common = 0;
  while (sameAt(common)) common++;
  if (common === 0 && entries.some((e) => e.shown.length > 0)) {
    // Nothing alike: each host on its own, its intent and then its commands.
    for (const e of entries) lines.push(...intentLines([e], intentOf(e.step, e.host)), ...commands(e.shown));
    return lines;
  }
  // Hosts that will do the same are said together.
  const byIntent = new Map<string, { hosts: HostStep[]; intent: string[] }>();
  for (const e of entries) {
    const intent = intentOf(e.step, e.host);
    const k = JSON.stringify(intent);
    byIntent.set(k, { hosts: [...(byIntent.get(k)?.hosts ?? []), e], intent });
  }
  const groups = [...byIntent.values()];
  const own = entries.filter((e) => e.shown.length > common);
  // The label of the one intent line is the commands' label too, when every host runs them all.
  const oneGroup = groups.length === 1 && own.length === 0;
  // A step that is one line of intent and one line of reads (a check) is said on one line when it fits.
  const [only] = groups;
  const [lone] = firstShown;
  if (oneGroup && only?.intent.length === 1 && common === 1 && lone?.sign === '$' && !lone.comment) {
    const line = `  ${label(only.hosts)}: ${oneLine(only.intent[0] ?? '')}  ${lone.sign} ${lone.text}`;
    if (line.length <= planWidth) return [...lines, line];
  }
  for (const g of groups) if (g.intent.length > 0 || oneGroup) lines.push(...intentLines(g.hosts, g.intent));
  if (!oneGroup) lines.push(`  ${label(entries)}${own.length > 0 && entries.length > 1 ? ', each' : ''}:`);
  lines.push(...commands(firstShown.slice(0, common)));
  for (const e of own) lines.push(`  ${e.host.host}, also:`, ...commands(e.shown.slice(common)));
  return lines;
}

/** Every command of the plan, each part of a round trip on its own. */
const allCommands = (result: PlanResult): { text: string; change: boolean }[] =>
  result.hosts.flatMap((h) => h.steps.flatMap((s) => s.commands)).flatMap((c) => c.parts ?? [c]);

function legend(result: PlanResult, texts: readonly string[], verbose: boolean): string[] {
  const all = texts.join('\n');
  const used = Object.entries(placeholderMeaning).filter(([p]) => new RegExp(`\\b${p}\\b`).test(all));
  const lines = [
    `\`!\` changes a host, \`$\` reads, \`#\` says when a command runs if not always${verbose ? ', `»` is the script of one round trip' : '; --verbose lists every read'}.`,
  ];
  if (used.length > 0)
    lines.push(
      `Known once the deploy runs, so shown by name: ${used.map(([p, m]) => `${p} (${m})`).join(', ')}.`,
    );
  if (!verbose && allCommands(result).some((c) => c.text.startsWith(envPrelude)))
    lines.push(
      ...proseLines(
        '',
        '',
        `\`${envMark}\`: the command runs after \`${envPrelude.trim()}\`, which exports the secret env values sent on its stdin: a command line names a secret, never its value.`,
      ),
    );
  return lines;
}

export function renderPlan(result: PlanResult, opts: PlanTextOptions = {}): string {
  if (!result.wouldStart) {
    return [
      `plan for ${result.cluster}: preflight would refuse the deploy; nothing would be stopped, removed or started:`,
      ...result.problems.map((p) => `  ${oneLine(p)}`),
    ].join('\n');
  }
  const verbose = opts.verbose === true;
  const seen = new Map(result.hosts.map((h) => [h.host, new Set<string>()]));
  const names = [...new Set([...stepOrder, ...result.hosts.flatMap((h) => h.steps.map((s) => s.step))])];
  const blocks: string[][] = [];
  for (const name of names) {
    const entries = result.hosts.flatMap((host): HostStep[] => {
      const step = host.steps.find((s) => s.step === name);
      return step ? [{ host, step, shown: commandsOf(step, seen.get(host.host) ?? new Set(), verbose) }] : [];
    });
    if (entries.length > 0) blocks.push(stepBlock(entries, result.preflight));
  }
  const hostList = result.hosts.map((h) => h.host).join(', ');
  const lines = [
    `plan for ${result.cluster}: preflight passed on every host (${hostList}); the deploy would start, and change the hosts with ${allCommands(result).filter((c) => c.change).length} commands:`,
    ...legend(result, blocks.flat(), verbose),
  ];
  for (const w of result.warnings) lines.push(...proseLines('', 'warning: ', w));
  if (result.takesOverFrom)
    lines.push(...proseLines('', 'takes the hosts over from: ', result.takesOverFrom.join(', ')));
  // Said only when there is something to roll back to (--json always carries it): a first deploy's plan stays short.
  if (result.onFailure?.rollbackTo !== undefined)
    lines.push(...proseLines('', 'if it fails after the first stop: ', result.onFailure.why));
  if (result.secrets.length > 0)
    lines.push(
      ...proseLines(
        '',
        'secrets (sent on stdin, never on a command line): ',
        result.secrets.map((s) => `${s.field} = (${s.source})`).join(', '),
      ),
    );
  for (const b of blocks) lines.push('', ...b);
  return lines.join('\n');
}
