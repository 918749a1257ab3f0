// The one place where values become shell text. Every command the executor runs is a RemoteCommand,
// and the only ways to build one are the `sh` tagged template (which quotes every interpolated value)
// and `raw`, which marks a fragment as trusted code written in this repository.
//
// Assumptions and limits, stated once here so callers need not guess:
// - The remote login shell is POSIX-compatible (sh, dash, bash, zsh, ksh). sshd runs commands through
//   `$SHELL -c`; fish and csh treat backslashes or `!` inside single quotes differently.
// - Quoting protects the shell, not the program: a value such as `--help` or `-rf` still reaches the
//   program as one argument and may be read as an option. Put `--` before positional values where the
//   tool supports it (`rm -f -- ${path}`), and validate values upstream (the config schema) where it does not.
// - NUL cannot be carried in an argv string, so values containing it are rejected rather than truncated.

declare const remoteCommandBrand: unique symbol;
declare const rawShellBrand: unique symbol;

/** Shell text that is safe to hand to the executor: built only by `sh`. */
export interface RemoteCommand {
  readonly text: string;
  readonly [remoteCommandBrand]: true;
}

/** A trusted literal fragment: a constant written in our code, never input from a spec or a host. */
export interface RawShell {
  readonly rawText: string;
  readonly [rawShellBrand]: true;
}

export type ShellValue = string | number;
export type ShellInterpolation = ShellValue | readonly ShellValue[] | RawShell | RemoteCommand;

const built = new WeakSet<object>();
const trusted = new WeakSet<object>();

// Characters that no POSIX shell (nor zsh or bash in its default modes) treats specially anywhere in a
// word. `=` is left out so a value can never turn a command word into an assignment; `~` for tilde
// expansion; everything non-ASCII so a locale cannot change how the word is split.
const bareWord = /^[A-Za-z0-9_./:@%+,-]+$/;

export function shellQuote(value: ShellValue): string {
  if (typeof value !== 'string' && typeof value !== 'number')
    throw new TypeError(`shellQuote: expected a string or number, got ${typeof value}`);
  if (typeof value === 'number' && !Number.isFinite(value))
    throw new TypeError(`shellQuote: refusing to quote non-finite number ${value}`);
  const text = String(value);
  if (text.includes('\0')) throw new TypeError('shellQuote: a shell argument cannot contain a NUL byte');
  if (text === '') return "''";
  if (bareWord.test(text)) return text;
  // Inside single quotes nothing is special; a quote itself closes, adds an escaped quote, and reopens.
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

export function raw(text: string): RawShell {
  if (typeof text !== 'string') throw new TypeError('raw: expected a string');
  const fragment = Object.freeze({ rawText: text }) as RawShell;
  trusted.add(fragment);
  return fragment;
}

export function isRemoteCommand(value: unknown): value is RemoteCommand {
  return typeof value === 'object' && value !== null && built.has(value);
}

function isRawShell(value: unknown): value is RawShell {
  return typeof value === 'object' && value !== null && trusted.has(value);
}

function render(value: ShellInterpolation): string {
  if (isRawShell(value)) return value.rawText;
  // A command built by `sh` is already safe shell text, so it composes verbatim: sh`timeout 5 ${inner}`.
  // To pass a command as one argument instead (sh -c …), interpolate its `.text`.
  if (isRemoteCommand(value)) return value.text;
  if (Array.isArray(value)) return (value as readonly ShellValue[]).map((v) => shellQuote(v)).join(' ');
  if (typeof value === 'string' || typeof value === 'number') return shellQuote(value);
  throw new TypeError(
    'sh: interpolated values must be strings, numbers, arrays of them, raw() or sh`` commands',
  );
}

export function sh(strings: TemplateStringsArray, ...values: ShellInterpolation[]): RemoteCommand {
  let text = strings[0] ?? '';
  values.forEach((value, i) => {
    text += render(value) + (strings[i + 1] ?? '');
  });
  const command = Object.freeze({ text }) as RemoteCommand;
  built.add(command);
  return command;
}
