// Long lines of `liftoff plan`'s text, broken so none passes the plan's width and nothing is cut. A command is
// broken the way a person would write it in a script: at a space outside any quote, before a flag or after a
// `;`/`|`, with a trailing ` \` so the lines, joined by the shell, are the exact command. Prose (a check's
// detail, an intent) is broken at spaces.

/** The widest line the plan prints by default. */
export const planWidth = 200;

/** How good a break before position i is: 0 none (inside quotes, or not a space), else higher is better. */
function breakScores(text: string): Uint8Array {
  const scores = new Uint8Array(text.length);
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === "'") {
      if (c === "'") quote = undefined;
      continue;
    }
    if (c === '\\') {
      // An escaped character (a quote, a space) is part of its word: never a break, never a quote.
      i++;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      continue;
    }
    if (c !== ' ' || i === 0) continue;
    const before = text.slice(Math.max(0, i - 2), i);
    const after = text.slice(i + 1, i + 3);
    if (/[;|]$|&&$/.test(before)) scores[i] = 3;
    else if (/^-[-A-Za-z]/.test(after) || after.startsWith('|') || after.startsWith('>')) scores[i] = 2;
    else scores[i] = 1;
  }
  return scores;
}

/**
 * The command as lines: the first at most `width` characters, each further one (the caller indents it two more) at
 * most `width - 2`, the continuation ` \` included. A word longer than that stays whole on its line: never cut.
 */
export function wrapCommand(text: string, width: number): string[] {
  const scores = breakScores(text);
  const lines: string[] = [];
  let start = 0;
  for (;;) {
    const fits = lines.length === 0 ? width : width - 2;
    if (text.length - start <= fits) break;
    // Room for the segment and its ` \`.
    const limit = start + fits - 2;
    let best = -1;
    let bestScore = 0;
    // The best break in the last third of the room (the latest of the best), else the latest at all.
    for (let i = Math.min(limit, text.length - 1); i > start; i--) {
      const s = scores[i] ?? 0;
      if (s === 0) continue;
      if (best === -1) [best, bestScore] = [i, s];
      if (i < start + ((fits - 2) * 2) / 3) break;
      if (s > bestScore) [best, bestScore] = [i, s];
    }
    // No break within the room: the first one after it, so the word stays whole.
    if (best === -1) best = scores.findIndex((s, i) => i > limit && s > 0);
    if (best === -1) break;
    lines.push(`${text.slice(start, best)} \\`);
    start = best + 1;
  }
  lines.push(text.slice(start));
  return lines;
}

/** Prose as lines of at most `width` characters, broken at spaces (a longer word stays whole). */
export function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines;
}
