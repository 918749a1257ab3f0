// The parts of docker's output formatting that scripts depend on: a subset of Go templates for --format,
// the tabwriter layout of `table` formats, and go-units' human durations ("Up 5 minutes").

export class TemplateError extends Error {}

type Token = { kind: 'string'; text: string } | { kind: 'word'; text: string };

function tokenize(action: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < action.length) {
    const c = action.charAt(i);
    if (c === ' ' || c === '\t') {
      i++;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      while (j < action.length && action.charAt(j) !== '"') {
        if (action.charAt(j) === '\\' && j + 1 < action.length) j++;
        text += action.charAt(j);
        j++;
      }
      if (j >= action.length) throw new TemplateError(`unterminated quoted string in {{${action}}}`);
      tokens.push({ kind: 'string', text });
      i = j + 1;
    } else {
      let j = i;
      while (j < action.length && !' \t"'.includes(action.charAt(j))) j++;
      tokens.push({ kind: 'word', text: action.slice(i, j) });
      i = j;
    }
  }
  return tokens;
}

const missing = Symbol('missing');

function lookup(data: unknown, path: string): unknown {
  if (path === '.') return data;
  let cur: unknown = data;
  for (const key of path.slice(1).split('.')) {
    if (cur === null || typeof cur !== 'object') return missing;
    const rec = cur as Record<string, unknown>;
    if (!(key in rec)) return missing;
    cur = rec[key];
  }
  return cur;
}

function argValue(tok: Token, data: unknown): unknown {
  if (tok.kind === 'string') return tok.text;
  if (tok.text.startsWith('.')) return lookup(data, tok.text);
  if (/^-?\d+$/.test(tok.text)) return Number(tok.text);
  if (tok.text === 'true' || tok.text === 'false') return tok.text === 'true';
  throw new TemplateError(`function "${tok.text}" not defined`);
}

/** Go's %v: maps as map[k:v] with sorted keys, slices as [a b]. */
export function goValue(v: unknown): string {
  if (v === missing) return '<no value>';
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goValue).join(' ')}]`;
  if (typeof v === 'object') {
    const rec = v as Record<string, unknown>;
    return `map[${Object.keys(rec)
      .sort()
      .map((k) => `${k}:${goValue(rec[k])}`)
      .join(' ')}]`;
  }
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return '';
}

function evalAction(action: string, data: unknown): string {
  const tokens = tokenize(action.trim());
  const [head, ...rest] = tokens;
  if (!head) throw new TemplateError('missing value for command');
  if (head.kind === 'word' && !head.text.startsWith('.')) {
    const args = rest.map((t) => argValue(t, data));
    switch (head.text) {
      case 'json':
        return JSON.stringify(args[0] === missing ? null : (args[0] ?? null));
      case 'index': {
        let cur = args[0];
        for (const key of args.slice(1)) {
          if (cur === null || typeof cur !== 'object') return '<no value>';
          const rec = cur as Record<string, unknown>;
          cur = Object.hasOwn(rec, String(key)) ? rec[String(key)] : missing;
        }
        return goValue(cur);
      }
      case 'join':
        return Array.isArray(args[0]) ? args[0].map(goValue).join(goValue(args[1] ?? '')) : goValue(args[0]);
      case 'upper':
        return goValue(args[0]).toUpperCase();
      case 'lower':
        return goValue(args[0]).toLowerCase();
      case 'len':
        return String(
          Array.isArray(args[0])
            ? args[0].length
            : typeof args[0] === 'object' && args[0]
              ? Object.keys(args[0]).length
              : goValue(args[0]).length,
        );
      case 'println':
        return `${args.map(goValue).join(' ')}\n`;
      default:
        throw new TemplateError(`function "${head.text}" not defined`);
    }
  }
  const value = argValue(head, data);
  // Methods with arguments, such as `{{.Label "com.example"}}` in `docker ps`.
  if (typeof value === 'function') {
    const fn = value as (...a: unknown[]) => unknown;
    return goValue(fn(...rest.map((t) => argValue(t, data))));
  }
  if (rest.length > 0) throw new TemplateError(`can't give argument to non-function ${head.text}`);
  return goValue(value);
}

/** Renders one template against one value (no trailing newline). */
export function renderTemplate(template: string, data: unknown): string {
  let out = '';
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{{', i);
    if (open < 0) {
      out += template.slice(i);
      break;
    }
    out += template.slice(i, open);
    const close = template.indexOf('}}', open + 2);
    if (close < 0) throw new TemplateError('unclosed action');
    let action = template.slice(open + 2, close);
    // Go's trim markers {{- and -}}.
    if (action.startsWith('-')) {
      action = action.slice(1);
      out = out.trimEnd();
    }
    let trimAfter = false;
    if (action.endsWith('-')) {
      action = action.slice(0, -1);
      trimAfter = true;
    }
    out += evalAction(action, data);
    i = close + 2;
    if (trimAfter) while (i < template.length && /\s/.test(template.charAt(i))) i++;
  }
  return out;
}

/**
 * Go's text/tabwriter as docker configures it (minwidth 10, padding 3): every tab-terminated cell is padded
 * to its column's width; the last cell of a line is left as is.
 */
export function tabwrite(lines: string[]): string {
  const rows = lines.map((l) => l.split('\t'));
  const widths: number[] = [];
  for (const cells of rows) {
    cells.slice(0, -1).forEach((cell, c) => {
      widths[c] = Math.max(widths[c] ?? 10, [...cell].length + 3);
    });
  }
  return rows
    .map((cells) =>
      cells.map((cell, c) => (c < cells.length - 1 ? padEndRunes(cell, widths[c] ?? 10) : cell)).join(''),
    )
    .map((l) => `${l}\n`)
    .join('');
}

function padEndRunes(s: string, width: number): string {
  return s + ' '.repeat(Math.max(0, width - [...s].length));
}

/**
 * Renders `--format` for a list the way docker's formatter does: `table …` adds a header line and aligns
 * columns; `\t` and `\n` written literally on the command line become real tabs and newlines.
 */
export function renderList<T>(format: string, rows: T[], headers: Record<string, string>): string {
  let fmt = format.trim();
  const isTable = fmt.startsWith('table');
  if (isTable) fmt = fmt.slice('table'.length).trim();
  fmt = fmt.replaceAll('\\t', '\t').replaceAll('\\n', '\n');
  if (!isTable) return rows.map((r) => `${renderTemplate(fmt, r)}\n`).join('');
  const headerData = Object.fromEntries(
    Object.entries(headers).map(([k, v]) => [k, k === 'Label' ? () => 'LABEL' : v]),
  );
  const lines = [renderTemplate(fmt, headerData), ...rows.map((r) => renderTemplate(fmt, r))];
  return tabwrite(lines.flatMap((l) => l.split('\n')));
}

/** go-units HumanDuration, used in "Up 5 minutes" and "3 hours ago". */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 1) return 'Less than a second';
  if (seconds === 1) return '1 second';
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.floor(seconds / 60);
  if (minutes === 1) return 'About a minute';
  if (minutes < 60) return `${minutes} minutes`;
  const hours = Math.round(ms / 3_600_000);
  if (hours === 1) return 'About an hour';
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.floor(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.floor(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24 / 30)} months`;
  return `${Math.floor(ms / 3_600_000 / 24 / 365)} years`;
}

/** Go's time.Time String() in UTC: "2026-12-02 10:04:53 +0000 UTC". */
export function goTimeString(iso: string): string {
  const d = new Date(iso);
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC`;
}

/** Docker's byte sizes (decimal units with three significant digits): "19.8GB". */
export function humanSize(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${Number(v.toPrecision(3))}${units[u]}`;
}
