// Command-line flags the way cobra (docker) and getopt (systemctl) read them: `--name value`, `--name=value`,
// clustered short flags (`-dit`), `-eK=V`, and `--` ending the flags. Unknown flags are errors, never ignored.

export interface FlagSpec {
  short?: string;
  /** Takes a value (`--name N`); otherwise a boolean switch. */
  value?: boolean;
}

export type FlagSpecs = Record<string, FlagSpec>;

export class FlagError extends Error {
  constructor(
    readonly kind: 'unknown' | 'missing-value',
    /** As the user wrote it: `--foo`, or the letter of a short flag. */
    readonly flag: string,
    /** The whole short-flag cluster (`-xyz`) when the flag was a short one. */
    readonly cluster?: string,
  ) {
    super(
      kind === 'unknown'
        ? cluster
          ? `unknown shorthand flag: '${flag}' in ${cluster}`
          : `unknown flag: ${flag}`
        : cluster
          ? `flag needs an argument: '${flag}' in ${cluster}`
          : `flag needs an argument: ${flag}`,
    );
  }
}

export class ParsedFlags {
  constructor(
    private readonly values: Map<string, string[]>,
    readonly positionals: string[],
  ) {}

  /** Every value given for a repeatable flag, in order. */
  all(name: string): string[] {
    return this.values.get(name) ?? [];
  }

  /** The last value given, as cobra keeps for non-repeatable flags. */
  get(name: string): string | undefined {
    return this.all(name).at(-1);
  }

  has(name: string): boolean {
    const v = this.get(name);
    return v !== undefined && v !== 'false';
  }
}

/**
 * `interspersed: false` stops at the first positional (docker run IMAGE ARGS…, docker exec NAME CMD…),
 * so flags meant for the command are left to it.
 */
export function parseFlags(args: string[], specs: FlagSpecs, interspersed: boolean): ParsedFlags {
  const values = new Map<string, string[]>();
  const positionals: string[] = [];
  const byShort = new Map<string, string>();
  for (const [name, spec] of Object.entries(specs)) if (spec.short) byShort.set(spec.short, name);
  const put = (name: string, value: string) => values.set(name, [...(values.get(name) ?? []), value]);

  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
      const spec = specs[name];
      if (!spec) throw new FlagError('unknown', `--${name}`);
      if (eq >= 0) put(name, arg.slice(eq + 1));
      else if (!spec.value) put(name, 'true');
      else {
        const next = args[i + 1];
        if (next === undefined) throw new FlagError('missing-value', `--${name}`);
        put(name, next);
        i++;
      }
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      for (let j = 1; j < arg.length; j++) {
        const letter = arg.charAt(j);
        const name = byShort.get(letter);
        if (name === undefined) throw new FlagError('unknown', letter, arg);
        if (!specs[name]?.value) {
          put(name, 'true');
          continue;
        }
        const rest = arg.slice(j + 1);
        if (rest !== '') put(name, rest.startsWith('=') ? rest.slice(1) : rest);
        else {
          const next = args[i + 1];
          if (next === undefined) throw new FlagError('missing-value', letter, arg);
          put(name, next);
          i++;
        }
        break;
      }
      continue;
    }
    if (!interspersed) {
      positionals.push(...args.slice(i));
      break;
    }
    positionals.push(arg);
  }
  return new ParsedFlags(values, positionals);
}
