// Which found services `liftoff init` keeps as companions: every one (--yes, or no terminal to ask at), none
// (--no-companions: cleanup only stops them), or each as the user answers. Declined ones stay in cleanup and are
// written as comments, so the spec still says what ran there.
import type { CompanionChoices, CompanionProposal } from './companions.js';

/** Asks one question on the terminal and resolves with the answer line. */
export type AskLine = (question: string) => Promise<string>;

export type CompanionsMode = { keep: 'all' } | { keep: 'none' } | { keep: 'ask'; ask: AskLine };

/** The question for one found service: what was read, and what keeping it means. Printable text only. */
export function companionQuestion(p: CompanionProposal): string {
  const c = p.companion;
  const shown = (text: string) => text.replace(/[^\x20-\x7e]/gu, '?');
  return [
    `found ${p.source.kind} ${shown(p.source.name)} on ${c.host} running:`,
    `  ${shown(p.commandLine)}`,
    `keep it as companion ${c.name} (port ${c.port}, ${c.memoryMiB} MiB${p.memory.placeholder ? ' PLACEHOLDER' : ''}, probe ${c.probe}), or only stop it? [K/s] `,
  ].join('\n');
}

/** Whether an answer keeps the companion: empty (the default), k/keep/y/yes; s/stop/n/no stops; else undefined. */
export function keepAnswer(answer: string): boolean | undefined {
  const a = answer.trim().toLowerCase();
  if (['', 'k', 'keep', 'y', 'yes'].includes(a)) return true;
  if (['s', 'stop', 'n', 'no'].includes(a)) return false;
  return undefined;
}

export async function confirmCompanions(
  choices: CompanionChoices,
  mode: CompanionsMode,
): Promise<CompanionChoices> {
  if (mode.keep === 'all') return choices;
  const kept: CompanionProposal[] = [];
  const declined: CompanionProposal[] = [];
  for (const p of choices.proposals) {
    let keep = mode.keep === 'none' ? false : undefined;
    // An answer neither way is asked once more, then read as the default.
    for (let tries = 0; keep === undefined && mode.keep === 'ask'; tries++)
      keep = keepAnswer(await mode.ask(companionQuestion(p))) ?? (tries >= 1 ? true : undefined);
    (keep ? kept : declined).push(p);
  }
  return {
    proposals: kept,
    notOffered: [
      ...choices.notOffered,
      ...declined.map((p) => ({
        source: p.source,
        commandLine: p.commandLine,
        reason: 'only stopped, as init was told (not kept as a companion)',
      })),
    ],
  };
}
