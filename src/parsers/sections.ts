// Reads the output of a sectionScript (src/host-commands/sections.ts): what a host printed, so hostile. One pass
// over the bytes, line by line with indexOf (linear, no pattern ever runs on a section's content here); each
// section's content is kept up to its bound and the rest is only counted. A section that is missing, cut or
// malformed is reported as such, for its own check to judge: it never spoils another section.
// The framing is defined here, where it is read; the script that writes it imports it.
/** Marker lines: never `|`-prefixed, so no output of a read can forge one. */
export const sectionMarkers = {
  begin: '=liftoff-section ',
  end: '=liftoff-end ',
  rest: '=liftoff-rest ',
} as const;

/** The line stderrAfter() (src/host-commands/sections.ts) puts between a read's stdout and its stderr. */
export const stderrSeparator = '=liftoff-stderr';

export interface ParsedSection {
  /** The read's exit status; undefined when its end marker is missing or unreadable. */
  exitCode?: number;
  /** The read's output (stdout and stderr), decoded as UTF-8, at most its bound. */
  text: string;
  /** The read printed more than its bound (on the host or on the way): `text` is its start. */
  cut: boolean;
  /** The section did not end as the script ends it (no end marker, a line our framing never makes). */
  malformed?: string;
}

export interface ParsedSections {
  sections: Map<string, ParsedSection>;
  rest?: {
    name: string;
    /** The marker line's fields: numbers, each a safe integer. Empty when the line held anything else. */
    fields: number[];
    /** The marker line was not digits and single spaces. */
    badHeader: boolean;
    /** Every byte after the marker line, as sent. */
    bytes: Buffer;
  };
}

const newline = 0x0a;
const newlineByte = Buffer.from('\n');
const pipe = 0x7c;
/** A marker line is short; a longer unprefixed line is garbage, and is not decoded. */
const maxMarkerBytes = 128;

interface Open {
  name: string;
  chunks: Buffer[];
  kept: number;
  cut: boolean;
  /** The previous line was empty: the output's last byte was a newline, if an end marker follows. */
  pendingBlank: boolean;
  lines: number;
  malformed?: string;
}

/**
 * Splits `out` into its sections. `bounds` gives each section's byte bound (what its read's maxBytes was);
 * a section not named there is kept up to `defaultBound`.
 */
export function parseSections(
  out: Buffer,
  bounds: Readonly<Record<string, number>>,
  defaultBound = 4096,
): ParsedSections {
  const sections = new Map<string, ParsedSection>();
  let open: Open | undefined;
  const close = (exitCode: number | undefined, malformed?: string) => {
    if (!open) return;
    // An empty line right before the end marker: the output ended with a newline (printf's own one ended a
    // last line that had none). With no line at all, the output was empty.
    if (open.pendingBlank && open.lines > 0) append(newlineByte);
    const text = Buffer.concat(open.chunks, open.kept).toString('utf8');
    const why = malformed ?? open.malformed;
    sections.set(open.name, {
      ...(exitCode !== undefined ? { exitCode } : {}),
      text,
      cut: open.cut,
      ...(why !== undefined ? { malformed: why } : {}),
    });
    open = undefined;
  };
  const append = (bytes: Buffer) => {
    // A full section only counts what comes: nothing more is copied.
    if (!open || open.cut) return;
    const room = (bounds[open.name] ?? defaultBound) - open.kept;
    if (bytes.length > room) open.cut = true;
    const take = Math.min(room, bytes.length);
    if (take > 0) {
      open.chunks.push(Buffer.from(bytes.subarray(0, take)));
      open.kept += take;
    }
  };

  let pos = 0;
  while (pos < out.length) {
    let end = out.indexOf(newline, pos);
    if (end < 0) end = out.length;
    const lineLength = end - pos;
    if (out[pos] === pipe) {
      if (open) {
        if (open.pendingBlank) {
          open.malformed ??= 'an empty line inside the output';
          open.pendingBlank = false;
        }
        if (open.lines > 0) append(newlineByte);
        append(out.subarray(pos + 1, end));
        open.lines++;
      }
      pos = end + 1;
      continue;
    }
    if (lineLength === 0) {
      if (open) {
        if (open.pendingBlank) open.malformed ??= 'an empty line inside the output';
        open.pendingBlank = true;
      }
      pos = end + 1;
      continue;
    }
    const line = lineLength <= maxMarkerBytes ? out.toString('latin1', pos, end) : '';
    pos = end + 1;
    if (line.startsWith(sectionMarkers.begin)) {
      close(undefined, 'no end marker');
      const name = line.slice(sectionMarkers.begin.length);
      open = { name, chunks: [], kept: 0, cut: false, pendingBlank: false, lines: 0 };
    } else if (line.startsWith(sectionMarkers.end)) {
      const [name, status] = line.slice(sectionMarkers.end.length).split(' ');
      if (!open || open.name !== name) {
        close(undefined, 'no end marker');
        continue;
      }
      const code = /^\d{1,3}$/.test(status ?? '') ? Number(status) : undefined;
      close(
        code,
        code === undefined ? `an unreadable exit status ${JSON.stringify(status ?? '')}` : undefined,
      );
    } else if (line.startsWith(sectionMarkers.rest)) {
      close(undefined, 'no end marker');
      const [name = '', ...fields] = line.slice(sectionMarkers.rest.length).split(' ');
      const numbers = fields.map((f) => (/^\d{1,15}$/.test(f) ? Number(f) : NaN));
      const badHeader = numbers.some((n) => !Number.isSafeInteger(n));
      return {
        sections,
        rest: { name, fields: badHeader ? [] : numbers, badHeader, bytes: out.subarray(pos) },
      };
    } else if (open) {
      open.malformed ??= 'a line the framing never makes';
    }
  }
  close(undefined, 'no end marker');
  return { sections };
}

/** A section's problem for a message, or undefined when it is whole: missing, cut, or malformed. */
export function sectionProblem(s: ParsedSection | undefined, name: string): string | undefined {
  if (!s) return `no ${name} section in the host's output`;
  if (s.malformed) return `the ${name} section is malformed (${s.malformed})`;
  if (s.exitCode === undefined) return `the ${name} section has no exit status`;
  return undefined;
}

/**
 * A stderrAfter() read's output split back: stdout, and what came after the first separator line. Without the
 * separator (the section was cut before it) everything is stdout, and stderr is empty.
 */
export function splitStderr(text: string): { stdout: string; stderr: string } {
  const at = text.indexOf(`\n${stderrSeparator}\n`);
  if (at < 0) return { stdout: text, stderr: '' };
  return { stdout: text.slice(0, at), stderr: text.slice(at + stderrSeparator.length + 2) };
}
